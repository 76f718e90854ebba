package cachenodes

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

var announceAt = time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)

// announceSpec is two slots held by mc-1 and mc-2, mc-7 announced to slot
// 0, and mc-9 a spare.
func announceSpec() SlotMapSpec {
	return SlotMapSpec{
		Pool: "p", Generation: 4, Revision: 9, UpdatedAt: announceAt,
		Slots:    []Node{{ID: "mc-1", Addr: "10.0.0.1:11211", AZ: "a"}, {ID: "mc-2", Addr: "10.0.0.2:11211", AZ: "b"}},
		Spares:   []Node{{ID: "mc-9", Addr: "10.0.0.9:11211", AZ: "b"}},
		Incoming: []*Incoming{{NodeID: "mc-7", Addr: "10.0.0.7:11211", ServesAt: announceAt.Add(AnnounceLead), Until: announceAt.Add(AnnounceLead + 30*time.Minute)}, nil},
	}
}

func TestIncomingRoundTrip(t *testing.T) {
	m, err := NewSlotMap(announceSpec())
	if err != nil {
		t.Fatal(err)
	}
	if !m.AnyIncoming() || m.Incoming(1) != nil || m.Incoming(0).NodeID != "mc-7" || m.IncomingOf("mc-7") != 0 || m.IncomingOf("mc-1") != -1 || m.Revision() != 9 {
		t.Fatalf("incoming accessors wrong: %+v %+v rev %d", m.Incoming(0), m.Incoming(1), m.Revision())
	}
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"revision":9`, `"incoming":{"node_id":"mc-7","addr":"10.0.0.7:11211","serves_at":"2026-12-04T10:00:12Z","until":"2026-12-04T10:30:12Z"}`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("document lacks %s: %s", want, data)
		}
	}
	if strings.Count(string(data), "incoming") != 1 {
		t.Errorf("a slot without an incoming node shows the field: %s", data)
	}
	back, err := ParseSlotMap(data)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Equal(m) {
		t.Fatalf("round trip differs: %s", data)
	}
	// Equal sees the revision and the incoming node.
	spec := announceSpec()
	spec.Revision++
	if o, _ := NewSlotMap(spec); o.Equal(m) {
		t.Error("maps of two revisions are Equal")
	}
	spec = announceSpec()
	spec.Incoming[0].ServesAt = spec.Incoming[0].ServesAt.Add(time.Second)
	if o, _ := NewSlotMap(spec); o.Equal(m) {
		t.Error("maps announcing at two instants are Equal")
	}
}

func TestEndedWarming(t *testing.T) {
	spec := warmSpec()
	until := spec.Warming[0].Until
	ended := until.Add(-time.Minute)
	spec.Warming[0].EndedAt = ended
	m, err := NewSlotMap(spec)
	if err != nil {
		t.Fatal(err)
	}
	w := m.Warming(0)
	if !w.Ended() || !w.ReadsUntil().Equal(ended) || !w.WritesUntil().Equal(ended.Add(WarmWriteGrace)) {
		t.Fatalf("ended warming: ended %v reads until %v writes until %v", w.Ended(), w.ReadsUntil(), w.WritesUntil())
	}
	if m.WarmsAt(ended.Add(-time.Second)) {
		t.Error("an ended warming still warms before its ended_at")
	}
	data, _ := json.Marshal(m)
	if !strings.Contains(string(data), `"ended_at":"2026-11-29T13:01:00Z"`) {
		t.Errorf("document lacks ended_at: %s", data)
	}
	back, err := ParseSlotMap(data)
	if err != nil || !back.Equal(m) {
		t.Fatalf("round trip: %v", err)
	}
	plain := warmSpec()
	pm, _ := NewSlotMap(plain)
	if pm.Equal(m) {
		t.Error("an ended warming is Equal to the same warming not ended")
	}
	if pw := pm.Warming(0); pw.Ended() || !pw.ReadsUntil().Equal(until) || !pw.WritesUntil().Equal(until.Add(WarmWriteGrace)) {
		t.Errorf("warming not ended: ended %v reads until %v writes until %v", pw.Ended(), pw.ReadsUntil(), pw.WritesUntil())
	}
	if data, _ := json.Marshal(pm); strings.Contains(string(data), "ended_at") {
		t.Errorf("a warming not ended shows ended_at: %s", data)
	}
}

func TestIncomingValidation(t *testing.T) {
	in := func(id, addr string) *Incoming {
		return &Incoming{NodeID: id, Addr: addr, ServesAt: announceAt.Add(AnnounceLead), Until: announceAt.Add(AnnounceLead)}
	}
	tests := []struct {
		name   string
		change func(*SlotMapSpec)
		want   string // "" when valid
	}{
		{"as announced", func(*SlotMapSpec) {}, ""},
		{"a vacant slot may have one", func(s *SlotMapSpec) { s.Slots[0] = Node{} }, ""},
		{"cold: until equals serves_at", func(s *SlotMapSpec) { s.Incoming[0].Until = s.Incoming[0].ServesAt }, ""},
		{"wrong length", func(s *SlotMapSpec) { s.Incoming = s.Incoming[:1] }, "incoming entries"},
		{"no address", func(s *SlotMapSpec) { s.Incoming[0].Addr = "" }, "no node ID or address"},
		{"no serves_at", func(s *SlotMapSpec) { s.Incoming[0].ServesAt = time.Time{} }, "no serves_at or until"},
		{"until before serves_at", func(s *SlotMapSpec) { s.Incoming[0].Until = announceAt }, "until before its serves_at"},
		{"a holder", func(s *SlotMapSpec) { s.Incoming[0] = in("mc-2", "10.0.0.22:11211") }, "also holds slot 1"},
		{"a holder's address", func(s *SlotMapSpec) { s.Incoming[0] = in("mc-8", "10.0.0.2:11211") }, "held by slot 1"},
		{"a spare", func(s *SlotMapSpec) { s.Incoming[0] = in("mc-9", "10.0.0.9:11211") }, "spare \"mc-9\" is also the node announced"},
		{"two slots", func(s *SlotMapSpec) { s.Incoming[1] = in("mc-7", "10.0.0.7:11211") }, "announced to slot 0 and to slot 1"},
		{"a slot that warms", func(s *SlotMapSpec) {
			s.Warming = []*Warming{{NodeID: "mc-5", Addr: "10.0.0.5:11211", Until: announceAt}, nil}
		}, "while it warms"},
		{"a warm source", func(s *SlotMapSpec) {
			s.Warming = []*Warming{nil, {NodeID: "mc-7", Addr: "10.0.0.7:11211", Until: announceAt}}
		}, "also the warm source of slot 1"},
		{"a warm source's address", func(s *SlotMapSpec) {
			s.Warming = []*Warming{nil, {NodeID: "mc-5", Addr: "10.0.0.7:11211", Until: announceAt}}
		}, "the warm source of slot 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := announceSpec()
			tt.change(&spec)
			_, err := NewSlotMap(spec)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !errors.Is(err, ErrInvalidSlotMap) || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("err = %v, want ErrInvalidSlotMap with %q", err, tt.want)
			}
		})
	}
}

// TestTwinsCarryIncoming: the doubling copies slot s's incoming node to
// its twin and raises the revision; a twin may also have its own (a
// split announced) while slot s has none, but never another than slot s's.
func TestTwinsCarryIncoming(t *testing.T) {
	m, err := NewSlotMap(announceSpec())
	if err != nil {
		t.Fatal(err)
	}
	d, err := m.Double(announceAt.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if !d.Incoming(2).Equal(m.Incoming(0)) || d.Incoming(3) != nil || d.Revision() != m.Revision()+1 || d.Generation() != m.Generation()+1 {
		t.Fatalf("doubled: twin incoming %+v, revision %d, generation %d", d.Incoming(2), d.Revision(), d.Generation())
	}
	if d.IncomingOf("mc-7") != 0 {
		t.Errorf("IncomingOf the node slot 0 and its twin carry = %d, want 0", d.IncomingOf("mc-7"))
	}
	spec := d.Spec()
	spec.Incoming[2] = nil // slot 0 announced, its twin not
	if _, err := NewSlotMap(spec); err == nil || !strings.Contains(err.Error(), "does not carry the incoming node of slot 0") {
		t.Errorf("a twin without slot s's incoming node: err = %v", err)
	}
	spec = d.Spec()
	spec.Incoming[3] = &Incoming{NodeID: "mc-9", Addr: "10.0.0.9:11211", ServesAt: announceAt, Until: announceAt}
	spec.Spares = nil
	if _, err := NewSlotMap(spec); err != nil {
		t.Errorf("a split announced on twin 3 refused: %v", err)
	}
	spec = d.Spec()
	spec.Incoming[2] = &Incoming{NodeID: "mc-9", Addr: "10.0.0.9:11211", ServesAt: announceAt, Until: announceAt}
	spec.Spares = nil
	if _, err := NewSlotMap(spec); err == nil || !strings.Contains(err.Error(), "does not carry the incoming node of slot 0") {
		t.Errorf("a twin announcing another node than slot s's: err = %v", err)
	}
}

func TestMapOrder(t *testing.T) {
	mk := func(gen, rev uint64, spare string) *SlotMap {
		spec := SlotMapSpec{Pool: "p", Generation: gen, Revision: rev, Slots: []Node{{ID: "mc-1", Addr: "10.0.0.1:1"}}}
		if spare != "" {
			spec.Spares = []Node{{ID: spare, Addr: "10.0.0.9:1"}}
		}
		m, err := NewSlotMap(spec)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	tests := []struct {
		name      string
		cur, next *SlotMap
		take      bool
		err       bool
	}{
		{"no map yet", nil, mk(1, 1, ""), true, false},
		{"a higher generation", mk(1, 5, ""), mk(2, 1, ""), true, false},
		{"a lower generation", mk(2, 1, ""), mk(1, 9, ""), false, true},
		{"a higher revision", mk(2, 1, ""), mk(2, 2, "mc-9"), true, false},
		{"a lower revision", mk(2, 3, ""), mk(2, 2, ""), false, true},
		{"the same map", mk(2, 3, ""), mk(2, 3, ""), false, false},
		{"an older mcrib's same generation, another document", mk(2, 0, ""), mk(2, 0, "mc-9"), true, false},
		{"an older mcrib's same document", mk(2, 0, "mc-9"), mk(2, 0, "mc-9"), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			take, err := MapOrder(tt.cur, tt.next)
			if take != tt.take || (err != nil) != tt.err || (err != nil && !errors.Is(err, ErrOlderGeneration)) {
				t.Fatalf("MapOrder = %v, %v; want take %v, error %v", take, err, tt.take, tt.err)
			}
			if cerr := CheckGeneration(tt.cur, tt.next); (cerr != nil) != tt.err {
				t.Fatalf("CheckGeneration = %v, want error %v", cerr, tt.err)
			}
		})
	}
}

func TestTombstone(t *testing.T) {
	it := TombstoneItem("k")
	if !IsTombstone(it) || it.Key != "k" || it.Expiration != 15 || string(it.Value) != "mcrib-tombstone" {
		t.Fatalf("TombstoneItem = %+v", it)
	}
	it.Flags = 1
	if IsTombstone(it) {
		t.Error("a value with flags 1 read as a tombstone")
	}
	if IsTombstone(nil) {
		t.Error("nil read as a tombstone")
	}
}
