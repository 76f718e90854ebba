package leader

import (
	"context"
	"fmt"

	"github.com/hashicorp/consul/api"
)

// Lease is one term of leadership: the lock key and the session that holds
// it for the term. It is what a write shows to prove it comes from the
// leader (Lease.CAS), and what Confirm checks the lock against. It is
// opaque to its users; the zero Lease is no lease at all. A Lease is a
// plain comparable value, safe for concurrent use.
type Lease struct {
	key     string
	session string
}

// NewLease returns the lease of session on the lock key. An Elector hands
// out its own leases (Elector.Lease, Elector.Confirm); NewLease is for
// callers that hold a session themselves, and for tests.
func NewLease(key, session string) Lease { return Lease{key: key, session: session} }

// IsZero reports whether l is the zero Lease, which guards nothing.
func (l Lease) IsZero() bool { return l == Lease{} }

// Held reports whether lease's session holds its lock key right now, asked
// with a consistent read. An error means Consul could not tell. The zero
// Lease holds nothing.
func Held(ctx context.Context, client *api.Client, lease Lease) (bool, error) {
	if lease.IsZero() {
		return false, nil
	}
	kv, _, err := client.KV().Get(lease.key, (&api.QueryOptions{RequireConsistent: true}).WithContext(ctx))
	if err != nil {
		return false, fmt.Errorf("reading lock key %s: %w", lease.key, err)
	}
	return heldBy(kv, lease.session), nil
}

// Lease returns the lease of the current term and true while this process
// leads, as far as it knows; the zero Lease and false otherwise.
func (e *Elector) Lease() (Lease, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.session == "" {
		return Lease{}, false
	}
	return Lease{key: e.opts.Key, session: e.session}, true
}

// Confirm checks with Consul, by a consistent read of the lock key, that
// this process still holds the lock, and returns the lease of the current
// term. It is the one call to make before an action only the leader may
// take (a flush, a write outside a check-and-set): a nil error means the
// lock was held at the read.
//
// When the lock is held by another session or none, Confirm ends the term
// as StepDown does and returns an error wrapping ErrNotLeader; it returns
// ErrNotLeader as well when this process does not lead. Any other error
// means Consul could not tell, and the term goes on.
func (e *Elector) Confirm(ctx context.Context) (Lease, error) {
	lease, ok := e.Lease()
	if !ok {
		return Lease{}, ErrNotLeader
	}
	held, err := Held(ctx, e.opts.Client, lease)
	if err != nil {
		return lease, err
	}
	if held {
		return lease, nil
	}
	e.mu.Lock()
	// Step down only the term that lost the lock, not one begun since.
	if e.session == lease.session && e.stepDown != nil {
		e.steppedDown = true
		e.stepDown()
		e.session = "" // IsLeader turns false now, before the term winds down
	}
	e.mu.Unlock()
	e.opts.Logger.Warn("leader: the lock is no longer held by this process; stepping down", "key", e.opts.Key)
	return Lease{}, fmt.Errorf("%w: the lock %s is no longer held by this process", ErrNotLeader, e.opts.Key)
}

// Member returns the lease of this process's campaign session and true
// while it campaigns (leading or following); the zero Lease and false
// otherwise. Keys written with it (Lease.Put) go with the session: when
// the process dies or loses Consul, they stop counting.
func (e *Elector) Member() (Lease, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.member == "" {
		return Lease{}, false
	}
	return Lease{session: e.member}, true
}

func (e *Elector) setMember(session string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.member = session
}

// Put stores value at key held by the lease's session (a Consul lock
// acquire), so the key stops counting when the session ends. It reports
// false when another session holds the key. The zero Lease puts nothing.
func (l Lease) Put(ctx context.Context, client *api.Client, key string, value []byte) (bool, error) {
	if l.session == "" {
		return false, nil
	}
	ok, _, err := client.KV().Acquire(&api.KVPair{Key: key, Value: value, Session: l.session}, (&api.WriteOptions{}).WithContext(ctx))
	if err != nil {
		return false, fmt.Errorf("writing %s: %w", key, err)
	}
	return ok, nil
}

// Session returns the ID of the lease's session, for a peer to name the
// session it speaks for (it is not a secret from Consul's readers).
func (l Lease) Session() string { return l.session }
