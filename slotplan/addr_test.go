package slotplan

import (
	"testing"

	"github.com/mcrib/mcrib/cachenodes"
)

// TestSpareAtAHoldersAddressIsNeverPlaced: a memcached re-registered under
// a new service ID (the same address as a slot holder) must not be flushed
// and placed into a second slot, nor listed as a spare; of spares sharing
// an address, only the lowest ID may be placed or listed (runAssign's
// checks hold the spares list to that).
func TestSpareAtAHoldersAddressIsNeverPlaced(t *testing.T) {
	first, m := runAssign(t, Input{Pool: assignPool, NumSlots: 3, Nodes: []NodeView{vUp("a1"), vUp("b1")}, Budget: 2}, nil)
	if len(first.Placements) != 2 {
		t.Fatalf("first fill placed %d nodes, want 2", len(first.Placements))
	}
	twin := vUp("a9")
	twin.Addr = m.Slot(0).Addr // the holder of slot 0, under a new ID
	x1, x2 := vUp("c1"), vUp("c2")
	x2.Addr = x1.Addr
	plan, next := runAssign(t, Input{Pool: assignPool, NumSlots: 3, Prev: m, Nodes: []NodeView{vUp("a1"), twin, vUp("b1"), x1, x2}, Budget: 2}, nil)
	if len(plan.Placements) != 1 || plan.Placements[0].Node.ID != "c1" {
		t.Fatalf("placements %+v, want only c1 into the vacant slot", plan.Placements)
	}
	seen := map[string]int{}
	for i, n := range next.Slots() {
		if n.Addr == "" {
			continue
		}
		if j, dup := seen[n.Addr]; dup {
			t.Fatalf("slots %d and %d hold the same address %s", j, i, n.Addr)
		}
		seen[n.Addr] = i
	}
}

func TestSlotMapRefusesAnAddressInTwoSlots(t *testing.T) {
	_, err := cachenodes.NewSlotMap(cachenodes.SlotMapSpec{Pool: "p", Slots: []cachenodes.Node{
		{ID: "a", Addr: "10.0.0.1:11211"}, {ID: "b", Addr: "10.0.0.1:11211"},
	}})
	if err == nil {
		t.Fatal("a map with one address in two slots was accepted")
	}
}

// TestSpareOwingAFlushIsNotPlaced: a node that owes a flush is no ready
// spare (nothing copies from it, and its flush is the pool's to carry out).
func TestSpareOwingAFlushIsNotPlaced(t *testing.T) {
	owes := vUp("c9")
	owes.OwesFlush = true
	plan, _ := runAssign(t, Input{Pool: assignPool, NumSlots: 1, Prev: slotMapOf(t, 2, []string{""}, nil), Nodes: []NodeView{owes}, Budget: 1}, nil)
	if len(plan.Placements) != 0 {
		t.Fatalf("a node owing a flush was placed: %+v", plan.Placements)
	}
}
