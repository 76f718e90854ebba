package slotplan

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/revert"
)

// Build applies plan to the previous map, with the placements of plan
// that were carried out (done: each flushed, unless FirstFill), and
// returns the next map: the slots vacated; each announce done as its
// slot's incoming node, serving cachenodes.AnnounceLead after now (its
// until Input.WarmFor after that); each announce served as the slot's
// holder (warm until the announce's until, or cold); the announces
// dropped removed; the warmings that end now with their ended_at, those
// gone removed; the addresses of listed slot holders refreshed and the
// spares listed (no incoming node, warm source or holder among them). In
// the first fill of a new pool the placements take their slots at once.
// The generation rises by one exactly when a slot's node changed, the
// revision with every document written; updated_at is now; an unchanged
// document is returned as in.Prev itself, without building anything.
func Build(in Input, plan Plan, done []Placement, now time.Time) (*cachenodes.SlotMap, error) {
	idx := plan.index
	if idx == nil {
		idx = newAssignIndex(in)
	}
	// The few slots this pass changes; every other slot keeps its holder.
	changed := make(map[int]cachenodes.Node, len(plan.Evictions)+len(plan.Serves))
	for _, ev := range plan.Evictions {
		if !ev.Move && idx.prevSlot(ev.Slot).ID == ev.Node.ID {
			changed[ev.Slot] = cachenodes.Node{}
		}
	}
	placed := make(map[string]bool, len(done)+len(plan.Serves))
	var warmed map[int]*cachenodes.Warming
	var announced map[int]*cachenodes.Incoming
	if plan.FirstFill {
		for _, p := range done {
			changed[p.Slot] = p.Node
			placed[p.Node.ID] = true
		}
	} else {
		for _, p := range done {
			if announced == nil {
				announced = make(map[int]*cachenodes.Incoming, len(done))
			}
			at := ServesAt(now)
			announced[p.Slot] = &cachenodes.Incoming{NodeID: p.Node.ID, Addr: p.Node.Addr, ServesAt: at, Until: at.Add(max(in.WarmFor, 0))}
		}
		for _, p := range plan.Serves {
			changed[p.Slot] = p.Node
			placed[p.Node.ID] = true
			if !p.Warm {
				continue
			}
			if warmed == nil {
				warmed = make(map[int]*cachenodes.Warming)
			}
			from := p.From
			if v, ok := idx.holderView(in, idx.ownSlot(p.Slot)); ok && v.ID == from.ID && v.Listed && v.Addr != "" {
				from = v.Node
			}
			warmed[p.Slot] = &cachenodes.Warming{NodeID: from.ID, Addr: from.Addr, Until: p.Until}
		}
	}
	// The twins left: those of Prev that no split of this pass took.
	var twins []int
	if idx.twins > 0 {
		rf := in.Prev.ResizedFrom()
		for t := rf; t < in.NumSlots; t++ {
			if _, split := changed[t]; in.Prev.IsTwin(t) && !split {
				twins = append(twins, t)
			}
		}
	}
	warming, sources := nextWarming(in, plan, changed, warmed, twins, now)
	incoming, incomingIDs := nextIncoming(in, idx, plan, announced, changed, twins)
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
	// The addresses of the next map's warm sources and incoming nodes: a
	// node registered at one of them (the same memcached under another
	// service ID) is no spare either (section 7).
	var taken map[string]bool
	take := func(addr string) {
		if taken == nil {
			taken = make(map[string]bool)
		}
		taken[addr] = true
	}
	for _, w := range warming {
		if w != nil {
			take(w.Addr)
		}
	}
	for _, ni := range incoming {
		if ni != nil {
			take(ni.Addr)
		}
	}
	isSpare := func(j int) bool {
		n := &in.Nodes[j]
		if i := idx.slotOf[j]; i >= 0 {
			if cur, ok := changed[int(i)]; !ok || cur.ID == n.ID {
				return false // still holds its slot
			}
		}
		return n.listedSpare() && (len(placed) == 0 || !placed[n.ID]) && (sources == nil || !sources[n.ID]) && !incomingIDs[n.ID] &&
			(!taken[n.Addr] || in.reverted.Reverted(revert.ListedOnce))
	}
	slots := make([]cachenodes.Node, in.NumSlots)
	for i := range slots {
		if _, split := changed[i]; split || !idx.twin(i) {
			slots[i] = slotAt(i)
		}
	}
	keepAddrsDistinct(slots, idx)
	var twinMarks []bool
	if len(twins) > 0 {
		// Each twin left names slot s's node in the same write.
		twinMarks = make([]bool, in.NumSlots)
		for _, t := range twins {
			slots[t] = slots[t-in.Prev.ResizedFrom()]
			twinMarks[t] = true
		}
	}
	// The spares, by ID: one memcached is listed once, and never one a
	// slot holder, a warm source or an incoming node has (the same
	// memcached registered under a second service ID, section 7).
	order := make([]int, 0, len(in.Nodes))
	for j := range in.Nodes {
		if isSpare(j) {
			order = append(order, j)
		}
	}
	if !idx.sorted {
		slices.SortFunc(order, func(a, b int) int { return cmp.Compare(in.Nodes[a].ID, in.Nodes[b].ID) })
	}
	listed := make(map[string]bool, len(slots)+len(order))
	for _, n := range slots {
		if n.Addr != "" {
			listed[n.Addr] = true
		}
	}
	spareNodes := make([]cachenodes.Node, 0, len(order))
	for _, j := range order {
		if n := in.Nodes[j].Node; !listed[n.Addr] || in.reverted.Reverted(revert.ListedOnce) {
			listed[n.Addr] = true
			spareNodes = append(spareNodes, n)
		}
	}

	quiet := len(plan.EndWarming) == 0 && len(plan.RemovedWarming) == 0 && len(in.RewriteEnded) == 0 && warmed == nil &&
		announced == nil && len(plan.Drops) == 0 && len(plan.Serves) == 0
	if in.Prev != nil && in.Prev.Pool() == in.Pool && in.Prev.NumSlots() == in.NumSlots && quiet && in.Prev.NumSpares() == len(spareNodes) {
		same := true
		for i := 0; same && i < in.NumSlots; i++ {
			same = slots[i] == in.Prev.Slot(i)
		}
		for k := 0; same && k < len(spareNodes); k++ {
			same = in.Prev.Spare(k) == spareNodes[k]
		}
		if same {
			return in.Prev, nil
		}
	}

	spec := cachenodes.SlotMapSpec{Pool: in.Pool, Slots: slots, Spares: spareNodes, UpdatedAt: now, Warming: warming, Incoming: incoming, Twins: twinMarks}
	if in.Prev != nil && in.Prev.NumSlots() == in.NumSlots {
		spec.ResizedFrom = in.Prev.ResizedFrom()
	}
	switch {
	case in.Prev == nil:
		spec.Generation, spec.Revision = 1, 1
	case !sameIDs(in.Prev, spec.Slots):
		spec.Generation, spec.Revision = in.Prev.Generation()+1, in.Prev.Revision()+1
	default:
		spec.Generation, spec.Revision = in.Prev.Generation(), in.Prev.Revision()+1
		if in.Prev.Pool() == in.Pool && sameDoc(in.Prev, spec) {
			return in.Prev, nil
		}
	}
	// A warming kept from Prev keeps its until exactly as first written,
	// whichever clock writes the map now: clients stop reading the old
	// holder at until by their own clocks and send it their writes until
	// until plus the clock skew, so an until that moved would let one
	// client read the old holder after another stopped writing to it. An
	// announce keeps its serves_at and until the same way.
	next, err := cachenodes.NewSlotMap(spec)
	if err != nil {
		return nil, fmt.Errorf("building the next slot map: %w", err)
	}
	return next, nil
}

