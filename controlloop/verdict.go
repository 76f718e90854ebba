package controlloop

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/mcribapi"
)

// observeProbe takes one probe result for node id. holdsSlot tells whether
// the node holds a slot now: only a slot holder coming back from
// unreachability needs a flush (a spare is flushed when it is placed).
// A failure counts only once the node's probes have failed without a break
// for a whole probe interval (invariant 7); the pool's verdict then also
// weighs the other replicas' votes.
func (t *tracker) observeProbe(id string, st cachenodes.Stats, err error, holdsSlot bool, now time.Time) {
	s, ok := t.nodes[id]
	if !ok {
		return
	}
	s.holdsSlot = holdsSlot
	if err != nil {
		if s.failingSince.IsZero() || !s.probed {
			s.failingSince = now
		}
		s.lastErr = err.Error()
		s.lastFailed = now
		s.probed = true
		if !s.localDown && now.Sub(s.failingSince) >= t.cfg.ProbeInterval {
			s.localDown = true
			t.localChanged = true
		}
		t.judge(s, now)
		return
	}
	if s.haveStats && (st.PID != s.stats.PID || st.Uptime < s.stats.Uptime) {
		s.restarted = true
		s.restarts++
		// Empty anyway: a flush marked due before this process saw the
		// restart (the other replicas' votes turned the verdict first) is
		// void, or it would stay due, the new count never passing the mark.
		s.needsFlush = false
	}
	s.statsAt, s.flushedSince = now, 0
	s.probed = true
	if !s.failingSince.IsZero() {
		s.failures = append(s.failures, failStretch{from: s.failingSince, to: s.lastFailed})
		if len(s.failures) > maxFailStretches {
			s.failures = s.failures[1:]
		}
	}
	s.failingSince = time.Time{}
	if s.localDown {
		s.localDown = false
		t.localChanged = true
	}
	s.stats, s.haveStats = st, true
	t.judge(s, now)
	if s.reachable && s.needsFlush && st.CmdFlush > s.flushMark {
		// A flush since the node went unreachable (by the leader, when
		// this process follows) did the job.
		s.needsFlush = false
	}
}

// setPeers takes the other live replicas' votes (replica ID → the nodes
// it cannot reach and since when) and judges every node again.
//
// The votes change at once, so the order is fixed: first the nodes whose
// verdict turns back, then the others, each in ID order. A node that
// answers again by these votes returns before the mass rule counts the
// nodes they turn unreachable (its episode was not part of theirs), and
// the outcome never hangs on a map's order.
func (t *tracker) setPeers(peers map[string]map[string]time.Time, now time.Time) {
	t.peers = peers
	ids := slices.Sorted(maps.Keys(t.nodes))
	for _, back := range []bool{true, false} {
		for _, id := range ids {
			s := t.nodes[id]
			if down, _ := t.verdict(s); (!down && !s.reachable) == back {
				t.judge(s, now)
			}
		}
	}
}

// verdict is the pool's view of s: unreachable when most of the replicas
// that observe it say so (this process counts once it has probed the node;
// every live replica that published votes counts), since the moment the
// last of that majority began to count it unreachable.
func (t *tracker) verdict(s *nodeState) (unreachable bool, since time.Time) {
	var votes []time.Time
	voters := len(t.peers)
	if s.probed {
		voters++
		if s.localDown {
			votes = append(votes, s.failingSince)
		}
	}
	for _, p := range t.peers {
		if at, ok := p[s.node.ID]; ok {
			votes = append(votes, at)
		}
	}
	need := voters/2 + 1
	if voters == 0 || len(votes) < need {
		return false, time.Time{}
	}
	slices.SortFunc(votes, func(a, b time.Time) int { return a.Compare(b) })
	return true, votes[need-1]
}

// judge applies the pool's verdict on s: the transitions, the flap, the
// flush mark of a returning slot holder and the mass rule.
func (t *tracker) judge(s *nodeState, now time.Time) {
	down, since := t.verdict(s)
	switch {
	case down && s.reachable:
		wasHealthy := s.healthy()
		s.reachable = false
		s.unreachableSince = since
		s.ended = nil
		s.downStats, s.downStatsAt, s.haveDownStats, s.restarted = s.stats, s.statsAt, s.haveStats, false
		s.downCounted = s.haveStats && s.countsEveryFlush(s.statsAt)
		// A flush this process made after that reading raised cmd_flush:
		// the count to pass is the raised one, or the flush would count as
		// done on return.
		s.downStats.CmdFlush += s.flushedSince
		detail := s.lastErr
		if len(t.peers) > 0 {
			detail = fmt.Sprintf("%s (most of the %d replicas agree)", cmp.Or(detail, "unreachable from the other replicas"), len(t.peers)+1)
		}
		t.event(s.node.ID, mcribapi.EventNodeUnreachable, cmp.Or(detail, "probes failed"))
		if wasHealthy {
			s.penalty.Flap(now, t.cfg.Damping)
		}
		if s.holdsSlot {
			t.checkMass(now)
		}
	case down && since.After(s.unreachableSince):
		// A vote that came later moves the majority's moment later.
		s.unreachableSince = since
	case !down && !s.reachable:
		t.returned(s, now)
	}
}

