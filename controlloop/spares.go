package controlloop

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcrib/mcrib/mcribapi"
)

// The pool's ready spares (section 7): what a replacement or a drain step
// can take. Taking the last of them is said in the drain and replace
// answers and in the events, and an answer that finds none names what
// would help.

// spareHelp is what gives the pool a spare again, for the sentences that
// find none.
func spareHelp(drained bool) string {
	if drained {
		return "add a memcached to the service, or undrain a zone"
	}
	return "add a memcached to the service"
}

// lastSpareSentence says that the pool has no ready spare left.
func lastSpareSentence(drained bool) string {
	return "the pool has no ready spare left outside the drained zones: a node that fails now leaves its slot vacant until one is added (" +
		spareHelp(drained) + ")"
}

// readySparesLocked counts the ready spares now: nodes that hold no slot
// and warm none, answer, are present in Consul and not in maintenance,
// owe no flush, are not held back by flap damping, are in no drained zone,
// and whose address no holder or warm source has. l.mu must be held.
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
		}
	}
	drained := l.drainedLocked()
	n := 0
	for _, v := range l.tr.views(now) {
		v.OwesFlush = owedIndex(l.owed, v.ID) >= 0
		if !busy[v.ID] && !taken[v.Addr] && !drained[v.AZ] && v.eligibleSpare() {
			n++
		}
	}
	return n
}

// noSpareWhy says why no node can take a slot: what every node without a
// slot is instead (by the counts of Input's nodes), and what would help.
func noSpareWhy(in Input, idx *assignIndex, warm warmState) string {
	var drained, warming, down, away, owing, damped int
	for j := range in.Nodes {
		v := &in.Nodes[j]
		switch {
		case idx.slotOf[j] >= 0:
		case warm.sources != nil && warm.sources[v.ID]:
			warming++
		case in.Drained[v.AZ]:
			drained++
		case !v.Reachable:
			down++
		case !v.Listed || !v.Present || v.Maintenance:
			away++
		case v.OwesFlush:
			owing++
		case v.Suppressed:
			damped++
		}
	}
	parts := []string{"holds a slot"}
	add := func(n int, what string) {
		switch {
		case n == 1:
			parts = append(parts, what+" (1 node)")
		case n > 1:
			parts = append(parts, fmt.Sprintf("%s (%d nodes)", what, n))
		}
	}
	add(drained, "is in a drained zone")
	add(warming, "is a warm source")
	add(down, "does not answer")
	add(away, "is absent from Consul or in maintenance")
	add(owing, "owes a flush")
	add(damped, "is held back by flap damping")
	list := parts[0]
	if len(parts) > 1 {
		list = strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
	}
	help := spareHelp(len(in.Drained) > 0)
	if warming > 0 {
		help += ", or wait until the warming ends"
	}
	return fmt.Sprintf("every node %s; %s", list, help)
}

// tookLastSpare reports whether the placements done took a ready spare
// (a node of an undrained zone: a return step places the drained zone's
// own) and the pool has none left after them (left).
func tookLastSpare(done []Placement, drained map[string]bool, left int) bool {
	if left > 0 {
		return false
	}
	return slices.ContainsFunc(done, func(p Placement) bool { return !drained[p.Node.AZ] })
}

// emitLastSpare tells that the placements done took the pool's last ready
// spare; drained are the drained zones.
func (l *Loop) emitLastSpare(ctx context.Context, done []Placement, drained map[string]bool) {
	var last Placement
	for _, p := range done {
		if !drained[p.Node.AZ] {
			last = p
		}
	}
	slot := last.Slot
	l.emitIn(ctx, mcribapi.Event{Kind: mcribapi.EventLastSpare, Node: last.Node.ID, Slot: &slot,
		Reason: fmt.Sprintf("%s took slot %d: %s", last.Node.ID, last.Slot, lastSpareSentence(len(drained) > 0))})
}
