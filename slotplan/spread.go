package slotplan

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/mcrib/mcrib/mcribapi"
)

// The spread rule (docs/api.md, "Spread rule"). Wherever Decide chooses a node
// for a slot, let Z be the number of undrained zones with at least one
// node present and share = ⌈num_slots ÷ Z⌉. Among the undrained zones
// with a ready spare, it takes the departed node's zone if that zone, not
// counting the slot being filled, holds fewer than share slots; otherwise
// the zone holding the fewest (ties: zone name); within the zone, the
// spare with the lowest ID. A drained zone's spares are taken only by its
// own return steps. Nothing is ever moved only to even out the spread.

// zoneIndex is what the spread rule needs during one Decide: the slots
// each zone holds (kept up to date as the plan grows), the share, and each
// zone's ready spares by ID, taken from the front. Zones are numbered in
// the order met; names[k] is zone k.
type zoneIndex struct {
	in      *Input
	idx     *assignIndex
	share   int
	names   []string
	lookup  map[string]int // used once there are many zones
	drained []bool
	held    []int
	spares  [][]int // indices in Nodes, by ID
	next    []int   // how many of spares[k] are taken
	order   []int   // zone numbers by name
	touched map[int]bool
	warming map[int]bool
	bySlot  [][]int // each zone's slots, ascending (built on demand)
	// sources are the previous map's warm sources, by ID.
	sources map[string]bool
	// inc are the previous map's announces; takeable the incoming nodes
	// of drain and return steps and splits, by ID (indices in Nodes), that
	// a replacement of a slot without a live holder may take when no
	// spare is left.
	inc      incomingState
	takeable []int
}

// zone returns the number of zone name, adding it when new.
func (z *zoneIndex) zone(name string) int {
	if z.lookup == nil {
		for k, n := range z.names {
			if n == name {
				return k
			}
		}
		if len(z.names) >= 16 {
			z.lookup = make(map[string]int, 64)
			for k, n := range z.names {
				z.lookup[n] = k
			}
		}
	} else if k, ok := z.lookup[name]; ok {
		return k
	}
	k := len(z.names)
	z.names = append(z.names, name)
	if z.lookup != nil {
		z.lookup[name] = k
	}
	z.drained = append(z.drained, z.in.Drained[name])
	z.held = append(z.held, 0)
	z.spares = append(z.spares, nil)
	z.next = append(z.next, 0)
	return k
}

