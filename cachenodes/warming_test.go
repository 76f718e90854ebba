package cachenodes

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func warmSpec() SlotMapSpec {
	until := time.Date(2026, 11, 29, 13, 2, 0, 0, time.UTC)
	return SlotMapSpec{
		Pool: "p", Generation: 3,
		Slots:   []Node{{ID: "mc-7", Addr: "10.0.0.7:11211", AZ: "a"}, {ID: "mc-1", Addr: "10.0.0.1:11211", AZ: "b"}},
		Spares:  []Node{{ID: "mc-9", Addr: "10.0.0.9:11211", AZ: "b"}},
		Warming: []*Warming{{NodeID: "mc-2", Addr: "10.0.1.2:11211", Until: until}, nil},
	}
}

func TestWarmingRoundTrip(t *testing.T) {
	m, err := NewSlotMap(warmSpec())
	if err != nil {
		t.Fatal(err)
	}
	if !m.AnyWarming() || m.Warming(1) != nil || m.Warming(0).NodeID != "mc-2" || m.WarmingOf("mc-2") != 0 || m.WarmingOf("mc-7") != -1 {
		t.Fatalf("warming accessors wrong: %+v %+v", m.Warming(0), m.Warming(1))
	}
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"warming":{"node_id":"mc-2","addr":"10.0.1.2:11211","until":"2026-11-29T13:02:00Z"}`) {
		t.Fatalf("document lacks the warming object: %s", data)
	}
	if strings.Count(string(data), "warming") != 1 {
		t.Fatalf("a slot that does not warm shows a warming field: %s", data)
	}
	back, err := ParseSlotMap(data)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Equal(m) {
		t.Fatalf("round trip changed the map: %s", data)
	}
	plain := warmSpec()
	plain.Warming = nil
	p, _ := NewSlotMap(plain)
	if p.Equal(m) || p.AnyWarming() {
		t.Fatal("a map without warming equals one with it")
	}
}

func TestWarmingRefusesBadSources(t *testing.T) {
	cases := map[string]func(*SlotMapSpec){
		"holder":    func(s *SlotMapSpec) { s.Warming[0].NodeID = "mc-1" },
		"spare":     func(s *SlotMapSpec) { s.Warming[0].NodeID = "mc-9" },
		"twice":     func(s *SlotMapSpec) { c := *s.Warming[0]; s.Warming[1] = &c },
		"no addr":   func(s *SlotMapSpec) { s.Warming[0].Addr = "" },
		"no until":  func(s *SlotMapSpec) { s.Warming[0].Until = time.Time{} },
		"vacant":    func(s *SlotMapSpec) { s.Slots[0] = Node{} },
		"too short": func(s *SlotMapSpec) { s.Warming = s.Warming[:1] },
	}
	for name, mutate := range cases {
		s := warmSpec()
		mutate(&s)
		if _, err := NewSlotMap(s); !errors.Is(err, ErrInvalidSlotMap) {
			t.Errorf("%s: NewSlotMap accepted it (err %v)", name, err)
		}
	}
}

// TestWarmsAt: a warming counts until its until, not at or after it, and a
// map without one never warms.
func TestWarmsAt(t *testing.T) {
	spec := warmSpec()
	until := spec.Warming[0].Until
	m, err := NewSlotMap(spec)
	if err != nil {
		t.Fatal(err)
	}
	if !m.WarmsAt(until.Add(-time.Nanosecond)) || m.WarmsAt(until) || m.WarmsAt(until.Add(time.Minute)) {
		t.Errorf("WarmsAt just before, at and after until: %v %v %v; want true false false",
			m.WarmsAt(until.Add(-time.Nanosecond)), m.WarmsAt(until), m.WarmsAt(until.Add(time.Minute)))
	}
	spec.Warming = nil
	plain, err := NewSlotMap(spec)
	if err != nil {
		t.Fatal(err)
	}
	if plain.WarmsAt(until.Add(-time.Hour)) {
		t.Error("a map without warming warms")
	}
}
