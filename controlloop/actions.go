package controlloop

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/slotplan"
)

// returning lists the slot holders of m that answer again after an
// unreachability that needs a flush, in the order of their IDs (so that a
// pass flushes them in an order fixed by what it saw, not by how a map
// iterates), and marks them flushing.
func (t *tracker) returning(m *cachenodes.SlotMap) []cachenodes.Node {
	var out []cachenodes.Node
	for id, s := range t.nodes {
		if s.needsFlush && s.reachable && m != nil && m.SlotOf(id) >= 0 {
			s.flushing = true
			out = append(out, s.node)
		}
	}
	slices.SortFunc(out, func(a, b cachenodes.Node) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// flushReturning flushes slot holders that may have missed deletes while
// they were unreachable, before they count as serving again; r tells each
// flush.
func (l *Loop) flushReturning(ctx context.Context, nodes []cachenodes.Node, r *report) {
	for _, n := range nodes {
		err := l.opts.Prober.Flush(ctx, n.Addr)
		l.mu.Lock()
		if s, ok := l.tr.nodes[n.ID]; ok {
			s.flushing = false
			if err == nil {
				s.needsFlush = false
				l.tr.flushed(n.ID, l.clock.Now())
			}
		}
		l.mu.Unlock()
		if err != nil {
			r.log(slog.LevelWarn, "flushing a returning node failed; retrying next pass", "node", n.ID, "addr", n.Addr, "err", err)
			continue
		}
		r.count(flushCount("returned"))
		flushEvent(r, n.ID, "it answers again after an unreachability long enough to have missed deletes")
		r.log(slog.LevelInfo, "flushed a node that was unreachable, before it serves again", "node", n.ID, "addr", n.Addr)
	}
}

// place carries out the placements of plan: each spare is flushed first
// (but in the first fill of a new pool); a spare whose flush fails is not
// placed. It returns the placements carried out; r tells each flush.
func (l *Loop) place(ctx context.Context, plan slotplan.Plan, r *report) []slotplan.Placement {
	if plan.FirstFill {
		return plan.Placements
	}
	done := make([]slotplan.Placement, 0, len(plan.Placements))
	for _, p := range plan.Placements {
		l.setFlushing(true, p.Node)
		err := l.opts.Prober.Flush(ctx, p.Node.Addr)
		l.setFlushing(false, p.Node)
		if err != nil {
			r.log(slog.LevelWarn, "flushing a spare before placing it failed; it is not placed", "node", p.Node.ID, "slot", p.Slot, "err", err)
			continue
		}
		l.noteFlushed(p.Node.ID)
		r.count(flushCount("placement"))
		flushEvent(r, p.Node.ID, fmt.Sprintf("a spare flushed before it takes slot %d", p.Slot))
		done = append(done, p)
	}
	return done
}

// setFlushing marks nodes flushing (on) or not: a flush of them is under
// way, or it ended (or did not happen: the marks of tracker.returning and
// owedState.toFlush are undone so).
func (l *Loop) setFlushing(on bool, nodes ...cachenodes.Node) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range nodes {
		if s, ok := l.tr.nodes[n.ID]; ok {
			s.flushing = on
		}
	}
}

// flushCount counts one flush_all, by reason (FlushReasons).
func flushCount(reason string) func(Metrics) {
	return func(m Metrics) { m.Flush(reason) }
}
