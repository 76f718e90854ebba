package mcclient

import (
	"errors"
	"fmt"

	"github.com/bradfitz/gomemcache/memcache"
)

// A write of a key in a warming slot is durable when no client can read,
// through the old holder, the value it replaced. The client makes it so by
// sending every Set, Replace and Delete to both holders, the old one
// first, until the warming's until plus ClockSkew by its own clock, and
// by answering success only when both acknowledged. When the old holder
// does not, the write still goes to the new holder, a delete of the key is
// queued for the old one (replayed when it answers) and the error wraps
// ErrWarmSourceMissed and ErrQueued.
//
// The other way the client guarantee allows, a tombstone left in the new
// holder that every read honours and that outlasts until by the skew
// margin, is not taken: memcached may evict a tombstone under memory
// pressure as it evicts any item, and the readers of a mixed fleet
// (mcrouter's WarmUpRoute, an older client) do not know tombstones: they
// would serve one as a value. "Both acknowledged" needs nothing of the
// readers.

// warmWriteKind is what a write does to the key, as the old holder's
// answer is judged.
type warmWriteKind int

const (
	writeDelete  warmWriteKind = iota // a miss is an acknowledgement
	writeSet                          // only success is
	writeReplace                      // "not stored" (the key is not there) is one
)

// warmWritten is what a warm source made of a write.
type warmWritten struct {
	had bool  // it applied the write (a delete found the key, a replace stored)
	err error // the write is not durable: wraps ErrWarmSourceMissed and ErrQueued
}

// writeWarmSource sends a write of key to w, before the new holder gets
// it. While w is read (until until by the client's clock, not turned
// off) it is op itself; after that, or for a warming a later map ended,
// it is a delete of the key: the old holder needs only to lose it. Any
// answer but an acknowledgement turns w off for reads and queues a delete
// of the key for it. With revert.WarmWriteDurable see warmWriteReverted.
func (c *Client) writeWarmSource(r *routing, i int, key string, kind warmWriteKind, op func(Conn) error) warmWritten {
	w := c.writtenWarm(r, i)
	if w == nil {
		return warmWritten{}
	}
	if !c.durable {
		return warmWritten{had: warmWriteReverted(w, op)}
	}
	orig := kind
	substituted := c.activeWarm(r, i) == nil
	if substituted {
		kind, op = writeDelete, func(be Conn) error { return be.Delete(key) }
	}
	if !w.n.ready() {
		w.st.off.Store(true)
		w.n.enqueue(key)
		return warmWritten{err: warmMissed(w, ErrQueued)}
	}
	err := op(w.n.be)
	switch {
	case err == nil:
		// A delete in place of a set or replace applied nothing of it.
		return warmWritten{had: !substituted || orig == writeDelete}
	case kind == writeDelete && errors.Is(err, memcache.ErrCacheMiss),
		kind == writeReplace && errors.Is(err, memcache.ErrNotStored),
		errors.Is(err, memcache.ErrMalformedKey): // nothing can be stored under it
		return warmWritten{}
	}
	w.st.off.Store(true)
	if Unreachable(err) {
		w.n.unreachable(key)
	} else {
		w.n.enqueue(key)
	}
	return warmWritten{err: warmMissed(w, err)}
}

// warmMissed returns the error of a write w did not take, for cause.
func warmMissed(w *warmSource, cause error) error {
	if errors.Is(cause, ErrQueued) {
		return fmt.Errorf("%w (%s): %w", ErrWarmSourceMissed, w.n.id, cause)
	}
	return fmt.Errorf("%w (%s): %w: %w", ErrWarmSourceMissed, w.n.id, ErrQueued, cause)
}

// warmWriteReverted is the write to a warm source with
// revert.WarmWriteDurable: it reports whether w applied the write. An
// error that answered (a miss of a delete, a "not stored" of a replace)
// leaves w in use; any other failure, or a queue of deletes w cannot
// replay first, turns w off, queues nothing, and the write goes on as a
// success: the bug the fix removes (another client may still read w).
func warmWriteReverted(w *warmSource, op func(Conn) error) bool {
	if !w.n.ready() {
		w.st.off.Store(true)
		return false
	}
	err := op(w.n.be)
	if err != nil && !errors.Is(err, memcache.ErrCacheMiss) && !errors.Is(err, memcache.ErrNotStored) {
		w.st.off.Store(true)
	}
	return err == nil
}
