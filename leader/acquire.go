package leader

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/clock"
)

// lockDelayPoll is how often a follower retries to acquire a free lock that
// Consul still holds back for the lock delay.
const lockDelayPoll = 250 * time.Millisecond

// acquire follows the lock key until the lock is free and holdOff has
// passed, then takes it for session. It returns maybeHeld true and no
// error once the lock is held. maybeHeld is also true when an acquire was
// sent whose outcome is unknown (it failed, or ctx ended meanwhile): the
// caller must then release the lock. It returns when ctx ends.
func (e *Elector) acquire(ctx context.Context, session string, holdOff time.Time) (maybeHeld bool, err error) {
	wctx, stop := context.WithCancel(ctx)
	keys := make(chan *api.KVPair, 1) // the latest reading only
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		e.watchKey(wctx, "watching lock key", func(kv *api.KVPair) {
			select {
			case <-keys: // replaced by the newer reading
			default:
			}
			keys <- kv
		})
	}()
	defer func() {
		stop()
		wg.Wait()
	}()

	// retry, when not nil, fires when the lock is worth trying again
	// without a change of the key: the hold-off or the lock delay passed.
	var retry clock.Timer
	retryIn := func(d time.Duration) {
		if retry != nil {
			retry.Stop()
		}
		retry = e.opts.Clock.NewTimer(d)
	}
	defer func() {
		if retry != nil {
			retry.Stop()
		}
	}()
	var kv *api.KVPair
	for {
		var retryC <-chan time.Time
		if retry != nil {
			retryC = retry.C()
		}
		select {
		case <-ctx.Done():
			return false, nil
		case kv = <-keys:
		case <-retryC:
			retry = nil
		}
		switch {
		case heldBy(kv, session):
			return true, nil // ours already, e.g. after an acquire whose answer got lost
		case kv != nil && kv.Session != "":
			continue // held by another: wait for a change
		}
		if d := holdOff.Sub(e.opts.Clock.Now()); d > 0 {
			retryIn(d)
			continue
		}
		ok, _, err := e.opts.Client.KV().Acquire(&api.KVPair{
			Key:     e.opts.Key,
			Value:   []byte(e.opts.ID),
			Session: session,
		}, (&api.WriteOptions{}).WithContext(ctx))
		switch {
		case ctx.Err() != nil:
			return true, nil // the acquire may have succeeded
		case err != nil:
			return true, fmt.Errorf("acquiring lock %s: %w", e.opts.Key, err)
		case !ok:
			retryIn(lockDelayPoll) // lock delay in force, or another session won the race
			continue
		}
		return true, nil
	}
}
