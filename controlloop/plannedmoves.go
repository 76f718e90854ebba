package controlloop

import (
	"time"

	"github.com/mcrib/mcrib/cachenodes"
)

// No planned move cuts the boot limit by itself (section 7). A planned
// move (a drain or return step, a replace, the maintenance of a node that
// answers) costs its slot some misses: a cold move starts the slot empty,
// and a warm one fills the new holder only as the slot is read, leaving
// what was not read during the warming to miss afterwards. HitCounters
// marks the nodes of such a slot Planned while it warms and for
// Options.SettleAfterMove after the move or the end of its warming, and the
// boot limiter leaves them out of its input; the pool's hit rate still
// counts them.
//
// Any replica tells a planned move from a replacement by the map alone: a
// slot whose holder changed while the old holder answered (by the pool's
// verdict) was moved by plan, since a replacement takes the slot only of a
// holder that stopped answering. So a follower that takes over carries on
// the marks of the moves it saw.

// plannedMoves holds when a planned move last touched each slot (it
// moved, or its warming ended), by slot, and how long such a slot stays
// marked. Its zero value marks nothing past the move; it is not safe for
// concurrent use (the Loop's mutex guards it).
type plannedMoves struct {
	at map[int]time.Time
	// settle is how long a planned move's slot stays marked after the
	// move or the end of its warming.
	settle time.Duration
}

// defaultSettleProbes is Options.SettleAfterMove, in probe intervals, when
// it is zero.
const defaultSettleProbes = 3

// settleAfterMove returns how long a planned move's slot stays marked
// after the move or the end of its warming: Options.SettleAfterMove, or
// defaultSettleProbes probe intervals.
func settleAfterMove(opts Options) time.Duration {
	if d := opts.SettleAfterMove; d > 0 {
		return d
	}
	return defaultSettleProbes * opts.ProbeInterval
}

// note records, at now, the slots that next changes from prev by plan:
// its holder changed while the old one answered (by the verdicts of tr,
// those of the pass), or its warming ended. It tells tr of each node
// placed.
func (p *plannedMoves) note(tr *tracker, prev, next *cachenodes.SlotMap, now time.Time) {
	if prev == nil || next == nil || prev == next {
		return
	}
	for i := range min(prev.NumSlots(), next.NumSlots()) {
		was, is := prev.Slot(i), next.Slot(i)
		if !is.IsZero() && was.ID != is.ID {
			tr.placed(is.ID, now)
		}
		planned := false
		if !was.IsZero() && !is.IsZero() && was.ID != is.ID {
			s, known := tr.nodes[was.ID]
			planned = known && s.reachable
		}
		if prev.Warming(i) != nil && next.Warming(i) == nil {
			planned = true // the warming ended: what was not read misses now
		}
		if planned {
			if p.at == nil {
				p.at = make(map[int]time.Time)
			}
			p.at[i] = now
		}
	}
}

// planned reports whether slot i of m, the current map, is marked for a
// planned move at now: it warms, or a planned move touched it within the
// settle time. It forgets the marks that ended.
func (p *plannedMoves) planned(m *cachenodes.SlotMap, i int, now time.Time) bool {
	if m != nil && m.Warming(i) != nil {
		return true
	}
	at, ok := p.at[i]
	if !ok {
		return false
	}
	if now.Sub(at) >= p.settle {
		delete(p.at, i)
		return false
	}
	return true
}
