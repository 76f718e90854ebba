package slotplan

import (
	"fmt"

	"github.com/mcrib/mcrib/mcribapi"
)

// Splits (docs/api.md, "Growing the pool"). After a resize from N to 2N
// slots each slot s + N is a twin of slot s: it names slot s's node, counts
// as one slot with it everywhere (zone counts, the spread share, drain
// steps) and follows it in the same write. A split step moves up to
// Input.Split twins, lowest slot first, each to a ready spare chosen by the
// spread rule (the zone of slot s first), announced as the twin's own
// incoming node and served as a warm move whose warm source is slot s's
// holder, which keeps slot s; cold when Input.WarmFor is 0. A twin waits
// while slot s is vacant, while its holder does not answer or owes a
// flush, while slot s has a warming object or an incoming node or moves
// in this pass. Splits do not count against the replacement ceiling and
// go on under an automatic freeze, but for a fault of discovery, during
// which they wait (invariant 5); an operator freeze holds them back
// (Decide does not call this).

// splits carries out the split step of z.in.Split and says what it did.
func (z *zoneIndex) splits(plan *Plan, warm warmState) StepOutcome {
	in, idx := z.in, z.idx
	rf := in.Prev.ResizedFrom()
	var o StepOutcome
	if in.DiscoveryFault {
		o.Blocked = "Consul's last answer is taken as a fault of discovery (nothing is replaced): the splits wait until it answers in full"
		return o
	}
	var waiting string
	for t := rf; t < in.NumSlots && o.Moved < in.Split; t++ {
		if !idx.twin(t) || z.touched[t] {
			continue // split already, or announced to split
		}
		s := t - rf
		holder := idx.prevSlot(s)
		v, known := idx.holderView(*in, s)
		var wait string
		switch {
		case holder.IsZero():
			wait = fmt.Sprintf("slot %d is vacant; its twin %d splits once it is held", s, t)
		case !known || !v.Reachable:
			wait = fmt.Sprintf("node %s of slot %d does not answer; its twin %d waits", holder.ID, s, t)
		case v.OwesFlush:
			wait = fmt.Sprintf("node %s of slot %d owes a flush; its twin %d waits", holder.ID, s, t)
		case warm.busy[s]:
			wait = fmt.Sprintf("slot %d is still warming; its twin %d splits when its warming object is removed", s, t)
		case z.touched[s]:
			wait = fmt.Sprintf("slot %d moves in this pass; its twin %d follows it", s, t)
		}
		if wait != "" {
			if waiting == "" {
				waiting = wait
			}
			continue
		}
		ev := Eviction{Slot: t, Node: holder, Reason: mcribapi.EvictionSplit, Move: true, Warm: in.WarmFor > 0,
			Why: fmt.Sprintf("a split step moves slot %d, the twin of slot %d, off node %s", t, s, holder.ID)}
		az := idx.holderAZ(*in, s)
		j, ok := z.pick(az, true)
		if !ok {
			o.Blocked = "no ready spare for the next split: " + noSpareWhy(*in, idx, warm)
			return o
		}
		z.touched[t], z.touched[s] = true, true
		plan.Evictions = append(plan.Evictions, ev)
		plan.Placements = append(plan.Placements, Placement{Slot: t, Node: in.Nodes[j].Node, From: holder, Warm: ev.Warm, Reason: ev.Reason, Why: ev.Why})
		o.Moved++
	}
	if o.Moved == 0 {
		o.Blocked = waiting
	}
	return o
}