// newZoneIndex indexes the zones of in for the placements of one pass:
// warm the warmings, inc the announces. A slot announced (or served now)
// counts for its incoming node's zone, as if it had moved: the spread, a
// drain's steps and a split count it there (docs/api.md, "Announce, then
// serve"); an announced twin counts as a slot of its own.
func newZoneIndex(in Input, idx *assignIndex, warm warmState, inc incomingState) *zoneIndex {
	z := &zoneIndex{in: &in, idx: idx, touched: map[int]bool{}, warming: warm.busy, sources: warm.sources, inc: inc}
	if warm.lending != nil {
		// A slot whose holder warms its split twin moves as a warming
		// slot does: when that warming object is removed.
		z.warming = make(map[int]bool, len(warm.busy)+len(warm.lending))
		for i := range warm.busy {
			z.warming[i] = true
		}
		for i := range warm.lending {
			z.warming[i] = true
		}
	}
	var present []bool
	for j := range in.Nodes {
		if v := &in.Nodes[j]; v.Present {
			k := z.zone(v.AZ)
			for len(present) <= k {
				present = append(present, false)
			}
			present[k] = true
		}
	}
	numPresent := 0
	for k, p := range present {
		if p && !z.drained[k] {
			numPresent++
		}
	}
	slots := idx.slots
	for i := range in.NumSlots {
		if inc.announced(i) {
			z.touched[i] = true
			if idx.twin(i) {
				slots++ // a twin announced to split counts as a slot of its own
			}
			z.held[z.zone(z.incomingAZ(i))]++
			continue
		}
		if !idx.prevSlot(i).IsZero() && !idx.twin(i) {
			z.held[z.zone(idx.holderAZ(in, i))]++
		}
	}
	z.share = slots
	if numPresent > 0 {
		z.share = (slots + numPresent - 1) / numPresent
	}
	// Candidates are the eligible spares, by ID; a holder of the previous
	// map, a warm source (it gives its contents to no other slot) and an
	// incoming node (it is announced to a slot already) are none.
	cands := make([]int, 0, len(in.Nodes)-idx.holders)
	for j := range in.Nodes {
		id := in.Nodes[j].ID
		if _, announced := inc.nodes[id]; idx.slotOf[j] < 0 && in.Nodes[j].EligibleSpare() && (warm.sources == nil || !warm.sources[id]) && !announced {
			cands = append(cands, j)
		} else if announced && inc.live[inc.nodes[id]] && inc.stealable[inc.nodes[id]] && idx.slotOf[j] < 0 && in.Nodes[j].EligibleSpare() {
			z.takeable = append(z.takeable, j)
		}
	}
	if !idx.sorted {
		slices.SortFunc(cands, func(a, b int) int { return strings.Compare(in.Nodes[a].ID, in.Nodes[b].ID) })
		slices.SortFunc(z.takeable, func(a, b int) int { return strings.Compare(in.Nodes[a].ID, in.Nodes[b].ID) })
	}
	var announcedAt []string
	for id, i := range inc.nodes {
		if inc.live[i] {
			if ni := in.Prev.Incoming(i); ni != nil && ni.NodeID == id {
				announcedAt = append(announcedAt, ni.Addr)
			}
		}
	}
	cands = distinctAddrs(in, idx, announcedAt, cands)
	for _, j := range cands {
		k := z.zone(in.Nodes[j].AZ)
		z.spares[k] = append(z.spares[k], j)
	}
	z.order = make([]int, len(z.names))
	for k := range z.order {
		z.order[k] = k
	}
	slices.SortFunc(z.order, func(a, b int) int { return strings.Compare(z.names[a], z.names[b]) })
	return z
}

// incomingAZ returns the zone of slot i's incoming node in Prev (its
// holder's when the node is not known).
func (z *zoneIndex) incomingAZ(i int) string {
	if ni := z.in.Prev.Incoming(i); ni != nil {
		if v, ok := z.idx.nodeView(z.in, ni.NodeID); ok {
			return v.AZ
		}
	}
	return z.idx.holderAZ(*z.in, i)
}

// holderAZ returns the zone of slot i's holder: as Consul lists it now,
// else as the previous map has it.
func (idx *assignIndex) holderAZ(in Input, i int) string {
	if v, ok := idx.holderView(in, i); ok && v.Listed && v.Addr != "" {
		return v.AZ
	}
	return idx.prevSlot(i).AZ
}

func (z *zoneIndex) hasSpare(k int) bool { return z.next[k] < len(z.spares[k]) }

// take returns the lowest-ID spare left in zone k and counts the slot it
// takes for the zone.
func (z *zoneIndex) take(k int) int {
	j := z.spares[k][z.next[k]]
	z.next[k]++
	z.held[k]++
	return j
}

// pick chooses a spare by the spread rule for a slot whose departed node
// was in zone departed (hasDeparted false: a slot vacant before). The
// departed zone's count must not include the slot being filled.
func (z *zoneIndex) pick(departed string, hasDeparted bool) (int, bool) {
	if hasDeparted {
		if k := z.zone(departed); !z.drained[k] && z.hasSpare(k) && z.held[k] < z.share {
			return z.take(k), true
		}
	}
	best := -1
	for _, k := range z.order {
		if z.drained[k] || !z.hasSpare(k) {
			continue
		}
		if best < 0 || z.held[k] < z.held[best] {
			best = k
		}
	}
	if best < 0 {
		return -1, false
	}
	return z.take(best), true
}

// move carries out a planned move ev: a spread pick for its slot, not
// counting the slot for its holder's zone. It reports false when no spare
// can take it (the holder keeps the slot).
func (z *zoneIndex) move(plan *Plan, ev Eviction) bool { return z.announceMove(plan, ev, false) }

