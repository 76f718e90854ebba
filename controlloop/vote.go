package controlloop

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/mcrib/mcrib/leader"
)

// voteState is what this replica knows of the votes on unreachable nodes.
// Its zero value knows no vote; it is not safe for concurrent use (the Loop's mutex guards it).
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

// take hands the live replicas' votes but self's (this replica's ID) to
// tr, their instants placed on this clock by remote (remoteclock.go),
// counts the live replicas and
// returns the node transitions the votes caused, for the log.
func (v *voteState) take(self string, votes map[string]Vote, remote *remoteClock, tr *tracker, now time.Time) []nodeEvent {
	sessions := make(map[string]string, len(votes))
	for id, vote := range votes {
		sessions[id] = vote.Session
	}
	peers := remote.placeVotes(votes, self, now)
	v.sessions = sessions
	v.replicas = len(peers) + 1
	tr.setPeers(peers, now)
	return tr.drain()
}

// pendingVote is this replica's vote, due to be published under the
// session of member.
type pendingVote struct {
	member leader.Lease
	nodes  map[string]time.Time
}

// due returns the vote of this replica (self: its ID), tr's local
// verdicts, when it is due:
// it changed, the session holding it changed (a new campaign; member is
// this replica's session, ok false when it has none), or it is not yet
// seen among the live votes. Nil when none is due, or when this replica
// publishes none (no ReplicaID, no session).
func (v *voteState) due(self string, tr *tracker, member leader.Lease, ok bool) *pendingVote {
	if self == "" || !ok {
		return nil
	}
	changed := tr.takeLocalChange()
	mine := tr.localVotes()
	_, seen := v.sessions[self]
	if !changed && v.by == member.Session() && seen && maps.Equal(mine, v.voted) {
		return nil
	}
	return &pendingVote{member: member, nodes: mine}
}

// publishVote publishes v (nil: nothing is due), stamped with now (its
// at). A failure is told in r and retried next pass: the vote is advice,
// the pass goes on.
func (l *Loop) publishVote(ctx context.Context, v *pendingVote, now time.Time, r *report) {
	if v == nil {
		return
	}
	if err := l.store.PutVote(ctx, l.opts.ReplicaID, Vote{Unreachable: v.nodes, At: now.UTC()}, v.member); err != nil {
		r.log(slog.LevelWarn, "publishing this replica's vote on unreachable nodes failed; retrying next pass", "err", err)
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.votes.published(l.opts.ReplicaID, v)
}

// published records p as the vote of this replica (self: its ID),
// published under its member's session.
func (v *voteState) published(self string, p *pendingVote) {
	v.voted, v.by = p.nodes, p.member.Session()
	if v.sessions == nil {
		v.sessions = make(map[string]string)
	}
	v.sessions[self] = p.member.Session()
}

// live returns how many replicas are alive, as the last votes read say
// (at least 1: this one).
func (v *voteState) live() int { return max(v.replicas, 1) }

// hasSession reports whether session is the session of a live replica, as
// the last votes read say.
func (v *voteState) hasSession(session string) bool {
	if session == "" {
		return false
	}
	for _, s := range v.sessions {
		if s == session {
			return true
		}
	}
	return false
}

// Replicas returns how many replicas of the pool are alive, as the last
// pass saw their votes (at least 1: this one). A follower that cannot
// reach the leader admits its share of the boot limit, the limit divided
// by this (invariant 8).
func (l *Loop) Replicas() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.votes.live()
}

// ReplicaSession reports whether session is the session of a live replica
// of the pool (as the last pass saw the votes): a boot forwarded by a
// replica names it, and only those are admitted without forwarding again.
func (l *Loop) ReplicaSession(session string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.votes.hasSession(session)
}

// deleteGoneVotes deletes the vote keys no session holds any more (their
// replica is gone, section 2), each with check-and-set on the version
// read, so that a replica that just acquired its key again keeps it. Only
// the leader does; r tells each, and after a failure the next pass tries
// again.
func (l *Loop) deleteGoneVotes(ctx context.Context, gone map[string]uint64, r *report) {
	for _, replica := range slices.Sorted(maps.Keys(gone)) {
		if replica == l.opts.ReplicaID {
			continue // this replica's own key: its next publish takes it again
		}
		ok, err := l.store.DeleteVote(ctx, replica, gone[replica])
		switch {
		case err != nil:
			r.log(slog.LevelWarn, "deleting the vote key of a replica that is gone failed; retrying next pass", "replica", replica, "err", err)
		case ok:
			r.log(slog.LevelInfo, "deleted the vote key of a replica that is gone", "replica", replica)
		}
	}
}