// countsEveryFlush reports whether a reading of s taken at at counts
// every flush a leader made of it: it was taken after this process saw
// the node's latest placement and the end of its latest owed flush, and
// while none was owed.
func (s *nodeState) countsEveryFlush(at time.Time) bool {
	return !s.owedSeen && !at.Before(s.placedAt) && !at.Before(s.owedCleared)
}

// placed records that node id entered a slot at now, as this process
// learned from the slot map: its readings from before do not count that
// placement's flush.
func (t *tracker) placed(id string, now time.Time) {
	if s := t.nodes[id]; s != nil {
		s.placedAt = now
		s.voidBase(now)
	}
}

// sawOwed records the owed flushes this process read at now: a node whose
// entry is gone was flushed, or left its slot, meanwhile.
func (t *tracker) sawOwed(owed []OwedFlush, now time.Time) {
	for id, s := range t.nodes {
		switch owes := owedIndex(owed, id) >= 0; {
		case owes:
			s.owedSeen = true
		case s.owedSeen:
			s.owedSeen, s.owedCleared = false, now
			s.voidBase(now)
		}
	}
}

// voidBase drops the cmd_flush of the reading kept from before s's
// episode of unreachability, when there is one, as a base for an owed
// flush: a flush this process learned of at now may have come after it.
// (Its pid still tells a restart.)
func (s *nodeState) voidBase(now time.Time) {
	if !s.reachable && s.haveDownStats && s.downStatsAt.Before(now) {
		s.downCounted = false
	}
}

// returned handles a node whose verdict turned back to reachable. Whether
// it owes a flush was the leader's decision while it was unreachable
// (owedflush.go); only the old path (trackerConfig.LegacyFlush) decides
// here, by this process's own timing.
func (t *tracker) returned(s *nodeState, now time.Time) {
	downFor := now.Sub(s.unreachableSince)
	detail := "answers probes again after " + downFor.Round(time.Millisecond).String()
	switch {
	case s.restarted:
		detail += "; memcached restarted meanwhile (empty)"
		s.needsFlush = false
	case s.observerFault:
		detail += "; it was unreachable in a mass episode taken as the observer's fault: contents kept"
	case t.cfg.LegacyFlush && s.holdsSlot && (t.cfg.FlushAfter == 0 || downFor > t.cfg.FlushAfter):
		s.needsFlush = true
		s.flushMark = s.stats.CmdFlush
		if s.haveDownStats {
			// The count before the node went away: a flush by anyone since
			// shows as a higher count.
			s.flushMark = s.downStats.CmdFlush
		}
		detail += "; it may have missed deletes: flush before it serves again"
	case t.cfg.LegacyFlush && s.holdsSlot:
		detail += "; within --flush-after-unreachable, contents kept"
	}
	t.event(s.node.ID, mcribapi.EventNodeReachable, detail)
	// The episode lasted at least until the last evidence of it: this
	// process's last failed probe, or now when the votes alone held it.
	until := now
	if s.lastFailed.After(s.unreachableSince) && s.lastFailed.Before(now) {
		until = s.lastFailed
	}
	s.ended = &endedEpisode{since: s.unreachableSince, until: until, observerFault: s.observerFault, stale: s.staleEpisode(t.cfg.Reverted)}
	s.reachable = true
	s.downSince, s.unreachableSince = s.unreachableSince, time.Time{}
	s.answersSince = now
	s.observerFault = false
	if t.mass != "" {
		t.checkMass(now)
	}
}

// checkMass applies the mass rule of invariant 7: while more than the
// guard's fraction of the slot holders are unreachable at once, every one
// of them is marked as unreachable through the observer's fault. The
// episode ends once the count has stayed at or below the fraction for two
// probe intervals (the holders return one by one, each at its next probe);
// the holders still unreachable then start their own clock.
func (t *tracker) checkMass(now time.Time) {
	holders, down := 0, 0
	for _, s := range t.nodes {
		if s.holdsSlot {
			holders++
			if !s.reachable {
				down++
			}
		}
	}
	tripped, reason := t.cfg.Mass.CheckUnreachable(holders, down)
	switch {
	case tripped:
		if t.mass == "" {
			t.event("", mcribapi.EventObserverFault, reason)
		}
		t.mass, t.massQuietSince = reason, time.Time{}
		for _, s := range t.nodes {
			if s.holdsSlot && !s.reachable {
				s.observerFault = true
			}
		}
	case t.mass == "":
	case t.massQuietSince.IsZero():
		t.massQuietSince = now
	case now.Sub(t.massQuietSince) >= 2*t.cfg.ProbeInterval:
		t.mass, t.massQuietSince = "", time.Time{}
		t.event("", mcribapi.EventObserverFaultOver, "fewer slot holders are unreachable at once")
		for _, s := range t.nodes {
			if s.observerFault && !s.reachable {
				s.observerFault = false
				s.unreachableSince = now
			}
		}
	}
}

// localVotes returns the nodes this process cannot reach and since when:
// its vote for the other replicas.
func (t *tracker) localVotes() map[string]time.Time {
	out := make(map[string]time.Time)
	for id, s := range t.nodes {
		if s.localDown {
			out[id] = s.failingSince
		}
	}
	return out
}

// takeLocalChange reports whether this process's vote changed since the
// last call.
func (t *tracker) takeLocalChange() bool {
	c := t.localChanged
	t.localChanged = false
	return c
}
