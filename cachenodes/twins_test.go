package cachenodes

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// sixteen returns a 16-slot map with vacant slots 3 and 9, slot 5 warming
// from a spare that gave it away, and two spares.
func sixteen(t testing.TB) *SlotMap {
	t.Helper()
	slots := make([]Node, 16)
	for i := range slots {
		if i == 3 || i == 9 {
			continue
		}
		slots[i] = Node{ID: fmt.Sprintf("mc-%02d", i), Addr: fmt.Sprintf("10.0.0.%d:11211", i+1), AZ: string(rune('a' + i%3))}
	}
	warming := make([]*Warming, 16)
	warming[5] = &Warming{NodeID: "mc-old", Addr: "10.0.1.1:11211", Until: time.Date(2026, 12, 1, 13, 2, 0, 0, time.UTC)}
	return mustSlotMap(t, SlotMapSpec{Pool: "p", Generation: 7, Slots: slots, Warming: warming,
		Spares: []Node{{ID: "sp-1", Addr: "10.0.2.1:11211", AZ: "a"}, {ID: "sp-2", Addr: "10.0.2.2:11211", AZ: "b"}}})
}

func TestDoubleMakesTwins(t *testing.T) {
	m := sixteen(t)
	at := time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC)
	d, err := m.Double(at)
	if err != nil {
		t.Fatalf("Double: %v", err)
	}
	if d.NumSlots() != 32 || d.ResizedFrom() != 16 || d.Generation() != 8 || !d.UpdatedAt().Equal(at) || d.NumTwins() != 16 {
		t.Fatalf("doubled: %d slots, resized_from %d, generation %d, updated %v, %d twins; want 32, 16, 8, %v, 16",
			d.NumSlots(), d.ResizedFrom(), d.Generation(), d.UpdatedAt(), d.NumTwins(), at)
	}
	for s := range 16 {
		if d.Slot(s) != m.Slot(s) || d.Slot(s+16) != m.Slot(s) {
			t.Errorf("slot %d and %d name %v and %v, want %v at both", s, s+16, d.Slot(s), d.Slot(s+16), m.Slot(s))
		}
		if d.IsTwin(s) || !d.IsTwin(s+16) || d.TwinOf(s+16) != s || d.TwinOf(s) != -1 || d.TwinSlot(s) != s+16 {
			t.Errorf("slot %d: IsTwin %v/%v, TwinOf %d, TwinSlot %d", s, d.IsTwin(s), d.IsTwin(s+16), d.TwinOf(s+16), d.TwinSlot(s))
		}
		if !d.Warming(s + 16).Equal(m.Warming(s)) {
			t.Errorf("twin %d warms from %v, slot %d from %v", s+16, d.Warming(s+16), s, m.Warming(s))
		}
		if id := m.Slot(s).ID; id != "" && d.SlotOf(id) != s {
			t.Errorf("SlotOf(%s) = %d, want %d (slot s, not its twin)", id, d.SlotOf(id), s)
		}
	}
	if d.WarmingOf("mc-old") != 5 {
		t.Errorf("WarmingOf(mc-old) = %d, want 5", d.WarmingOf("mc-old"))
	}
	if d.SameSlots(m) || d.Equal(m) {
		t.Error("the doubled map compares equal to the original")
	}
	if _, err := d.Double(at); !errors.Is(err, ErrCannotDouble) || !strings.Contains(err.Error(), "16 twins") {
		t.Errorf("doubling while twins remain: %v, want ErrCannotDouble naming 16 twins", err)
	}
	big := mustSlotMap(t, SlotMapSpec{Slots: make([]Node, MaxSlots)})
	if _, err := big.Double(at); !errors.Is(err, ErrCannotDouble) || !strings.Contains(err.Error(), "8192") {
		t.Errorf("doubling 4096 slots: %v, want ErrCannotDouble naming 8192", err)
	}
}