// nextIncoming returns the incoming nodes of the next map (nil when no
// slot has one) and their IDs: the previous map's, less those served
// (their slot changed) and dropped, plus the announces done (announced);
// each twin left carries slot s's, or keeps its own (a split announced).
func nextIncoming(in Input, idx *assignIndex, plan Plan, announced map[int]*cachenodes.Incoming, changed map[int]cachenodes.Node, twins []int) ([]*cachenodes.Incoming, map[string]bool) {
	if announced == nil && (in.Prev == nil || !in.Prev.AnyIncoming()) {
		return nil, nil
	}
	out := make([]*cachenodes.Incoming, in.NumSlots)
	ids := make(map[string]bool)
	any := false
	if in.Prev != nil && in.Prev.AnyIncoming() {
		dropped := make(map[int]bool, len(plan.Drops))
		for _, d := range plan.Drops {
			dropped[d.Slot] = true
		}
		for i := 0; i < in.NumSlots && i < in.Prev.NumSlots(); i++ {
			ni := incomingAt(&in, idx, i)
			if ni == nil || dropped[i] {
				continue
			}
			if _, ch := changed[i]; ch {
				continue // served
			}
			out[i], ids[ni.NodeID], any = ni, true, true
		}
	}
	for i, ni := range announced {
		out[i], ids[ni.NodeID], any = ni, true, true
	}
	if !any {
		return nil, ids
	}
	rf := 0
	if in.Prev != nil {
		rf = in.Prev.ResizedFrom()
	}
	for _, t := range twins {
		if s := out[t-rf]; s != nil {
			out[t] = s // a twin carries slot s's announce
		}
	}
	return out, ids
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

// sameDoc reports whether m holds exactly the slots, spares, warmings and
// incoming nodes of spec.
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
	if m.AnyWarming() || spec.Warming != nil {
		for i := range spec.Slots {
			var w *cachenodes.Warming
			if spec.Warming != nil {
				w = spec.Warming[i]
			}
			if !m.Warming(i).Equal(w) {
				return false
			}
		}
	}
	if m.AnyIncoming() || spec.Incoming != nil {
		for i := range spec.Slots {
			var ni *cachenodes.Incoming
			if spec.Incoming != nil {
				ni = spec.Incoming[i]
			}
			if !m.Incoming(i).Equal(ni) {
				return false
			}
		}
	}
	return true
}
