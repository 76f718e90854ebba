package slotplan

import (
	"slices"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
)

// TestNoSpareSaysWhy: when no node can take a slot, the refusal says what
// each node without a slot is instead, counted, and what would help (an
// operator reads it in the answer and the events): undraining a zone only
// when one is drained.
func TestNoSpareSaysWhy(t *testing.T) {
	owing := vUp("d1")
	owing.OwesFlush = true
	nodes := []NodeView{vUp("a1"), vUp("b1"), vUnreachable("c1"), vAway("c2"), vMaint("c3"), vNotPresent("c4"), owing, vFlapping("d2"), vFlapping("d3")}
	for _, tc := range []struct {
		name    string
		drained map[string]bool
		want    string
	}{
		{"a zone drained", map[string]bool{"az-b": true},
			"no spare can take slot 0 of node a1: every node holds a slot, is in a drained zone (1 node), does not answer (1 node), " +
				"is absent from Consul or in maintenance (3 nodes), owes a flush (1 node) or is held back by flap damping (2 nodes); " +
				"add a memcached to the service, or undrain a zone"},
		{"no zone drained", nil,
			"no spare can take slot 0 of node a1: every node holds a slot, does not answer (1 node), " +
				"is absent from Consul or in maintenance (3 nodes), owes a flush (1 node) or is held back by flap damping (2 nodes); " +
				"add a memcached to the service"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Pool: assignPool, NumSlots: 1, Prev: slotMapOf(t, 1, []string{"a1"}, nil), Nodes: nodes,
				Budget: 1, Now: assignNow, Replace: "a1", Drained: tc.drained}
			if tc.drained == nil {
				in.Nodes = append(slices.Clone(nodes[:1]), nodes[2:]...)
			}
			if got := Decide(in).Refused; got != tc.want {
				t.Errorf("refused:\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// TestNoSpareWhileWarming: a node that is a warm source counts as one,
// and waiting for the warming is what would help as well; a slot holder
// counts as one whatever else it is (a1 does not answer, inside its hold).
func TestNoSpareWhileWarming(t *testing.T) {
	spec := cachenodes.SlotMapSpec{Pool: assignPool, Generation: 2, UpdatedAt: assignPrevAt,
		Slots:   []cachenodes.Node{cacheNode("a1"), cacheNode("b1")},
		Warming: []*cachenodes.Warming{{NodeID: "c1", Addr: cacheNode("c1").Addr, Until: assignNow.Add(time.Minute)}, nil}}
	prev, err := cachenodes.NewSlotMap(spec)
	if err != nil {
		t.Fatal(err)
	}
	in := Input{Pool: assignPool, NumSlots: 2, Prev: prev, Nodes: []NodeView{vUnreachable("a1"), vUp("b1"), vUp("c1"), vUnreachable("d1")},
		Budget: 1, WarmFor: time.Minute, Now: assignNow, Replace: "b1"}
	want := "no spare can take slot 1 of node b1: every node holds a slot, is a warm source (1 node) or does not answer (1 node); " +
		"add a memcached to the service, or wait until the warming ends"
	if got := Decide(in).Refused; got != want {
		t.Errorf("refused:\n%s\nwant\n%s", got, want)
	}
}

// TestWarmSourceMovedAddressIsNoSpare: a warm source that Consul now
// lists at another address still serves there, so a spare registered at
// that address is the same memcached and takes no slot (placing and
// flushing it would wipe the warm source).
func TestWarmSourceMovedAddressIsNoSpare(t *testing.T) {
	spec := cachenodes.SlotMapSpec{Pool: assignPool, Generation: 2, UpdatedAt: assignPrevAt,
		Slots:   []cachenodes.Node{cacheNode("a1"), cacheNode("b1")},
		Warming: []*cachenodes.Warming{{NodeID: "c1", Addr: cacheNode("c1").Addr, Until: assignNow.Add(time.Minute)}, nil}}
	prev, err := cachenodes.NewSlotMap(spec)
	if err != nil {
		t.Fatal(err)
	}
	in := Input{Pool: assignPool, NumSlots: 2, Prev: prev,
		Nodes:  []NodeView{vUp("a1"), vUp("b1"), vMoved("c1", "shared.cache:11211"), vMoved("d1", "shared.cache:11211")},
		Budget: 1, WarmFor: time.Minute, Now: assignNow, Replace: "b1"}
	plan := Decide(in)
	for _, p := range plan.Placements {
		if p.Node.ID == "d1" {
			t.Fatalf("d1, at the address the warm source c1 now serves, placed into slot %d", p.Slot)
		}
	}
	if plan.Refused == "" {
		t.Errorf("the replace of b1 was not refused with no other spare")
	}
}
