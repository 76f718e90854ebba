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

	index *assignIndex
}

// Decide computes the plan for one pass. It frees before it places: due
// and maintenance nodes leave their slots first (within Budget and only
// when not frozen), then vacant slots take eligible spares, preferring a
// spare in the zone of the node that left, then the lowest ID. A full slot
// table never stops it: extra nodes stay spares, missing nodes leave slots
// vacant. It runs in time linear in the nodes when in.Nodes is sorted by ID
// (as the loop passes them); otherwise it sorts a copy of the spares.
func Decide(in Input) Plan {
	plan := Plan{FirstFill: in.Prev == nil}
	idx := newAssignIndex(in)
	plan.index = idx
	budget := in.Budget
	vacatedAZ := make(map[int]string)
	for i := range in.NumSlots {
		holder := idx.prevSlot(i)
		if holder.IsZero() {
			continue
		}
		v, known := idx.holderView(in, i)
		if !known {
			continue // not known to the loop: nothing observed against it
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
	}
	if in.Frozen {
		return plan
	}
	vacant := make([]int, 0, len(plan.Evictions))
	evicted := make(map[int]bool, len(plan.Evictions))
	for _, ev := range plan.Evictions {
		evicted[ev.Slot] = true
	}
	// Slots vacated in this pass come first, so each takes a spare of its
	// departed node's zone before an already vacant slot (with no zone to
	// prefer) takes the lowest ID.
	for _, ev := range plan.Evictions {
		vacant = append(vacant, ev.Slot)
	}
	for i := range in.NumSlots {
		if idx.prevSlot(i).IsZero() {
			vacant = append(vacant, i)
		}
	}
	if len(vacant) == 0 {
		return plan
	}
	// Candidates are the eligible spares, by ID; an evicted node is a
	// holder of the previous map, so it is not among them.
	cands := make([]int, 0, len(in.Nodes)-idx.holders)
	for j := range in.Nodes {
		if idx.slotOf[j] < 0 && in.Nodes[j].eligibleSpare() {
			cands = append(cands, j)
		}
	}
	if !idx.sorted {
		slices.SortFunc(cands, func(a, b int) int { return cmp.Compare(in.Nodes[a].ID, in.Nodes[b].ID) })
	}
	cands = distinctAddrs(in, idx, plan.Evictions, cands)
	taken := make([]bool, len(cands))
	cursor := 0
	for _, slot := range vacant {
		for cursor < len(cands) && taken[cursor] {
			cursor++
		}
		if cursor == len(cands) {
			break
		}
		pick := cursor
		if az, ok := vacatedAZ[slot]; ok {
			for k := cursor; k < len(cands); k++ {
				if !taken[k] && in.Nodes[cands[k]].AZ == az {
					pick = k
					break
				}
			}
		}
		taken[pick] = true
		plan.Placements = append(plan.Placements, Placement{Slot: slot, Node: in.Nodes[cands[pick]].Node})
	}
	return plan
}

// assignIndex is what Decide learned of the input, handed to Build so a
// pass reads the nodes once.
type assignIndex struct {
	prev     *cachenodes.SlotMap
	numSlots int
	holders  int     // how many of Nodes hold a slot
	view     []int32 // index in Nodes of each slot's holder; -1 if unknown
	slotOf   []int32 // slot of each node of Nodes in the previous map; -1 if none
	sorted   bool    // in.Nodes is sorted by ID
}

func newAssignIndex(in Input) *assignIndex {
	idx := &assignIndex{prev: in.Prev, numSlots: in.NumSlots, view: make([]int32, in.NumSlots), slotOf: make([]int32, len(in.Nodes)), sorted: true}
	for i := range idx.view {
		idx.view[i] = -1
	}
	for j := range in.Nodes {
		id := in.Nodes[j].ID
		if j > 0 && in.Nodes[j-1].ID >= id {
			idx.sorted = false
		}
		idx.slotOf[j] = -1
		if in.Prev == nil {
			continue
		}
		if i := in.Prev.SlotOf(id); i >= 0 && i < in.NumSlots {
			idx.view[i] = int32(j)
			idx.slotOf[j] = int32(i)
			idx.holders++
		}
	}
	return idx
}

// prevSlot returns the node of slot i in the previous map.
func (idx *assignIndex) prevSlot(i int) cachenodes.Node {
	if idx.prev == nil || i >= idx.prev.NumSlots() {
		return cachenodes.Node{}
	}
	return idx.prev.Slot(i)
}

// holderView returns the view of slot i's previous holder, if known.
func (idx *assignIndex) holderView(in Input, i int) (NodeView, bool) {
	if j := idx.view[i]; j >= 0 {
		return in.Nodes[j], true
	}
	return NodeView{}, false
}

// Build applies the evictions of plan and the placements that were carried
// out (done; with a flush unless FirstFill) to the previous map, refreshes
// the addresses of listed slot holders and the spares list, and returns the
// next map. The generation rises by one exactly when a slot's node changed;
// updated_at moves whenever the document changed; an unchanged document is
// returned as in.Prev itself, without building anything.
func Build(in Input, plan Plan, done []Placement, now time.Time) (*cachenodes.SlotMap, error) {
	idx := plan.index
	if idx == nil {
		idx = newAssignIndex(in)
	}
	// The few slots this pass changes; every other slot keeps its holder.
	changed := make(map[int]cachenodes.Node, len(plan.Evictions)+len(done))
	for _, ev := range plan.Evictions {
		if idx.prevSlot(ev.Slot).ID == ev.Node.ID {
			changed[ev.Slot] = cachenodes.Node{}
		}
	}
	placed := make(map[string]bool, len(done))
	for _, p := range done {
		if cur, ok := changed[p.Slot]; (ok && cur.IsZero()) || (!ok && idx.prevSlot(p.Slot).IsZero()) {
			changed[p.Slot] = p.Node
			placed[p.Node.ID] = true
		}
	}
	slotAt := func(i int) cachenodes.Node {
		if n, ok := changed[i]; ok {
			return n
		}
		n := idx.prevSlot(i)
		if v, ok := idx.holderView(in, i); ok && v.Listed && v.Addr != "" {
			return v.Node
		}
		return n
	}
	isSpare := func(j int) bool {
		n := &in.Nodes[j]
		if i := idx.slotOf[j]; i >= 0 {
			if cur, ok := changed[int(i)]; !ok || cur.ID == n.ID {
				return false // still holds its slot
			}
		}
		return n.listedSpare() && (len(placed) == 0 || !placed[n.ID])
	}

	if in.Prev != nil && in.Prev.Pool() == in.Pool && in.Prev.NumSlots() == in.NumSlots && idx.sorted {
		same := true
		for i := 0; same && i < in.NumSlots; i++ {
			same = slotAt(i) == in.Prev.Slot(i)
		}
		k, nspares := 0, in.Prev.NumSpares()
		for j := 0; same && j < len(in.Nodes); j++ {
			if isSpare(j) {
				same = k < nspares && in.Prev.Spare(k) == in.Nodes[j].Node
				k++
			}
		}
		if same && k == nspares {
			return in.Prev, nil
		}
	}

	spares := len(plan.Evictions) + 16
	if in.Prev != nil {
		spares += in.Prev.NumSpares()
	}
	spec := cachenodes.SlotMapSpec{Pool: in.Pool, Slots: make([]cachenodes.Node, in.NumSlots), Spares: make([]cachenodes.Node, 0, spares), UpdatedAt: now}
	for i := range spec.Slots {
		spec.Slots[i] = slotAt(i)
	}
	keepAddrsDistinct(spec.Slots, idx)
	for j := range in.Nodes {
		if isSpare(j) {
			spec.Spares = append(spec.Spares, in.Nodes[j].Node)
		}
	}
	if !idx.sorted {
		slices.SortFunc(spec.Spares, func(a, b cachenodes.Node) int { return cmp.Compare(a.ID, b.ID) })
	}
	switch {
	case in.Prev == nil:
		spec.Generation = 1
	case !sameIDs(in.Prev, spec.Slots):
		spec.Generation = in.Prev.Generation() + 1
	default:
		spec.Generation = in.Prev.Generation()
		if in.Prev.Pool() == in.Pool && sameDoc(in.Prev, spec) {
			return in.Prev, nil
		}
	}
	next, err := cachenodes.NewSlotMap(spec)
	if err != nil {
		return nil, fmt.Errorf("building the next slot map: %w", err)
	}
	return next, nil
}

func sameIDs(m *cachenodes.SlotMap, slots []cachenodes.Node) bool {
	if m.NumSlots() != len(slots) {
		return false
	}
	for i, n := range slots {
		if m.Slot(i).ID != n.ID {
			return false
		}
	}
	return true
}

// sameDoc reports whether m holds exactly the slots and spares of spec.
func sameDoc(m *cachenodes.SlotMap, spec cachenodes.SlotMapSpec) bool {
	if m.NumSlots() != len(spec.Slots) || m.NumSpares() != len(spec.Spares) {
		return false
	}
	for i, n := range spec.Slots {
		if m.Slot(i) != n {
			return false
		}
	}
	for i, n := range spec.Spares {
		if m.Spare(i) != n {
			return false
		}
	}
	return true
}
