package controlloop

import (
	"context"
	"maps"
	"time"
)

// takeVotesLocked hands the other live replicas' votes to the tracker,
// counts the live replicas and returns the node transitions the votes
// caused, for the log. l.mu must be held.
func (l *Loop) takeVotesLocked(votes map[string]Vote, now time.Time) []nodeEvent {
	peers := make(map[string]map[string]time.Time, len(votes))
	sessions := make(map[string]string, len(votes))
	for id, v := range votes {
		sessions[id] = v.Session
		if id == l.opts.ReplicaID {
			continue
		}
		peers[id] = v.Unreachable
	}
	l.peerLeads = sessions
	l.replicas = len(peers) + 1
	l.tr.setPeers(peers, now)
	return l.tr.drain()
}

// publishVote publishes this replica's vote when it changed, or when the
// session holding it changed (a new campaign), or when it is not yet seen
// among the live votes. It needs a ReplicaID and a session; a failure is
// logged and retried next pass (the vote is advice, the pass goes on).
func (l *Loop) publishVote(ctx context.Context) {
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
	_, seen := l.peerLeads[l.opts.ReplicaID]
	stale := changed || l.votedBy != member.Session() || !seen || !maps.Equal(mine, l.voted)
	l.mu.Unlock()
	if !stale {
		return
	}
	if err := l.store.PutVote(ctx, l.opts.ReplicaID, Vote{Unreachable: mine}, member); err != nil {
		l.opts.Logger.Warn("publishing this replica's vote on unreachable nodes failed; retrying next pass", "err", err)
		return
	}
	l.mu.Lock()
	l.voted, l.votedBy = mine, member.Session()
	if l.peerLeads == nil {
		l.peerLeads = make(map[string]string)
	}
	l.peerLeads[l.opts.ReplicaID] = member.Session()
	l.mu.Unlock()
}

// Replicas returns how many replicas of the pool are alive, as the last
// pass saw their votes (at least 1: this one). A follower that cannot
// reach the leader admits its share of the boot limit, the limit divided
// by this (invariant 8).
func (l *Loop) Replicas() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return max(l.replicas, 1)
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
	for _, s := range l.peerLeads {
		if s == session {
			return true
		}
	}
	return false
}
