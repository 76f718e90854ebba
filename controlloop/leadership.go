package controlloop

import (
	"context"

	"github.com/mcrib/mcrib/leader"
)

// Leadership tells the loop whether this process leads the pool and owns
// every check of the leader lock; *leader.Elector implements it. Only the
// leader flushes and writes the slot map; the others follow the stored map.
// The loop never sees a session: it passes the lease of the term to the
// Store's write, which fails once the lease no longer holds the lock.
type Leadership interface {
	// Lease returns the lease of the current term and true while this
	// process leads, as far as it knows.
	Lease() (leader.Lease, bool)
	// Confirm asks the lock itself whether this process still leads and
	// returns the lease of the term when it does. When the lock is lost it
	// steps down and returns an error wrapping leader.ErrNotLeader (also
	// when this process does not lead); another error means the lock could
	// not be asked. An action only the leader may take is preceded by this
	// one call.
	Confirm(ctx context.Context) (leader.Lease, error)
	// LeaderID returns the ID of the last known leader, "" when none is
	// known.
	LeaderID() string
	// Member returns the lease of this replica's session, leading or not,
	// and true while it has one: the replica's vote on unreachable nodes
	// is held by it.
	Member() (leader.Lease, bool)
}

var _ Leadership = (*leader.Elector)(nil)

// sole is the Leadership of a process that always leads, alone and without
// a lock: its lease is the zero Lease, which the store's write takes as no
// lock to check, and Confirm always succeeds.
type sole struct{}

func (sole) Lease() (leader.Lease, bool)                   { return leader.Lease{}, true }
func (sole) Confirm(context.Context) (leader.Lease, error) { return leader.Lease{}, nil }
func (sole) LeaderID() string                              { return "" }
func (sole) Member() (leader.Lease, bool)                  { return leader.Lease{}, false }
