package cachenodes

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

var (
	mc1 = Node{ID: "mc-1", Addr: "127.0.0.1:11211", AZ: "a"}
	mc2 = Node{ID: "mc-2", Addr: "127.0.0.1:11212", AZ: "b"}
	mc3 = Node{ID: "mc-3", Addr: "127.0.0.1:11213", AZ: ""}
	mc9 = Node{ID: "mc-9", Addr: "127.0.0.1:11219", AZ: "b"}
)

// mustSlotMap builds a map from spec or fails the test.
func mustSlotMap(t testing.TB, spec SlotMapSpec) *SlotMap {
	t.Helper()
	m, err := NewSlotMap(spec)
	if err != nil {
		t.Fatalf("NewSlotMap(%+v): %v", spec, err)
	}
	return m
}

func TestNewSlotMapValidation(t *testing.T) {
	tests := []struct {
		name    string
		spec    SlotMapSpec
		wantErr string // empty: valid
	}{
		{name: "valid with vacant slot and spare", spec: SlotMapSpec{Slots: []Node{mc1, {}, mc2}, Spares: []Node{mc9}}},
		{name: "all vacant", spec: SlotMapSpec{Slots: []Node{{}, {}}}},
		{name: "no slots", spec: SlotMapSpec{Spares: []Node{mc9}}, wantErr: "no slots"},
		{name: "nil slots", spec: SlotMapSpec{}, wantErr: "no slots"},
		{name: "node twice in slots", spec: SlotMapSpec{Slots: []Node{mc1, mc2, mc1}}, wantErr: `"mc-1" appears in slot 2 and in slot 0`},
		{name: "same ID other address", spec: SlotMapSpec{Slots: []Node{mc1, {ID: "mc-1", Addr: "10.0.0.1:1"}}}, wantErr: `"mc-1" appears`},
		{name: "node in slot and spares", spec: SlotMapSpec{Slots: []Node{mc1, mc2}, Spares: []Node{mc2}}, wantErr: `spare "mc-2" also appears in slot 1`},
		{name: "spare twice", spec: SlotMapSpec{Slots: []Node{mc1}, Spares: []Node{mc9, mc9}}, wantErr: `spare "mc-9" also appears in the spares`},
		{name: "vacant slot with address", spec: SlotMapSpec{Slots: []Node{mc1, {Addr: "127.0.0.1:1"}}}, wantErr: "vacant slot 1 has an address"},
		{name: "vacant slot with zone", spec: SlotMapSpec{Slots: []Node{{AZ: "a"}}}, wantErr: "vacant slot 0"},
		{name: "slot node without address", spec: SlotMapSpec{Slots: []Node{mc1, {ID: "mc-4", AZ: "a"}}}, wantErr: `node "mc-4" in slot 1 has no address`},
		{name: "vacant spare", spec: SlotMapSpec{Slots: []Node{mc1}, Spares: []Node{{Addr: "127.0.0.1:1"}}}, wantErr: "a spare has no node ID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := NewSlotMap(tt.spec)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("NewSlotMap: %v, want a valid map", err)
				}
				if m.NumSlots() != len(tt.spec.Slots) {
					t.Errorf("NumSlots() = %d, want %d", m.NumSlots(), len(tt.spec.Slots))
				}
				return
			}
			if err == nil {
				t.Fatalf("NewSlotMap succeeded, want an error containing %q", tt.wantErr)
			}
			if !errors.Is(err, ErrInvalidSlotMap) {
				t.Errorf("error %v does not wrap ErrInvalidSlotMap", err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestSlotMapCopiesSpec(t *testing.T) {
	spec := SlotMapSpec{Pool: "p", Slots: []Node{mc1, mc2}, Spares: []Node{mc9}}
	m := mustSlotMap(t, spec)
	spec.Slots[0] = mc3
	spec.Spares[0] = mc3
	if got := m.Slot(0); got != mc1 {
		t.Errorf("Slot(0) after changing the spec = %+v, want %+v", got, mc1)
	}
	if got := m.Spares(); got[0] != mc9 {
		t.Errorf("Spares() after changing the spec = %+v, want [%+v]", got, mc9)
	}
	slots := m.Slots()
	slots[1] = mc3
	if got := m.Slot(1); got != mc2 {
		t.Errorf("Slot(1) after changing Slots() = %+v, want %+v", got, mc2)
	}
	if got := m.SlotOf("mc-2"); got != 1 {
		t.Errorf("SlotOf(mc-2) = %d, want 1", got)
	}
	if got := m.SlotOf("mc-9"); got != -1 {
		t.Errorf("SlotOf(spare mc-9) = %d, want -1", got)
	}
	if got := m.SlotOf(""); got != -1 {
		t.Errorf("SlotOf(\"\") = %d, want -1", got)
	}
}

func TestSlotMapMarshalJSONShape(t *testing.T) {
	at := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		spec SlotMapSpec
		want string
	}{
		{
			name: "contract example",
			spec: SlotMapSpec{Pool: "default", Generation: 7, Revision: 31, UpdatedAt: at, Slots: []Node{mc1, {}}, Spares: []Node{mc9}},
			want: `{"pool":"default","num_slots":2,"generation":7,"revision":31,"updated_at":"2026-11-29T13:00:00Z",` +
				`"slots":[{"slot":0,"node_id":"mc-1","addr":"127.0.0.1:11211","az":"a"},{"slot":1,"node_id":"","addr":"","az":""}],` +
				`"spares":[{"node_id":"mc-9","addr":"127.0.0.1:11219","az":"b"}]}`,
		},
		{
			name: "no spares is an empty list",
			spec: SlotMapSpec{Pool: "p", Generation: 1, UpdatedAt: at, Slots: []Node{mc3}},
			want: `{"pool":"p","num_slots":1,"generation":1,"revision":0,"updated_at":"2026-11-29T13:00:00Z",` +
				`"slots":[{"slot":0,"node_id":"mc-3","addr":"127.0.0.1:11213","az":""}],"spares":[]}`,
		},
		{
			name: "updated_at in another zone is written in UTC",
			spec: SlotMapSpec{Pool: "p", UpdatedAt: at.In(time.FixedZone("X", 3600)), Slots: []Node{{}}, Spares: []Node{}},
			want: `{"pool":"p","num_slots":1,"generation":0,"revision":0,"updated_at":"2026-11-29T13:00:00Z",` +
				`"slots":[{"slot":0,"node_id":"","addr":"","az":""}],"spares":[]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(mustSlotMap(t, tt.spec))
			if err != nil {
				t.Fatalf("json.Marshal: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("json.Marshal =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestSlotMapJSONRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
	specs := []SlotMapSpec{
		{Pool: "default", Generation: 7, UpdatedAt: at, Slots: []Node{mc1, {}, mc2, mc3}, Spares: []Node{mc9}},
		{Pool: "p", Generation: 0, Slots: []Node{{}}},
		{Pool: "", Generation: 1 << 40, UpdatedAt: at, Slots: []Node{mc2, mc1}},
	}
	for _, spec := range specs {
		m := mustSlotMap(t, spec)
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("json.Marshal: %v", err)
		}
		back, err := ParseSlotMap(data)
		if err != nil {
			t.Fatalf("ParseSlotMap(%s): %v", data, err)
		}
		if !back.Equal(m) {
			t.Errorf("ParseSlotMap(Marshal(m)) = %+v, want %+v", back.Spec(), m.Spec())
		}
		if !back.UpdatedAt().Equal(m.UpdatedAt()) {
			t.Errorf("UpdatedAt after round trip = %v, want %v", back.UpdatedAt(), m.UpdatedAt())
		}
	}
}

func TestParseSlotMapRefuses(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		wantErr string
	}{
		{name: "not JSON", doc: `{"pool":`, wantErr: "invalid slot map"},
		{name: "num_slots larger", doc: `{"num_slots":3,"slots":[{"slot":0},{"slot":1}]}`, wantErr: "num_slots is 3 but 2 slots"},
		{name: "num_slots smaller", doc: `{"num_slots":1,"slots":[{"slot":0},{"slot":1}]}`, wantErr: "num_slots is 1 but 2 slots"},
		{name: "out of order", doc: `{"num_slots":2,"slots":[{"slot":1},{"slot":0}]}`, wantErr: "entry 0 names slot 1"},
		{name: "slot missing", doc: `{"num_slots":2,"slots":[{"slot":0},{"slot":2}]}`, wantErr: "entry 1 names slot 2"},
		{name: "no slots", doc: `{"num_slots":0,"slots":[]}`, wantErr: "no slots"},
		{name: "duplicate node", doc: `{"num_slots":2,"slots":[{"slot":0,"node_id":"a","addr":"h:1"},{"slot":1,"node_id":"a","addr":"h:1"}]}`, wantErr: `"a" appears`},
		{name: "spare in a slot", doc: `{"num_slots":1,"slots":[{"slot":0,"node_id":"a","addr":"h:1"}],"spares":[{"node_id":"a","addr":"h:1"}]}`, wantErr: `spare "a"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSlotMap([]byte(tt.doc))
			if err == nil {
				t.Fatalf("ParseSlotMap(%s) succeeded, want an error containing %q", tt.doc, tt.wantErr)
			}
			if !errors.Is(err, ErrInvalidSlotMap) {
				t.Errorf("error %v does not wrap ErrInvalidSlotMap", err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestParseSlotMapNullSpares(t *testing.T) {
	m, err := ParseSlotMap([]byte(`{"pool":"p","num_slots":1,"generation":2,"slots":[{"slot":0,"node_id":"","addr":"","az":""}],"spares":null}`))
	if err != nil {
		t.Fatalf("ParseSlotMap: %v", err)
	}
	if len(m.Spares()) != 0 || m.Generation() != 2 || m.Pool() != "p" || !m.Slot(0).IsZero() {
		t.Errorf("parsed %+v", m.Spec())
	}
}

func TestSameSlotsAndEqual(t *testing.T) {
	base := SlotMapSpec{Pool: "p", Generation: 3, Slots: []Node{mc1, mc2, {}}, Spares: []Node{mc9}}
	with := func(change func(*SlotMapSpec)) *SlotMap {
		spec := base
		spec.Slots = append([]Node(nil), base.Slots...)
		spec.Spares = append([]Node(nil), base.Spares...)
		change(&spec)
		return mustSlotMap(t, spec)
	}
	m := mustSlotMap(t, base)
	tests := []struct {
		name      string
		other     *SlotMap
		sameSlots bool
		equal     bool
	}{
		{name: "identical", other: with(func(*SlotMapSpec) {}), sameSlots: true, equal: true},
		{name: "only updated_at differs", other: with(func(s *SlotMapSpec) { s.UpdatedAt = time.Unix(99, 0) }), sameSlots: true, equal: true},
		{name: "generation differs", other: with(func(s *SlotMapSpec) { s.Generation = 4 }), sameSlots: true, equal: false},
		{name: "pool differs", other: with(func(s *SlotMapSpec) { s.Pool = "q" }), sameSlots: true, equal: false},
		{name: "address of a slot node differs", other: with(func(s *SlotMapSpec) { s.Slots[0].Addr = "127.0.0.1:1" }), sameSlots: true, equal: false},
		{name: "zone differs", other: with(func(s *SlotMapSpec) { s.Slots[1].AZ = "z" }), sameSlots: true, equal: false},
		{name: "spares differ", other: with(func(s *SlotMapSpec) { s.Spares = nil }), sameSlots: true, equal: false},
		{name: "vacant slot filled", other: with(func(s *SlotMapSpec) { s.Slots[2] = mc3 }), sameSlots: false, equal: false},
		{name: "slot emptied", other: with(func(s *SlotMapSpec) { s.Slots[0] = Node{} }), sameSlots: false, equal: false},
		{name: "two nodes swapped", other: with(func(s *SlotMapSpec) { s.Slots[0], s.Slots[1] = s.Slots[1], s.Slots[0] }), sameSlots: false, equal: false},
		{name: "more slots", other: with(func(s *SlotMapSpec) { s.Slots = append(s.Slots, Node{}) }), sameSlots: false, equal: false},
		{name: "nil", other: nil, sameSlots: false, equal: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := m.SameSlots(tt.other); got != tt.sameSlots {
				t.Errorf("m.SameSlots(other) = %v, want %v", got, tt.sameSlots)
			}
			if tt.other != nil {
				if got := tt.other.SameSlots(m); got != tt.sameSlots {
					t.Errorf("other.SameSlots(m) = %v, want %v", got, tt.sameSlots)
				}
			}
			if got := m.Equal(tt.other); got != tt.equal {
				t.Errorf("m.Equal(other) = %v, want %v", got, tt.equal)
			}
		})
	}
	var nilMap *SlotMap
	if !nilMap.SameSlots(nil) || !nilMap.Equal(nil) {
		t.Error("two nil maps should be the same and equal")
	}
}