// TestDoubleKeepsEveryKey checks that the first write of a resize sends
// each of 100,000 keys to the memcached it reached before, through the Go
// selector, and that a vacant slot's keys stay vacant.
func TestDoubleKeepsEveryKey(t *testing.T) {
	m := sixteen(t)
	d, err := m.Double(time.Now())
	if err != nil {
		t.Fatalf("Double: %v", err)
	}
	before, err := NewSelector(m)
	if err != nil {
		t.Fatal(err)
	}
	after, err := NewSelector(d)
	if err != nil {
		t.Fatal(err)
	}
	moved, onTwin := 0, 0
	for i := range 100_000 {
		key := fmt.Sprintf("user:%d", i)
		a1, e1 := before.PickServer(key)
		a2, e2 := after.PickServer(key)
		if (e1 == nil) != (e2 == nil) || (e1 == nil && a1.String() != a2.String()) {
			moved++
			if moved < 5 {
				t.Errorf("key %q: %v, %v before the doubling; %v, %v after", key, a1, e1, a2, e2)
			}
		}
		if KeySlot(key, 32) >= 16 {
			onTwin++
		}
	}
	if moved > 0 {
		t.Fatalf("%d of 100000 keys reach another memcached after the doubling", moved)
	}
	if onTwin < 45_000 {
		t.Errorf("only %d keys fall in a twin slot; the test does not cover the twins", onTwin)
	}
}

