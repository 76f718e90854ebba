package controlloop

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/kvlayout"
	"github.com/mcrib/mcrib/internal/revert"
	"github.com/mcrib/mcrib/mcribapi"
)

// Owed flushes (invariant 2). Whether a slot holder owes a flush is one
// decision of the pool, made by the leader of the moment while the node is
// still unreachable: the moment the pool's verdict has held longer than
// --flush-after-unreachable (at once with 0s), counted from the episode's
// start as the verdict has it (the replicas' votes, so a failover does not
// restart the count), never in an episode taken as the observer's fault.
// The decision is stored in the flushes document, in the transaction that
// writes the slot map, and nobody revisits it: a node that answers before
// it owes nothing for the episode, whichever replica leads later.
// Followers only show the entries (flush_pending). Whichever leader comes
// next carries an entry out: when the node answers and no freeze holds, it
// confirms the lock, flushes the node and removes the entry in the same
// pass's write. An entry ends only when it is done (the node's cmd_flush
// above the stored count, another pid, or a restart this process saw
// itself) or when the node holds no slot and warms none.

// owedState is the flushes the pool owes as this process knows them.
type owedState struct {
	// known is the last flushes document read, or this leader's last
	// write; good is the last document read that parsed; mem is the owed
	// flushes of the old in-memory path (revert.ForgottenFlush).
	known, good, mem []OwedFlush
}

// wrote makes owed, the flushes the pool owes after this leader's write,
// the ones known: kept in memory only on the old path (forgotten,
// revert.ForgottenFlush), the last good document when the write stored
// them (stored).
func (o *owedState) wrote(owed []OwedFlush, forgotten, stored bool) {
	o.known = owed
	switch {
	case forgotten:
		o.mem = owed
	case stored:
		o.good = owed
	}
}

// mayHaveWritten shows owed, the flushes of a write whose answer was lost
// (it may have been carried out), as known until a read of the store says
// otherwise: a flush decided stays flush_pending.
func (o *owedState) mayHaveWritten(owed []OwedFlush) { o.known = owed }

// take returns the flushes the pool owes as st has them, read at now,
// and records them as this process's view (Loop.Status shows them); tr
// learns them. A corrupt document is read the safe way: the entries of
// the last good document this process read, and every slot holder the
// corrupt text names (each with an unknown base, so only a flush or its
// leaving the slot ends it); the leader's next write replaces it. With
// revert.ForgottenFlush the owed flushes live in this process's memory
// only, as they once did.
func (o *owedState) take(st Snapshot, tr *tracker, now time.Time) []OwedFlush {
	if tr.cfg.Reverted.Reverted(revert.ForgottenFlush) {
		o.known = o.mem
		return slices.Clone(o.mem)
	}
	defer tr.sawOwed(o.known, now)
	base := slices.Clone(st.Flushes)
	if slices.Contains(st.Corrupt, kvlayout.Flushes) {
		for _, e := range o.good {
			if i := owedIndex(base, e.NodeID); i >= 0 {
				base[i] = e
			} else {
				base = append(base, e)
			}
		}
	} else {
		o.good = slices.Clone(st.Flushes)
	}
	slices.SortFunc(base, func(a, b OwedFlush) int { return cmp.Compare(a.NodeID, b.NodeID) })
	o.known = base
	return slices.Clone(base)
}

// decide returns base with the flushes the leader decides now: one entry
// for each slot holder of prev whose flush is due by tr and that owes none
// yet, in ID order; r tells each. The old path (revert.FollowerFlush)
// decides none: each replica marks returning nodes itself
// (tracker.returned).
func (o *owedState) decide(tr *tracker, prev *cachenodes.SlotMap, base []OwedFlush, now time.Time, r *report) []OwedFlush {
	defer tr.judgedEnded()
	if prev == nil || tr.cfg.LegacyFlush {
		return base
	}
	pending := tr.massPending()
	var added []OwedFlush
	for id, s := range tr.nodes {
		if prev.SlotOf(id) < 0 || owedIndex(base, id) >= 0 || !tr.flushDue(s, pending, now) {
			continue
		}
		added = append(added, tr.owedEntry(s, now))
	}
	slices.SortFunc(added, func(a, b OwedFlush) int { return cmp.Compare(a.NodeID, b.NodeID) })
	for _, e := range added {
		r.log(slog.LevelWarn, "flush owed", "node", e.NodeID, "addr", e.Addr, "since", e.Since, "reason", e.Reason)
		r.event(mcribapi.Event{Kind: mcribapi.EventFlushOwed, Node: e.NodeID, Reason: e.Reason + "; flushed when it answers again, before it serves"})
	}
	return append(base, added...)
}

