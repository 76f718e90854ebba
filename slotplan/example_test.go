package slotplan_test

import (
	"fmt"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/slotplan"
)

// One pass of the pure assignment: mc-2 was absent and unreachable for the
// whole hold, so its slot goes to the spare in its zone (mc-4, not the
// lower mc-3), and the generation rises by one. mc-1 is absent from Consul
// but still answers: it keeps its slot.
func ExampleDecide() {
	node := func(id, az string) cachenodes.Node {
		return cachenodes.Node{ID: id, Addr: "10.0.0." + id[len(id)-1:] + ":11211", AZ: az}
	}
	prev, _ := cachenodes.NewSlotMap(cachenodes.SlotMapSpec{
		Pool: "default", Generation: 7,
		Slots:  []cachenodes.Node{node("mc-1", "a"), node("mc-2", "b")},
		Spares: []cachenodes.Node{node("mc-3", "a"), node("mc-4", "b")},
	})
	in := slotplan.Input{
		Pool: "default", NumSlots: 2, Prev: prev, Budget: 2,
		Nodes: []slotplan.NodeView{
			{Node: node("mc-1", "a"), Reachable: true},
			{Node: node("mc-2", "b"), Due: true},
			{Node: node("mc-3", "a"), Listed: true, Present: true, Reachable: true},
			{Node: node("mc-4", "b"), Listed: true, Present: true, Reachable: true},
		},
	}
	plan := slotplan.Decide(in)
	for _, ev := range plan.Evictions {
		fmt.Println("evict:", ev.Why)
	}
	for _, p := range plan.Placements {
		fmt.Printf("place: %s into slot %d (after flushing it)\n", p.Node.ID, p.Slot)
	}
	next, _ := slotplan.Build(in, plan, plan.Placements, time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC))
	fmt.Println("generation:", next.Generation(), "slots:", next.Slot(0).ID, next.Slot(1).ID, "spares:", len(next.Spares()))
	// Output:
	// evict: node mc-2 in slot 1 was absent from Consul and unreachable for the whole hold
	// place: mc-4 into slot 1 (after flushing it)
	// generation: 8 slots: mc-1 mc-4 spares: 1
}
