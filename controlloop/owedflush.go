package controlloop

import (
	"cmp"
	"context"
	"fmt"
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

// flushDue reports whether the leader decides now that s owes a flush:
// a slot holder unreachable by the pool's verdict for longer than the
// flush-after threshold, outside a mass episode. pending is set while more
// holders than the mass fraction are failing (massPending): the episode may
// be about to be taken as the observer's fault, so nothing is decided yet.
func (t *tracker) flushDue(s *nodeState, pending bool, now time.Time) bool {
	if !s.holdsSlot || pending {
		return false
	}
	if s.reachable {
		// An episode that ended since this process's last pass: due if it
		// lasted long enough, as a pass while it lasted would have seen.
		e := s.ended
		return e != nil && !e.observerFault && !e.stale &&
			(t.cfg.FlushAfter <= 0 || e.until.Sub(e.since) > t.cfg.FlushAfter)
	}
	if s.observerFault || s.staleEpisode(t.cfg.Reverted) {
		return false
	}
	return t.cfg.FlushAfter <= 0 || now.Sub(s.unreachableSince) > t.cfg.FlushAfter
}

// judgedEnded forgets the episodes that ended since the last pass: this
// pass looked at them. A follower's pass forgets them too: the leader of
// the moment decides, and one that leads later does not revisit them.
func (t *tracker) judgedEnded() {
	for _, s := range t.nodes {
		s.ended = nil
	}
}

// episode returns when s's episode of unreachability, the current one or
// the one that ended since the last pass, began and ended (until is now
// while it lasts).
func (s *nodeState) episode(now time.Time) (since, until time.Time) {
	if s.reachable && s.ended != nil {
		return s.ended.since, s.ended.until
	}
	return s.unreachableSince, now
}

// staleEpisode reports whether s's episode of unreachability, as the
// pool's verdict has it, began before the node was last known empty (this
// process saw it placed into its slot, flushed it, or saw its owed flush
// end) while none of this process's own probes failed since: that flush
// answered after the failures the votes report, and emptied the node, so
// they are no evidence that it missed a delete since. (The replicas' votes
// lag their probes: a node that paused just before its placement or a
// flush is voted unreachable just after it, and flushed for nothing.)
//
// With revert.VotesLagPlacement the placement, and with
// revert.VotesLagFlush the flush and the owed flush's end, do not count.
func (s *nodeState) staleEpisode(reverted revert.Set) bool {
	var clean time.Time
	if !reverted.Reverted(revert.VotesLagPlacement) {
		clean = s.placedAt
	}
	if !reverted.Reverted(revert.VotesLagFlush) {
		for _, t := range []time.Time{s.flushedAt, s.owedCleared} {
			if t.After(clean) {
				clean = t
			}
		}
	}
	return !clean.IsZero() && s.unreachableSince.Before(clean) && !s.lastFailed.After(clean)
}

// flushDueAt returns when s's flush would be due, and false when it will
// not be due by the passing of time alone.
func (t *tracker) flushDueAt(s *nodeState) (time.Time, bool) {
	if s.reachable || !s.holdsSlot || s.observerFault || t.cfg.FlushAfter <= 0 || s.staleEpisode(t.cfg.Reverted) {
		return time.Time{}, false
	}
	return s.unreachableSince.Add(t.cfg.FlushAfter + time.Millisecond), true
}

// massPending reports whether more slot holders than the mass fraction are
// unreachable or failing their probes at once. The probes of a pool are
// spread over a probe interval, so in an episode of the observer's fault
// the first verdicts turn while the others are still failing, before the
// mass rule (checkMass) sees them all: no flush is decided meanwhile.
func (t *tracker) massPending() bool {
	holders, failing := 0, 0
	for _, s := range t.nodes {
		if !s.holdsSlot {
			continue
		}
		holders++
		if !s.reachable || (s.probed && !s.failingSince.IsZero()) || t.peerListed(s.node.ID) {
			failing++
		}
	}
	tripped, _ := t.cfg.Mass.CheckUnreachable(holders, failing)
	return tripped
}

// peerListed reports whether a live replica's vote lists node id.
func (t *tracker) peerListed(id string) bool {
	for _, p := range t.peers {
		if _, ok := p[id]; ok {
			return true
		}
	}
	return false
}

// owedEntry returns the entry of the flush s owes, decided at now.
func (t *tracker) owedEntry(s *nodeState, now time.Time) OwedFlush {
	since, until := s.episode(now)
	e := OwedFlush{NodeID: s.node.ID, Addr: s.node.Addr, Since: since.UTC()}
	if s.haveDownStats {
		e.CmdFlush, e.PID = s.downStats.CmdFlush, s.downStats.PID
		e.StartedAt = s.downStatsAt.Add(-s.downStats.Uptime).UTC()
		// With revert.FlushBaseCounted any reading is a base.
		e.CmdFlushUnknown = !s.downCounted && !t.cfg.Reverted.Reverted(revert.FlushBaseCounted)
	}
	if t.cfg.FlushAfter <= 0 {
		e.Reason = "unreachable by the pool's verdict (--flush-after-unreachable 0s): it may have missed deletes"
	} else {
		e.Reason = fmt.Sprintf("unreachable by the pool's verdict for %s, longer than --flush-after-unreachable (%s): it may have missed deletes",
			until.Sub(since).Round(time.Millisecond), t.cfg.FlushAfter)
	}
	if s.reachable {
		e.Reason += " (it answered again before a pass looked)"
	}
	return e
}

// flushDone reports whether the flush e owes is done already, and why: the
// pool's verdict has the node answering, this process read it since it
// came back, and the reading shows a flush since (cmd_flush above the
// stored count, when that count is known to count every earlier flush) or
// another memcached (another pid, or a restart seen by this process's own
// readings before and after) that has not stopped answering since
// (restartClean; with revert.RestartEndsCleanOnly any restart). A start time written by another host is never compared
// with this process's clock: a restart shows in the pid, or in this
// process's own readings, and when it happened in the reading's uptime.
func (t *tracker) flushDone(e OwedFlush, s *nodeState) (bool, string) {
	if s == nil || !s.reachable || !s.haveStats || s.statsAt.Before(s.answersSince) {
		return false, ""
	}
	started := s.statsAt.Add(-s.stats.Uptime)
	switch {
	case e.PID == 0:
		// Decided from no reading: a memcached that started after the
		// episode began, as this process saw it, is empty of its misses.
		if !s.downSince.IsZero() && started.After(s.downSince) && (t.restartClean(s) || t.cfg.Reverted.Reverted(revert.RestartEndsCleanOnly)) {
			return true, "its memcached started after the node became unreachable: it is empty"
		}
		return false, ""
	case s.stats.CmdFlush > e.CmdFlush && s.stats.PID == e.PID && !e.CmdFlushUnknown:
		return true, fmt.Sprintf("it was flushed since (cmd_flush %d, was %d)", s.stats.CmdFlush, e.CmdFlush)
	case !t.restartClean(s) && !t.cfg.Reverted.Reverted(revert.RestartEndsCleanOnly):
		return false, ""
	case s.stats.PID != e.PID:
		return true, fmt.Sprintf("its memcached restarted (pid %d, was %d): it is empty", s.stats.PID, e.PID)
	case s.restarted && s.haveDownStats && s.downStats.PID == e.PID && s.downStats.CmdFlush == e.CmdFlush:
		return true, "its memcached restarted (its uptime went back): it is empty"
	}
	return false, ""
}

// restartClean reports whether the memcached s's last reading shows is
// empty of anything stale: since it started (a second later: memcached
// counts its uptime in whole seconds), this process's probes of it never
// failed without a break for a whole probe interval (what makes a node
// unreachable, invariant 7) and for longer than --flush-after-unreachable.
// A memcached that restarted and then stopped answering again (a pause, a
// cut link) took writes after its start and may have missed deletes since.
func (t *tracker) restartClean(s *nodeState) bool {
	started := s.statsAt.Add(time.Second - s.stats.Uptime)
	long := max(t.cfg.ProbeInterval, t.cfg.FlushAfter)
	stretches := s.failures
	if !s.failingSince.IsZero() {
		stretches = append(slices.Clone(stretches), failStretch{from: s.failingSince, to: s.lastFailed})
	}
	for _, f := range stretches {
		from := f.from
		if from.Before(started) {
			from = started
		}
		if f.to.Sub(from) >= long && (t.cfg.FlushAfter <= 0 || f.to.Sub(from) > t.cfg.FlushAfter) {
			return false
		}
	}
	return true
}

// owedBaseLocked returns the flushes the pool owes as st has them, read
// at now, and records them as this process's view (Loop.Status shows them). A corrupt
// document is read the safe way: the entries of the last good document
// this process read, and every slot holder the corrupt text names (each
// with an unknown base, so only a flush or its leaving the slot ends it);
// the leader's next write replaces it. With revert.ForgottenFlush the
// owed flushes live in this process's memory only, as they once did. l.mu
// must be held.
func (l *Loop) owedBaseLocked(st Snapshot, now time.Time) []OwedFlush {
	if l.reverted.Reverted(revert.ForgottenFlush) {
		l.owed.known = l.owed.mem
		return slices.Clone(l.owed.mem)
	}
	defer l.tr.sawOwed(l.owed.known, now)
	base := slices.Clone(st.Flushes)
	if slices.Contains(st.Corrupt, kvlayout.Flushes) {
		for _, e := range l.owed.good {
			if i := owedIndex(base, e.NodeID); i >= 0 {
				base[i] = e
			} else {
				base = append(base, e)
			}
		}
	} else {
		l.owed.good = slices.Clone(st.Flushes)
	}
	slices.SortFunc(base, func(a, b OwedFlush) int { return cmp.Compare(a.NodeID, b.NodeID) })
	l.owed.known = base
	return slices.Clone(base)
}

// decideFlushesLocked returns base with the flushes the leader decides
// now: one entry for each slot holder of prev whose flush is due and that
// owes none yet, in ID order; r tells each. The old path
// (revert.FollowerFlush) decides none: each replica marks returning nodes
// itself (tracker.returned). l.mu must be held.
func (l *Loop) decideFlushesLocked(prev *cachenodes.SlotMap, base []OwedFlush, now time.Time, r *report) []OwedFlush {
	defer l.tr.judgedEnded()
	if prev == nil || l.tr.cfg.LegacyFlush {
		return base
	}
	pending := l.tr.massPending()
	var added []OwedFlush
	for id, s := range l.tr.nodes {
		if prev.SlotOf(id) < 0 || owedIndex(base, id) >= 0 || !l.tr.flushDue(s, pending, now) {
			continue
		}
		added = append(added, l.tr.owedEntry(s, now))
	}
	slices.SortFunc(added, func(a, b OwedFlush) int { return cmp.Compare(a.NodeID, b.NodeID) })
	for _, e := range added {
		r.log(slog.LevelWarn, "flush owed", "node", e.NodeID, "addr", e.Addr, "since", e.Since, "reason", e.Reason)
		r.event(mcribapi.Event{Kind: mcribapi.EventFlushOwed, Node: e.NodeID, Reason: e.Reason + "; flushed when it answers again, before it serves"})
	}
	return append(base, added...)
}

// owedToFlushLocked returns the nodes of owed that the leader flushes in
// this pass: slot holders of prev that answer by the pool's verdict and
// whose flush is not done already, in ID order; it marks them flushing.
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
// in this pass, before its decision is stored). l.mu must be held.
func (l *Loop) owedToFlushLocked(prev *cachenodes.SlotMap, owed, base []OwedFlush, frozen bool) (out []cachenodes.Node, stored bool) {
	if frozen || prev == nil {
		return nil, false
	}
	for i := range owed {
		e := &owed[i]
		s := l.tr.nodes[e.NodeID]
		if s == nil || !s.reachable || prev.SlotOf(e.NodeID) < 0 {
			continue
		}
		if owedIndex(base, e.NodeID) < 0 && !l.reverted.Reverted(revert.StoredBeforeFlush) {
			stored = true
			continue
		}
		if done, _ := l.tr.flushDone(*e, s); done {
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

// flushOwed flushes nodes, the slot holders that owe a flush, and returns
// those flushed; r tells each flush.
func (l *Loop) flushOwed(ctx context.Context, nodes []cachenodes.Node, r *report) map[string]bool {
	flushed := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		err := l.opts.Prober.Flush(ctx, n.Addr)
		l.setFlushing(n.ID, false)
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

// settleOwedLocked returns what owed becomes with next written: an entry
// goes when this pass flushed its node, when its flush is done already,
// or when its node holds no slot in next and warms none; r tells why each
// went. l.mu must be held.
func (l *Loop) settleOwedLocked(owed []OwedFlush, flushed map[string]bool, next *cachenodes.SlotMap, r *report) []OwedFlush {
	out := make([]OwedFlush, 0, len(owed))
	for _, e := range owed {
		switch done, why := l.tr.flushDone(e, l.tr.nodes[e.NodeID]); {
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

// owes reports whether the flushes this process knows name node id. l.mu
// must be held.
func (l *Loop) owesLocked(id string) bool { return owedIndex(l.owed.known, id) >= 0 }

// FlushesOwed returns the flushes the pool owes as this process knows them
// (the stored document, or this leader's last write), by node ID.
func (l *Loop) FlushesOwed() []OwedFlush {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.owed.known)
}

// untilFlushDecisionLocked returns how long until the next flush decision
// is due by the passing of time alone (a slot holder's verdict holding
// longer than --flush-after-unreachable), or a negative duration when none
// is. l.mu must be held.
func (l *Loop) untilFlushDecisionLocked(now time.Time) time.Duration {
	next := time.Duration(-1)
	for id, s := range l.tr.nodes {
		at, ok := l.tr.flushDueAt(s)
		if !ok || l.owesLocked(id) {
			continue
		}
		if d := max(at.Sub(now), 0); next < 0 || d < next {
			next = d
		}
	}
	return next
}
