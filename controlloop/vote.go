package controlloop

import (
	"context"
	"maps"
	"slices"
	"time"
)

// voteState is what this replica knows of the votes on unreachable nodes.
type voteState struct {
	// voted is the vote this replica last published, by the session that
	// holds it.
	voted map[string]time.Time
	by    string
	// replicas counts the live replicas seen in the last read (this one
	// included); sessions are their sessions, by replica ID.
	replicas int
	sessions map[string]string
}

// takeVotesLocked hands the other live replicas' votes to the tracker,
// their instants placed on this clock (remoteclock.go), counts the live
// replicas and returns the node transitions the votes caused, for the log.
// l.mu must be held.
func (l *Loop) takeVotesLocked(votes map[string]Vote, now time.Time) []nodeEvent {
	sessions := make(map[string]string, len(votes))
	for id, v := range votes {
		sessions[id] = v.Session
	}
	peers := l.remote.placeVotes(votes, l.opts.ReplicaID, now)
	l.votes.sessions = sessions
	l.votes.replicas = len(peers) + 1
	l.tr.setPeers(peers, now)
	return l.tr.drain()
}

// publishVote publishes this replica's vote when it changed, or when the
// session holding it changed (a new campaign), or when it is not yet seen
// among the live votes, stamped with now (its at). It needs a ReplicaID
// and a session; a failure is logged and retried next pass (the vote is
// advice, the pass goes on).
func (l *Loop) publishVote(ctx context.Context, now time.Time) {
	if l.opts.ReplicaID == "" {
		return
	}
	member, ok := l.lead.Member()
	if !ok {
		return
	}
	l.mu.Lock()
	changed := l.tr.takeLocalChange()
	mine := l.tr.localVotes()
	_, seen := l.votes.sessions[l.opts.ReplicaID]
	stale := changed || l.votes.by != member.Session() || !seen || !maps.Equal(mine, l.votes.voted)
	l.mu.Unlock()
	if !stale {
		return
	}
	if err := l.store.PutVote(ctx, l.opts.ReplicaID, Vote{Unreachable: mine, At: now.UTC()}, member); err != nil {
		l.opts.Logger.Warn("publishing this replica's vote on unreachable nodes failed; retrying next pass", "err", err)
		return
	}
	l.mu.Lock()
	l.votes.voted, l.votes.by = mine, member.Session()
	if l.votes.sessions == nil {
		l.votes.sessions = make(map[string]string)
	}
	l.votes.sessions[l.opts.ReplicaID] = member.Session()
	l.mu.Unlock()
}

// Replicas returns how many replicas of the pool are alive, as the last
// pass saw their votes (at least 1: this one). A follower that cannot
// reach the leader admits its share of the boot limit, the limit divided
// by this (invariant 8).
func (l *Loop) Replicas() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return max(l.votes.replicas, 1)
}

// ReplicaSession reports whether session is the session of a live replica
// of the pool (as the last pass saw the votes): a boot forwarded by a
// replica names it, and only those are admitted without forwarding again.
func (l *Loop) ReplicaSession(session string) bool {
	if session == "" {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.votes.sessions {
		if s == session {
			return true
		}
	}
	return false
}

// deleteGoneVotes deletes the vote keys no session holds any more (their
// replica is gone, section 2), each with check-and-set on the version
// read, so that a replica that just acquired its key again keeps it. Only
// the leader does; a failure is logged, and the next pass tries again.
func (l *Loop) deleteGoneVotes(ctx context.Context, gone map[string]uint64) {
	for _, replica := range slices.Sorted(maps.Keys(gone)) {
		if replica == l.opts.ReplicaID {
			continue // this replica's own key: its next publish takes it again
		}
		ok, err := l.store.DeleteVote(ctx, replica, gone[replica])
		switch {
		case err != nil:
			l.opts.Logger.Warn("deleting the vote key of a replica that is gone failed; retrying next pass", "replica", replica, "err", err)
		case ok:
			l.opts.Logger.Info("deleted the vote key of a replica that is gone", "replica", replica)
		}
	}
}
