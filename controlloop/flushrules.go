package controlloop

import (
	"fmt"
	"slices"
	"time"

	"github.com/mcrib/mcrib/internal/revert"
)

// The tracker's rules of the owed flushes (owedflush.go): when a slot
// holder's flush is due, when an episode counts, and when a flush owed is
// done already. They read the nodes' state and change nothing but the
// episodes a pass judged.

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
