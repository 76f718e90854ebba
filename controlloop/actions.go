package controlloop

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/slotplan"
)

// returningLocked lists the slot holders of m that answer again after an
// unreachability that needs a flush, in the order of their IDs (so that a
// pass flushes them in an order fixed by what it saw, not by how a map
// iterates), and marks them flushing. l.mu must be held.
func (l *Loop) returningLocked(m *cachenodes.SlotMap) []cachenodes.Node {
	var out []cachenodes.Node
	for id, s := range l.tr.nodes {
		if s.needsFlush && s.reachable && m != nil && m.SlotOf(id) >= 0 {
			s.flushing = true
			out = append(out, s.node)
		}
	}
	slices.SortFunc(out, func(a, b cachenodes.Node) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// unmarkFlushing undoes returningLocked's marks when the flushes do not
// happen.
func (l *Loop) unmarkFlushing(nodes []cachenodes.Node) {
	for _, n := range nodes {
		l.setFlushing(n.ID, false)
	}
}

// flushReturning flushes slot holders that may have missed deletes while
// they were unreachable, before they count as serving again.
func (l *Loop) flushReturning(ctx context.Context, nodes []cachenodes.Node) {
	for _, n := range nodes {
		err := l.opts.Prober.Flush(ctx, n.Addr)
		l.mu.Lock()
		if s, ok := l.tr.nodes[n.ID]; ok {
			s.flushing = false
			if err == nil {
				s.needsFlush = false
				l.tr.flushed(n.ID)
			}
		}
		l.mu.Unlock()
		if err != nil {
			l.opts.Logger.Warn("flushing a returning node failed; retrying next pass", "node", n.ID, "addr", n.Addr, "err", err)
			continue
		}
		l.opts.Metrics.Flush("returned")
		l.emitFlush(ctx, n.ID, "it answers again after an unreachability long enough to have missed deletes")
		l.opts.Logger.Info("flushed a node that was unreachable, before it serves again", "node", n.ID, "addr", n.Addr)
	}
}

// place carries out the placements of plan: each spare is flushed first
// (but in the first fill of a new pool); a spare whose flush fails is not
// placed. It returns the placements carried out.
func (l *Loop) place(ctx context.Context, plan slotplan.Plan) []slotplan.Placement {
	if plan.FirstFill {
		return plan.Placements
	}
	done := make([]slotplan.Placement, 0, len(plan.Placements))
	for _, p := range plan.Placements {
		l.setFlushing(p.Node.ID, true)
		err := l.opts.Prober.Flush(ctx, p.Node.Addr)
		l.setFlushing(p.Node.ID, false)
		if err != nil {
			l.opts.Logger.Warn("flushing a spare before placing it failed; it is not placed", "node", p.Node.ID, "slot", p.Slot, "err", err)
			continue
		}
		l.noteFlushed(p.Node.ID)
		l.opts.Metrics.Flush("placement")
		l.emitFlush(ctx, p.Node.ID, fmt.Sprintf("a spare flushed before it takes slot %d", p.Slot))
		done = append(done, p)
	}
	return done
}

func (l *Loop) setFlushing(id string, on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s, ok := l.tr.nodes[id]; ok {
		s.flushing = on
	}
}

// logChange logs the replacements and placements of a written map.
func (l *Loop) logChange(prev, next *cachenodes.SlotMap, plan slotplan.Plan, done []slotplan.Placement) {
	for _, ev := range plan.Evictions {
		if !ev.Move {
			l.opts.Logger.Warn("slot replacement", "slot", ev.Slot, "node", ev.Node.ID, "reason", ev.Reason, "why", ev.Why)
		}
	}
	for _, p := range done {
		if p.From.IsZero() || p.Reason == "hold_expired" || (p.Reason == "maintenance" && !p.Warm) {
			l.opts.Logger.Info("slot placement", "slot", p.Slot, "node", p.Node.ID, "addr", p.Node.Addr, "flushed", !plan.FirstFill)
			continue
		}
		l.opts.Logger.Info("slot move", "slot", p.Slot, "from", p.From.ID, "to", p.Node.ID, "reason", p.Reason, "kind", moveKind(p.Warm && l.opts.WarmFor > 0))
	}
	for _, i := range plan.EndWarming {
		l.opts.Logger.Info("warming over", "slot", i)
	}
	if prev == nil || prev.Generation() != next.Generation() {
		l.opts.Logger.Info("slot map written", "generation", next.Generation())
	}
}
