package leader

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/internal/consulwatch"
)

// followWait is the wait time of blocking queries on the lock key.
const followWait = time.Minute

// watchKey follows the lock key with blocking queries (internal/consulwatch)
// until ctx ends. For every reading whose holder differs from the last one
// (the first always) it records the leader the key shows, for LeaderID,
// and calls onChange. Failed reads are logged at debug level as what and
// retried with the campaign's backoff: the keepalive decides when Consul
// has been away too long.
func (e *Elector) watchKey(ctx context.Context, what string, onChange func(kv *api.KVPair)) {
	opts := consulwatch.Options[*api.KVPair]{
		Name:     e.opts.Key,
		WaitTime: followWait,
		Backoff:  retryBackoff(),
		Equal:    sameHolder,
		Clock:    e.opts.Clock,
	}
	consulwatch.Run(ctx, opts, e.readKey, func(kv *api.KVPair, _ uint64) error {
		e.mu.Lock()
		e.leaderID = holderID(kv)
		e.mu.Unlock()
		onChange(kv)
		return nil
	}, func(err error) {
		e.opts.Logger.Debug("leader: "+what, "key", e.opts.Key, "err", err)
	})
}

// readKey reads the lock key with q; the pair is nil when the key is
// absent.
func (e *Elector) readKey(_ context.Context, q *api.QueryOptions) (*api.KVPair, *api.QueryMeta, error) {
	kv, meta, err := e.opts.Client.KV().Get(e.opts.Key, q)
	if err != nil {
		return nil, nil, fmt.Errorf("reading lock key %s: %w", e.opts.Key, err)
	}
	return kv, meta, nil
}

// watchHeld follows the lock key until it no longer carries session
// (returning errKeyLost) or ctx ends (returning ctx's cause).
func (e *Elector) watchHeld(ctx context.Context, session string) error {
	wctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	e.watchKey(wctx, "watching held lock", func(kv *api.KVPair) {
		if !heldBy(kv, session) {
			stop(errKeyLost)
		}
	})
	return context.Cause(wctx)
}

// sameHolder reports whether two readings of the lock key show the same
// holder: the same session and value, or both absent.
func sameHolder(a, b *api.KVPair) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Session == b.Session && bytes.Equal(a.Value, b.Value)
}

// holderID returns the ID stored in a held lock, or "" when the lock is
// absent or free.
func holderID(kv *api.KVPair) string {
	if kv == nil || kv.Session == "" {
		return ""
	}
	return string(kv.Value)
}

// heldBy reports whether the lock pair is held by session.
func heldBy(kv *api.KVPair, session string) bool {
	return kv != nil && session != "" && kv.Session == session
}
