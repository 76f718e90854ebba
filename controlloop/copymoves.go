package controlloop

import (
	"github.com/mcrib/mcrib/warmcopy"
)

// The loop's side of the leader's copies (warmcopies.go): after every
// pass it tells them which warming moves to copy now.

// syncCopies brings the copies in line with the current map after a
// pass: one for each warming slot (a twin's too) that has not ended,
// while this process leads, both nodes answer (by the pool's verdict) and
// the warm source owes no flush.
func (l *Loop) syncCopies() {
	if l.copies.copier == nil {
		return
	}
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.current
	var moves []copyMove
	var keep map[warmcopy.Move]bool
	if m != nil && m.AnyWarming() {
		_, leading := l.lead.Lease()
		keep = make(map[warmcopy.Move]bool)
		for i := range m.NumSlots() {
			ws := m.Warming(i)
			if ws == nil {
				continue
			}
			holder := m.Slot(i)
			mv := warmcopy.Move{Source: ws.Addr, Target: holder.Addr, Slot: i, NumSlots: m.NumSlots()}
			keep[mv] = true
			if !leading || ws.Ended() || !now.Before(ws.ReadsUntil().Add(l.currentShift)) ||
				!l.tr.answers(ws.NodeID) || !l.tr.answers(holder.ID) || l.owed.owes(ws.NodeID) {
				continue
			}
			moves = append(moves, copyMove{move: mv, source: ws.NodeID, target: holder.ID})
		}
	}
	l.copies.want(moves, keep, func(id string) int64 {
		if s, ok := l.tr.nodes[id]; ok && s.haveStats {
			return s.stats.PID
		}
		return 0
	})
}

// answers reports whether node id answers by the pool's verdict.
func (t *tracker) answers(id string) bool {
	s, ok := t.nodes[id]
	return ok && s.probed && s.reachable
}

// WarmCopied returns what the leader's copies of this process did,
// summed: CopiedKeys and CopiedBytes are mcrib_warm_copied_keys_total and
// mcrib_warm_copied_bytes_total.
func (l *Loop) WarmCopied() warmcopy.Stats { return l.copies.totals() }