func TestTwinsRoundTrip(t *testing.T) {
	d, err := sixteen(t).Double(time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["resized_from"] != 16.0 {
		t.Errorf("resized_from = %v, want 16", doc["resized_from"])
	}
	slots := doc["slots"].([]any)
	if got := slots[20].(map[string]any)["twin_of"]; got != 4.0 {
		t.Errorf("slot 20 twin_of = %v, want 4", got)
	}
	if _, ok := slots[4].(map[string]any)["twin_of"]; ok {
		t.Error("slot 4 carries twin_of")
	}
	back, err := ParseSlotMap(data)
	if err != nil {
		t.Fatalf("ParseSlotMap: %v", err)
	}
	if !back.Equal(d) {
		t.Errorf("round trip differs:\n%s", data)
	}
	// A pool never resized writes neither field.
	plain, _ := json.Marshal(sixteen(t))
	if strings.Contains(string(plain), "resized_from") || strings.Contains(string(plain), "twin_of") {
		t.Errorf("a map never resized writes resize fields: %s", plain)
	}
}

func TestTwinsRefused(t *testing.T) {
	a := Node{ID: "a", Addr: "10.0.0.1:1", AZ: "x"}
	b := Node{ID: "b", Addr: "10.0.0.2:1", AZ: "y"}
	c := Node{ID: "c", Addr: "10.0.0.3:1", AZ: "x"}
	until := time.Date(2026, 12, 1, 13, 2, 0, 0, time.UTC)
	wa := &Warming{NodeID: "a", Addr: a.Addr, Until: until}
	wz := &Warming{NodeID: "z", Addr: "10.0.0.9:1", Until: until}
	tests := []struct {
		name    string
		spec    SlotMapSpec
		wantErr string
	}{
		{name: "twins", spec: SlotMapSpec{ResizedFrom: 2, Slots: []Node{a, b, a, b}, Twins: []bool{false, false, true, true}}},
		{name: "vacant twin", spec: SlotMapSpec{ResizedFrom: 2, Slots: []Node{a, {}, a, {}}, Twins: []bool{false, false, true, true}}},
		{name: "split", spec: SlotMapSpec{ResizedFrom: 2, Slots: []Node{a, b, c, b}, Twins: []bool{false, false, false, true}}},
		{name: "split warming from slot s", spec: SlotMapSpec{ResizedFrom: 2, Slots: []Node{a, b, c, b}, Twins: []bool{false, false, false, true},
			Warming: []*Warming{nil, nil, wa, nil}}},
		{name: "twin follows a warm move", spec: SlotMapSpec{ResizedFrom: 2, Slots: []Node{a, b, a, b}, Twins: []bool{false, false, true, true},
			Warming: []*Warming{wz, nil, wz, nil}}},
		{name: "resized_from not half", spec: SlotMapSpec{ResizedFrom: 1, Slots: []Node{a, b, c, {}}}, wantErr: "resized_from is 1 with 4 slots"},
		{name: "twin below resized_from", spec: SlotMapSpec{ResizedFrom: 2, Slots: []Node{a, b, a, b}, Twins: []bool{true, false, true, true}},
			wantErr: "slot 0 is marked a twin"},
		{name: "twin without resize", spec: SlotMapSpec{Slots: []Node{a, a}, Twins: []bool{false, true}}, wantErr: "slot 1 is marked a twin"},
		{name: "twin of another node", spec: SlotMapSpec{ResizedFrom: 2, Slots: []Node{a, b, b, a}, Twins: []bool{false, false, true, true}},
			wantErr: `twin slot 2 names node "b", not the node "a" of slot 0`},
		{name: "twin at another address", spec: SlotMapSpec{ResizedFrom: 1, Slots: []Node{a, {ID: "a", Addr: "10.0.0.8:1", AZ: "x"}}, Twins: []bool{false, true}},
			wantErr: "twin slot 1"},
		{name: "same node in a split slot", spec: SlotMapSpec{ResizedFrom: 2, Slots: []Node{a, b, a, b}, Twins: []bool{false, false, false, true}},
			wantErr: `"a" appears in slot 2 and in slot 0`},
		{name: "twin without slot s's warming", spec: SlotMapSpec{ResizedFrom: 2, Slots: []Node{a, b, a, b}, Twins: []bool{false, false, true, true},
			Warming: []*Warming{wz, nil, nil, nil}}, wantErr: "twin slot 2 does not carry the warming of slot 0"},
		{name: "warm source holds another slot", spec: SlotMapSpec{ResizedFrom: 2, Slots: []Node{a, b, c, b}, Twins: []bool{false, false, false, true},
			Warming: []*Warming{nil, nil, {NodeID: "b", Addr: b.Addr, Until: until}, nil}}, wantErr: `warm source "b" of slot 2 also holds slot 1`},
		{name: "twins of the wrong length", spec: SlotMapSpec{ResizedFrom: 2, Slots: []Node{a, b, a, b}, Twins: []bool{false, true}},
			wantErr: "2 twin entries for 4 slots"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := NewSlotMap(tt.spec)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("NewSlotMap: %v", err)
				}
				// What is valid survives the document.
				data, _ := json.Marshal(m)
				back, err := ParseSlotMap(data)
				if err != nil || !back.Equal(m) {
					t.Fatalf("round trip: %v\n%s", err, data)
				}
				return
			}
			if !errors.Is(err, ErrInvalidSlotMap) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("NewSlotMap: %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestParseTwinOfMustMatch(t *testing.T) {
	doc := `{"pool":"p","num_slots":4,"resized_from":2,"generation":2,"updated_at":"2026-12-01T13:00:00Z",
	  "slots":[{"slot":0,"node_id":"a","addr":"10.0.0.1:1","az":""},{"slot":1,"node_id":"","addr":"","az":""},
	           {"slot":2,"node_id":"a","addr":"10.0.0.1:1","az":"","twin_of":1},{"slot":3,"node_id":"","addr":"","az":""}],"spares":[]}`
	if _, err := ParseSlotMap([]byte(doc)); !errors.Is(err, ErrInvalidSlotMap) || !strings.Contains(err.Error(), "slot 2 is a twin of slot 1") {
		t.Errorf("ParseSlotMap with a wrong twin_of: %v", err)
	}
	good := strings.Replace(doc, `"twin_of":1`, `"twin_of":0`, 1)
	m, err := ParseSlotMap([]byte(good))
	if err != nil || m.TwinOf(2) != 0 || m.NumTwins() != 1 {
		t.Errorf("ParseSlotMap: %v", err)
	}
}