// announceMove announces ev, a move or a replacement of slot ev.Slot: a
// spread pick for its slot, not counting the slot for its holder's zone
// (take: with no spare left, it may take a step's incoming node, for a
// slot without a live holder). The holder keeps the slot until the
// announce serves. It reports false when no spare can take it.
func (z *zoneIndex) announceMove(plan *Plan, ev Eviction, take bool) bool {
	from := z.idx.holderAZ(*z.in, ev.Slot)
	k := z.zone(from)
	z.held[k]--
	var j int
	var ok bool
	if take {
		j, ok = z.pickOrTake(plan, from, true, ev.Slot)
	} else {
		j, ok = z.pick(from, true)
	}
	if !ok {
		z.held[k]++
		return false
	}
	z.place(plan, ev, j)
	return true
}

// vacate takes due holder ev out of its slot, for no spare can take it.
func (z *zoneIndex) vacate(ev Eviction) {
	z.touched[ev.Slot] = true
	z.held[z.zone(z.idx.holderAZ(*z.in, ev.Slot))]--
}

// pickOrTake picks a spare by the spread rule for slot (see pick); with
// none left it takes the incoming node of a drain or return step or a
// split (the departed zone's first, else the lowest ID of an undrained
// zone), dropping that announce, which its rule tries again: only a slot
// without a live holder may (docs/api.md, "Announce, then serve").
func (z *zoneIndex) pickOrTake(plan *Plan, departed string, hasDeparted bool, slot int) (int, bool) {
	if j, ok := z.pick(departed, hasDeparted); ok {
		return j, true
	}
	best := -1
	for n, j := range z.takeable {
		if j < 0 {
			continue
		}
		az := z.in.Nodes[j].AZ
		if z.drained[z.zone(az)] {
			continue
		}
		if best < 0 || (hasDeparted && az == departed && z.in.Nodes[z.takeable[best]].AZ != departed) {
			best = n
		}
	}
	if best < 0 {
		return -1, false
	}
	j := z.takeable[best]
	z.takeable[best] = -1
	id := z.in.Nodes[j].ID
	i := z.inc.nodes[id]
	ni := z.in.Prev.Incoming(i)
	r := z.inc.reasons[i]
	plan.Drops = append(plan.Drops, Drop{Slot: i, Node: ni.Node(), From: z.idx.prevSlot(i), Reason: r, ServesAt: ni.ServesAt,
		GiveBack: countsAtAnnounce(r), Why: fmt.Sprintf("slot %d, which has no live holder, takes node %s", slot, id)})
	delete(z.inc.live, i)
	// Slot i counts for its holder's zone again; the node's zone keeps
	// its count, now for slot.
	z.held[z.zone(z.idx.holderAZ(*z.in, i))]++
	return j, true
}

// place adds move ev with its new holder Nodes[j] to plan, as an announce.
func (z *zoneIndex) place(plan *Plan, ev Eviction, j int) {
	z.touched[ev.Slot] = true
	ev.Move = true
	plan.Evictions = append(plan.Evictions, ev)
	plan.Placements = append(plan.Placements, Placement{Slot: ev.Slot, Node: z.in.Nodes[j].Node, From: ev.Node, Warm: ev.Warm, Reason: ev.Reason, Why: ev.Why})
}

// slotsOf returns zone k's slots of the previous map, ascending.
func (z *zoneIndex) slotsOf(k int) []int {
	if z.bySlot == nil {
		for i := range z.in.NumSlots {
			if !z.idx.prevSlot(i).IsZero() && !z.idx.twin(i) {
				az := z.zone(z.idx.holderAZ(*z.in, i))
				for len(z.bySlot) <= az {
					z.bySlot = append(z.bySlot, nil)
				}
				z.bySlot[az] = append(z.bySlot[az], i)
			}
		}
		for len(z.bySlot) < len(z.names) {
			z.bySlot = append(z.bySlot, nil)
		}
	}
	if k >= len(z.bySlot) {
		return nil
	}
	return z.bySlot[k]
}

