package leader

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/consul/api"
)

// readKey reads the lock key, blocking up to wait for a change when index is
// not 0, records the leader it shows and returns the pair (nil when absent)
// and the index for the next read.
func (e *Elector) readKey(ctx context.Context, index uint64, wait time.Duration) (*api.KVPair, uint64, error) {
	q := (&api.QueryOptions{WaitIndex: index, WaitTime: wait}).WithContext(ctx)
	kv, meta, err := e.opts.Client.KV().Get(e.opts.Key, q)
	if err != nil {
		return nil, index, fmt.Errorf("reading lock key %s: %w", e.opts.Key, err)
	}
	id := holderID(kv)
	e.mu.Lock()
	e.leaderID = id
	e.mu.Unlock()
	return kv, nextIndex(index, meta.LastIndex), nil
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

// nextIndex returns the wait index for the next blocking query after one
// that answered with index got, following consul-template: an index that
// went backwards (Consul restarted with an empty store) starts over from 0,
// and 0 is never used after a read because it would not block.
func nextIndex(prev, got uint64) uint64 {
	switch {
	case got < prev:
		return 0
	case got == 0:
		return 1
	default:
		return got
	}
}
