package slotplan

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Undrain undoes (section 7). A drain entry records in moved_slots the
// slots its drain steps moved off the zone; a return step gives those back
// first, from whichever node now holds each (warm when it answers), into
// the zone's spares in the spread rule's order (lowest ID first), and only
// once none is left to give back does it take from the zones that hold the
// most. A moved slot that still warms is waited for, not replaced by
// another zone's slot; so is a node of the zone that is still a warm
// source, and the step's blocked names it and when its warming ends.

// givenBack returns the slot a return step to zone k gives back now: the
// lowest of moved that an undrained zone holds, that the plan does not
// change yet and that does not warm. waiting is the lowest such slot
// passed over because it warms (-1: none); a slot vacant now, held by a
// drained zone or by zone k itself is not given back.
func (z *zoneIndex) givenBack(k int, moved []int) (slot, waiting int) {
	slot, waiting = -1, -1
	for _, i := range moved {
		if i < 0 || i >= z.in.NumSlots || z.idx.prevSlot(i).IsZero() || z.touched[i] {
			continue
		}
		if h := z.zone(z.idx.holderAZ(*z.in, i)); h == k || z.drained[h] {
			continue
		}
		if z.warming[i] {
			if waiting < 0 {
				waiting = i
			}
			continue
		}
		return i, waiting
	}
	return -1, waiting
}

// warmSourcesIn names the nodes of zone that are warm sources of the
// previous map still warming, by ID, and the earliest removal of their
// warming objects (on the clock of Input.Now): they are spares then.
func (z *zoneIndex) warmSourcesIn(zone string) (ids []string, until time.Time) {
	in := z.in
	if in.Prev == nil || len(z.warming) == 0 {
		return nil, time.Time{}
	}
	az := make(map[string]string, len(z.warming))
	for _, v := range in.Nodes {
		az[v.ID] = v.AZ
	}
	for i := range z.warming {
		ws := in.Prev.Warming(i)
		if ws == nil || az[ws.NodeID] != zone {
			continue
		}
		ids = append(ids, ws.NodeID)
		if end := in.WarmGone(i); until.IsZero() || end.Before(until) {
			until = end
		}
	}
	slices.Sort(ids)
	return ids, until
}

// noSpareBack says why a return step to zone finds no spare of its own,
// and what would help: its nodes still warm other slots (named, with when
// the first warming ends), or it has no ready node without a slot.
func (z *zoneIndex) noSpareBack(zone string) string {
	if ids, until := z.warmSourcesIn(zone); len(ids) > 0 {
		verb := "is a warm source"
		if len(ids) > 1 {
			verb = "are warm sources"
		}
		return fmt.Sprintf("%s %s until %s; zone %q takes its slots back when the warming ends", strings.Join(ids, ", "), verb,
			until.UTC().Format("15:04:05 UTC"), zone)
	}
	return fmt.Sprintf("no spare in zone %q to give its slots back to: each of its nodes holds a slot, is down or owes a flush; it goes on when one of them answers again (and is flushed), or when a memcached is added to the zone", zone)
}

// warmingBack says that moved slot i is still warming on its new holder:
// it comes back when that ends.
func (z *zoneIndex) warmingBack(i int, zone string) string {
	if ws := z.in.Prev.Warming(i); ws != nil {
		return fmt.Sprintf("slot %d, moved off zone %q, still warms from %s until %s; it comes back when the warming ends",
			i, zone, ws.NodeID, z.in.WarmGone(i).UTC().Format("15:04:05 UTC"))
	}
	return fmt.Sprintf("slot %d, moved off zone %q, is still warming; it comes back when the warming ends", i, zone)
}
