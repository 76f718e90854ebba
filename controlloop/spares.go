package controlloop

import (
	"fmt"
	"slices"
	"time"

	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/slotplan"
)

// The pool's ready spares (section 7): what a replacement or a drain step
// can take. Taking the last of them is said in the drain and replace
// answers and in the events, and an answer that finds none names what
// would help.

// lastSpareSentence says that the pool has no ready spare left.
func lastSpareSentence(drained bool) string {
	return "the pool has no ready spare left outside the drained zones: a node that fails now leaves its slot vacant until one is added (" +
		slotplan.SpareHelp(drained) + ")"
}

// readySparesLocked counts the ready spares now: nodes that hold no slot,
// warm none and are announced to none, answer, are present in Consul and not in maintenance,
// owe no flush, are not held back by flap damping, are in no drained zone,
// are not released by a roll awaiting their restart, and whose address no holder or warm source has. l.mu must be held.
func (l *Loop) readySparesLocked(now time.Time) int {
	busy, taken := map[string]bool{}, map[string]bool{}
	if m := l.current; m != nil {
		for i := range m.NumSlots() {
			if n := m.Slot(i); !n.IsZero() {
				busy[n.ID], taken[n.Addr] = true, true
			}
			if w := m.Warming(i); w != nil {
				busy[w.NodeID], taken[w.Addr] = true, true
			}
			if ni := m.Incoming(i); ni != nil {
				busy[ni.NodeID], taken[ni.Addr] = true, true
			}
		}
	}
	drained := l.drains.drained()
	n := 0
	for _, v := range l.tr.views(now) {
		v.OwesFlush = l.owed.owes(v.ID)
		v.Released = l.rolls.released(v.ID)
		if !busy[v.ID] && !taken[v.Addr] && !drained[v.AZ] && v.EligibleSpare() {
			n++
		}
	}
	return n
}

// tookLastSpare reports whether the placements done took a ready spare
// (a node of an undrained zone: a return step places the drained zone's
// own) and the pool has none left after them (left).
func tookLastSpare(done []slotplan.Placement, drained map[string]bool, left int) bool {
	if left > 0 {
		return false
	}
	return slices.ContainsFunc(done, func(p slotplan.Placement) bool { return !drained[p.Node.AZ] })
}

// lastSpareEvent adds that the placements done took the pool's last ready
// spare; drained are the drained zones.
func lastSpareEvent(r *report, done []slotplan.Placement, drained map[string]bool) {
	var last slotplan.Placement
	for _, p := range done {
		if !drained[p.Node.AZ] {
			last = p
		}
	}
	slot := last.Slot
	r.tracedEvent(mcribapi.Event{Kind: mcribapi.EventLastSpare, Node: last.Node.ID, Slot: &slot,
		Reason: fmt.Sprintf("%s took slot %d: %s", last.Node.ID, last.Slot, lastSpareSentence(len(drained) > 0))})
}
