package controlloop

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
)

// NodeView is what the loop knows of one node at the moment of a decision.
type NodeView struct {
	cachenodes.Node
	// Listed is true when the last accepted Consul answer lists the node.
	Listed bool
	// Present is true when Consul lists the node with every check passing.
	Present bool
	// Maintenance is true when the node is in Consul maintenance mode.
	Maintenance bool
	// Reachable is true when mcrib's last probe of the node succeeded (or
	// the node was not probed yet: nothing was observed against it).
	Reachable bool
	// Due is true when the hold has run out: absent and unreachable, both
	// for the whole hold.
	Due bool
	// Suppressed is true while flap damping keeps the node from promotion.
	Suppressed bool
}

// eligibleSpare reports whether a node without a slot may be placed.
func (n NodeView) eligibleSpare() bool {
	return n.Listed && n.Present && !n.Maintenance && n.Reachable && !n.Suppressed
}

// listedSpare reports whether a node without a slot belongs in the spares
// list of the slot map document.
func (n NodeView) listedSpare() bool {
	return n.Listed && n.Present && !n.Maintenance && n.Reachable
}

// Input is everything Decide needs; it holds no I/O and no clock.
type Input struct {
	Pool     string
	NumSlots int
	// Prev is the current map; nil for a new pool (the first fill places
	// without flushing).
	Prev *cachenodes.SlotMap
	// Nodes lists every node the loop knows: slot holders and the nodes of
	// the last accepted Consul answer. A node ID appears at most once.
	Nodes []NodeView
	// Frozen stops every change of a slot's node (operator or automatic).
	Frozen bool
	// Budget is how many slot holders may be replaced now (the ceiling).
	Budget int
}

// Eviction takes a node out of its slot.
type Eviction struct {
	Slot int
	Node cachenodes.Node
	// Why is one sentence for the log and the metrics label.
	Why string
	// Reason is the metrics label: "hold_expired" or "maintenance".
	Reason string
}

// Placement puts a spare into a vacant slot.
type Placement struct {
	Slot int
	Node cachenodes.Node
}

// Plan is the difference Decide wants between the previous and the next map.
type Plan struct {
	Evictions  []Eviction
	Placements []Placement
	// FirstFill is true when the pool is new: placements need no flush.
	FirstFill bool
	// Blocked counts evictions that were due but held back by the freeze
	// or the ceiling.
	Blocked int
}

// Decide computes the plan for one pass. It frees before it places: due
// and maintenance nodes leave their slots first (within Budget and only
// when not frozen), then vacant slots take eligible spares, preferring a
// spare in the zone of the node that left, then the lowest ID. A full slot
// table never stops it: extra nodes stay spares, missing nodes leave slots
// vacant.
func Decide(in Input) Plan {
	var plan Plan
	byID := make(map[string]NodeView, len(in.Nodes))
	for _, n := range in.Nodes {
		byID[n.ID] = n
	}
	slots := make([]cachenodes.Node, in.NumSlots)
	vacatedAZ := make(map[int]string)
	if in.Prev == nil {
		plan.FirstFill = true
	} else {
		for i := range min(in.NumSlots, in.Prev.NumSlots()) {
			slots[i] = in.Prev.Slot(i)
		}
	}
	budget := in.Budget
	for i, holder := range slots {
		if holder.IsZero() {
			continue
		}
		v, known := byID[holder.ID]
		if !known {
			continue
		}
		var ev Eviction
		switch {
		case v.Maintenance:
			ev = Eviction{Slot: i, Node: holder, Reason: "maintenance",
				Why: fmt.Sprintf("node %s in slot %d is in Consul maintenance mode", holder.ID, i)}
		case v.Due:
			ev = Eviction{Slot: i, Node: holder, Reason: "hold_expired",
				Why: fmt.Sprintf("node %s in slot %d was absent from Consul and unreachable for the whole hold", holder.ID, i)}
		default:
			continue
		}
		if in.Frozen || budget <= 0 {
			plan.Blocked++
			continue
		}
		budget--
		plan.Evictions = append(plan.Evictions, ev)
		vacatedAZ[i] = holder.AZ
		slots[i] = cachenodes.Node{}
	}
	if in.Frozen {
		return plan
	}
	inSlot := make(map[string]bool, len(slots))
	for _, n := range slots {
		if !n.IsZero() {
			inSlot[n.ID] = true
		}
	}
	for _, ev := range plan.Evictions {
		inSlot[ev.Node.ID] = true // an evicted node does not come straight back
	}
	var spares []NodeView
	for _, n := range in.Nodes {
		if !inSlot[n.ID] && n.eligibleSpare() {
			spares = append(spares, n)
		}
	}
	slices.SortFunc(spares, func(a, b NodeView) int { return cmp.Compare(a.ID, b.ID) })
	for i := range slots {
		if !slots[i].IsZero() || len(spares) == 0 {
			continue
		}
		pick := 0
		if az, ok := vacatedAZ[i]; ok {
			if j := slices.IndexFunc(spares, func(s NodeView) bool { return s.AZ == az }); j >= 0 {
				pick = j
			}
		}
		plan.Placements = append(plan.Placements, Placement{Slot: i, Node: spares[pick].Node})
		spares = slices.Delete(spares, pick, pick+1)
	}
	return plan
}

// Build applies the evictions of plan and the placements that were carried
// out (done; with a flush unless FirstFill) to the previous map, refreshes
// the addresses of listed slot holders and the spares list, and returns the
// next map. The generation rises by one exactly when a slot's node changed;
// updated_at moves whenever the document changed.
func Build(in Input, plan Plan, done []Placement, now time.Time) (*cachenodes.SlotMap, error) {
	spec := cachenodes.SlotMapSpec{Pool: in.Pool, Slots: make([]cachenodes.Node, in.NumSlots), UpdatedAt: now}
	if in.Prev != nil {
		prev := in.Prev.Spec()
		spec.Generation = prev.Generation
		spec.UpdatedAt = prev.UpdatedAt
		copy(spec.Slots, prev.Slots)
	}
	for _, ev := range plan.Evictions {
		if spec.Slots[ev.Slot].ID == ev.Node.ID {
			spec.Slots[ev.Slot] = cachenodes.Node{}
		}
	}
	for _, p := range done {
		if spec.Slots[p.Slot].IsZero() {
			spec.Slots[p.Slot] = p.Node
		}
	}
	byID := make(map[string]NodeView, len(in.Nodes))
	for _, n := range in.Nodes {
		byID[n.ID] = n
	}
	inSlot := make(map[string]bool, in.NumSlots)
	for i, n := range spec.Slots {
		if n.IsZero() {
			continue
		}
		inSlot[n.ID] = true
		if v, ok := byID[n.ID]; ok && v.Listed && v.Addr != "" {
			spec.Slots[i] = v.Node
		}
	}
	spec.Spares = []cachenodes.Node{}
	for _, n := range in.Nodes {
		if !inSlot[n.ID] && n.listedSpare() {
			spec.Spares = append(spec.Spares, n.Node)
		}
	}
	slices.SortFunc(spec.Spares, func(a, b cachenodes.Node) int { return cmp.Compare(a.ID, b.ID) })
	next, err := cachenodes.NewSlotMap(spec)
	if err != nil {
		return nil, fmt.Errorf("building the next slot map: %w", err)
	}
	if in.Prev == nil || !next.SameSlots(in.Prev) {
		spec.Generation++
		spec.UpdatedAt = now
	} else if !next.Equal(in.Prev) {
		spec.UpdatedAt = now
	} else {
		return in.Prev, nil
	}
	return cachenodes.NewSlotMap(spec)
}