// movable returns the highest-numbered slot of zone k that the plan does
// not change yet and that does not warm (a warming slot moves only when its
// warming ends); -1 when none. warming is the highest-numbered such slot
// passed over because it warms (-1 when none).
func (z *zoneIndex) movable(k int) (slot, warming int) {
	slots := z.slotsOf(k)
	warming = -1
	for n := len(slots) - 1; n >= 0; n-- {
		i := slots[n]
		if z.touched[i] {
			continue
		}
		if !z.warming[i] {
			return i, warming
		}
		if warming < 0 {
			warming = i
		}
	}
	return -1, warming
}

// steps carries out the drain and return steps of z.in.Steps, zone by
// zone in name order. A drain step moves the zone's highest-numbered slots
// to spares of the undrained zones by the spread rule; a return step gives
// back the slots the drain moved off the zone (undrain.go), then takes the
// highest-numbered slot of the undrained zone holding the most (ties: zone
// name), each into the zone's own lowest-ID spare.
func (z *zoneIndex) steps(plan *Plan) map[string]StepOutcome {
	in := z.in
	zones := make([]string, 0, len(in.Steps))
	for zone := range in.Steps {
		zones = append(zones, zone)
	}
	sort.Strings(zones)
	out := make(map[string]StepOutcome, len(zones))
	for _, zone := range zones {
		st := in.Steps[zone]
		k := z.zone(zone)
		var o StepOutcome
		size := max(st.Size, 1)
		for o.Moved < size && z.held[k] > st.Target {
			i, warming := z.movable(k)
			if i < 0 {
				if warming >= 0 {
					o.Blocked = fmt.Sprintf("slot %d is still warming; it moves when its warming object is removed", warming)
				}
				break // otherwise every slot of the zone moves in this pass already
			}
			ev := z.stepMove(i, mcribapi.EvictionDrain, fmt.Sprintf("a drain step moves slot %d off zone %q", i, zone))
			if !z.move(plan, ev) {
				o.Blocked = "no spare outside the drained zones: " + noSpareWhy(*in, z.idx, warmState{sources: z.sources})
				break
			}
			o.Moved++
		}
		for o.Moved < size && z.held[k] < st.Target {
			if !z.hasSpare(k) {
				o.Blocked = z.noSpareBack(zone)
				break
			}
			src, waiting := z.givenBack(k, st.Moved)
			why := fmt.Sprintf("a return step gives slot %d, which the drain moved off it, back to zone %q", src, zone)
			if src < 0 && waiting >= 0 {
				o.Blocked = z.warmingBack(waiting, zone)
				break
			}
			if src < 0 {
				src = z.richest(k)
				why = fmt.Sprintf("a return step gives slot %d back to zone %q", src, zone)
			}
			if src < 0 {
				o.Blocked = "no slot of an undrained zone to give back"
				break
			}
			ev := z.stepMove(src, mcribapi.EvictionReturn, why)
			z.held[z.zone(z.idx.holderAZ(*in, src))]--
			z.place(plan, ev, z.take(k))
			o.Moved++
		}
		out[zone] = o
	}
	return out
}

// stepMove is the move of slot i's holder for a drain or return step:
// warm when the holder answers, owes no flush and warm moves are on.
func (z *zoneIndex) stepMove(i int, reason mcribapi.EvictionReason, why string) Eviction {
	v, known := z.idx.holderView(*z.in, i)
	holder := z.idx.prevSlot(i)
	return Eviction{Slot: i, Node: holder, Reason: reason, Move: true,
		Warm: known && v.warmSource() && z.in.WarmFor > 0,
		Why:  fmt.Sprintf("%s (from node %s, zone %q)", why, holder.ID, holder.AZ)}
}

// richest returns the slot a return step to zone k takes: the highest
// numbered, not warming, of the undrained zone that holds the most (ties:
// zone name).
func (z *zoneIndex) richest(k int) int {
	z.slotsOf(k)
	srcs := make([]int, 0, len(z.order))
	for _, o := range z.order {
		if o != k && !z.drained[o] {
			srcs = append(srcs, o)
		}
	}
	slices.SortStableFunc(srcs, func(a, b int) int { return z.held[b] - z.held[a] })
	for _, o := range srcs {
		if i, _ := z.movable(o); i >= 0 {
			return i
		}
	}
	return -1
}