// toFlush returns the nodes of owed that the leader flushes in this pass:
// slot holders of prev that answer by the pool's verdict (tr) and whose
// flush is not done already, in ID order; it marks them flushing.
// A freeze (an operator's or the automatic one) holds them back: they stay
// owed (flush_pending). An entry without a base (no pid: decided from no
// reading; or a cmd_flush that may miss a flush the pool made after it,
// which it would count as its own) first gets one, from this process's
// reading since the node answers again, and is flushed in a later pass: a
// flush whose write is lost then shows in cmd_flush to the next leader,
// which does not flush the node again. An entry this pass decided (not in
// base) for a node that answers already (its episode ended between two
// passes) is stored first and carried out by the next pass, like any
// other: stored is set then (with revert.StoredBeforeFlush it is flushed
// in this pass, before its decision is stored).
func (o *owedState) toFlush(tr *tracker, prev *cachenodes.SlotMap, owed, base []OwedFlush, frozen bool) (out []cachenodes.Node, stored bool) {
	if frozen || prev == nil {
		return nil, false
	}
	for i := range owed {
		e := &owed[i]
		s := tr.nodes[e.NodeID]
		if s == nil || !s.reachable || prev.SlotOf(e.NodeID) < 0 {
			continue
		}
		if owedIndex(base, e.NodeID) < 0 && !tr.cfg.Reverted.Reverted(revert.StoredBeforeFlush) {
			stored = true
			continue
		}
		if done, _ := tr.flushDone(*e, s); done {
			continue
		}
		if e.PID == 0 || e.CmdFlushUnknown {
			if s.haveStats && !s.statsAt.Before(s.answersSince) {
				e.PID, e.CmdFlush, e.CmdFlushUnknown = s.stats.PID, s.stats.CmdFlush+s.flushedSince, false
				e.StartedAt = s.statsAt.Add(-s.stats.Uptime).UTC()
			}
			continue
		}
		s.flushing = true
		out = append(out, s.node)
	}
	return out, stored
}

// settle returns what owed becomes with next written: an entry goes when
// this pass flushed its node, when its flush is done already (by tr), or
// when its node holds no slot in next and warms none; r tells why each
// went.
func (o *owedState) settle(tr *tracker, owed []OwedFlush, flushed map[string]bool, next *cachenodes.SlotMap, r *report) []OwedFlush {
	out := make([]OwedFlush, 0, len(owed))
	for _, e := range owed {
		switch done, why := tr.flushDone(e, tr.nodes[e.NodeID]); {
		case flushed[e.NodeID]:
		case done:
			r.log(slog.LevelInfo, "owed flush done", "node", e.NodeID, "why", why)
		case next.SlotOf(e.NodeID) < 0 && (!next.AnyWarming() || next.WarmingOf(e.NodeID) < 0):
			r.log(slog.LevelInfo, "owed flush dropped: the node holds no slot and warms none (its next placement flushes it)", "node", e.NodeID)
		default:
			out = append(out, e)
		}
	}
	return out
}

// owes reports whether the flushes known name node id.
func (o *owedState) owes(id string) bool { return owedIndex(o.known, id) >= 0 }

// untilDecision returns how long until the next flush decision is due by
// the passing of time alone (a slot holder's verdict in tr holding longer
// than --flush-after-unreachable), or a negative duration when none is.
func (o *owedState) untilDecision(tr *tracker, now time.Time) time.Duration {
	next := time.Duration(-1)
	for id, s := range tr.nodes {
		at, ok := tr.flushDueAt(s)
		if !ok || o.owes(id) {
			continue
		}
		if d := max(at.Sub(now), 0); next < 0 || d < next {
			next = d
		}
	}
	return next
}

// flushOwed flushes nodes, the slot holders that owe a flush, and returns
// those flushed; r tells each flush.
func (l *Loop) flushOwed(ctx context.Context, nodes []cachenodes.Node, r *report) map[string]bool {
	flushed := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		err := l.opts.Prober.Flush(ctx, n.Addr)
		l.setFlushing(false, n)
		if err != nil {
			r.log(slog.LevelWarn, "flushing a node that owes a flush failed; retrying next pass", "node", n.ID, "addr", n.Addr, "err", err)
			continue
		}
		l.noteFlushed(n.ID)
		flushed[n.ID] = true
		r.count(flushCount("returned"))
		flushEvent(r, n.ID, "it owes a flush (unreachable long enough to have missed deletes) and answers again")
		r.log(slog.LevelInfo, "flushed a node that owed a flush, before it serves again", "node", n.ID, "addr", n.Addr)
	}
	return flushed
}

// noteFlushed records a flush of node id that this process made.
func (l *Loop) noteFlushed(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tr.flushed(id, l.clock.Now())
}

// FlushesOwed returns the flushes the pool owes as this process knows them
// (the stored document, or this leader's last write), by node ID.
func (l *Loop) FlushesOwed() []OwedFlush {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.owed.known)
}
