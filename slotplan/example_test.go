package slotplan_test

import (
	"fmt"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/slotplan"
)

// Two passes of the pure assignment: mc-2 was absent and unreachable for
// the whole hold, so its slot goes to the spare in its zone (mc-4, not the
// lower mc-3). The first pass announces it (the loop flushes mc-4, the map
// names it the slot's incoming node, same generation); the pass 12 s
// later serves it, and the generation rises by one. mc-1 is absent from
// Consul but still answers: it keeps its slot.
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
	now := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
	announced, _ := slotplan.Build(in, plan, plan.Placements, now)
	ni := announced.Incoming(1)
	fmt.Println("generation:", announced.Generation(), "slot 1 incoming:", ni.NodeID, "serves at", ni.ServesAt.Format("15:04:05"))

	in.Prev, in.Now = announced, ni.ServesAt
	in.Incoming = make([]slotplan.IncomingView, 2)
	in.Incoming[1] = slotplan.IncomingView{ServesAt: ni.ServesAt, Judged: true, Own: true, Reason: mcribapi.EvictionHoldExpired}
	plan = slotplan.Decide(in)
	next, _ := slotplan.Build(in, plan, nil, ni.ServesAt)
	fmt.Println("generation:", next.Generation(), "slots:", next.Slot(0).ID, next.Slot(1).ID, "spares:", len(next.Spares()))
	// Output:
	// evict: node mc-2 in slot 1 was absent from Consul and unreachable for the whole hold
	// place: mc-4 into slot 1 (after flushing it)
	// generation: 7 slot 1 incoming: mc-4 serves at 13:00:12
	// generation: 8 slots: mc-1 mc-4 spares: 1
}
