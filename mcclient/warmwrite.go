package mcclient

import (
	"errors"
	"fmt"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
)

// A write of a key in a slot that changes holder is durable when no
// client whose map is fresh can afterwards read the value it replaced,
// whichever map it routes by. Below, A is the slot's holder during an
// announce or its old holder (the warm source) while the warming object
// is in the map, B the incoming node or the new holder:
//
//   - announce (the slot has an incoming node): the write, a value or a
//     delete, goes to A; B gets the key's tombstone. Success only when A
//     took the write and B the tombstone.
//   - warming (before the warming's until, or ended_at, by the client's
//     clock): A first, then B, as memcached's op itself; a delete leaves
//     a tombstone in B. Success only when both took it.
//   - ended (from then until the writes' end, ReadsUntil plus
//     cachenodes.WarmWriteGrace): A gets a delete of the key, B the write
//     (a delete as a tombstone). A failure at A fails the write.
//   - after the writes' end, until the warming object is removed: B only,
//     a delete still as a tombstone.
//
// When A does not take its part, B still gets the write, a delete of the
// key is queued for A (replayed when it answers) and the error wraps
// ErrWarmSourceMissed and ErrQueued; when B does not, its part is queued
// (as a tombstone) and the error wraps ErrQueued (ErrIncomingMissed too
// during an announce).

// warmWriteKind is what a write does to the key, as the answers are
// judged.
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

// writeMoving runs a write of key in a slot with a warming object w (see
// above): its part at w's source, then op at the slot's
// holder n (for a delete, op sets the tombstone). It returns the write's
// answer.
func (c *Client) writeMoving(n *node, w *warmSource, key string, kind warmWriteKind, op func(Conn) error, now time.Time) error {
	if c.durable {
		defer w.st.guard.beginWrite(key)()
	}
	var warm warmWritten
	if c.writesSource(w, now) {
		warm = c.writeWarmSource(w, key, kind, op, now)
	}
	nop := op
	if kind == writeDelete {
		nop = func(be Conn) error { return c.setTombstone(be, key) }
	}
	err := c.writeNode(n, key, nop)
	switch {
	case errors.Is(err, ErrQueued):
		return withWarm(err, warm.err)
	case warm.err != nil:
		return warm.err
	case kind == writeDelete:
		// B got a tombstone, not a delete: whether it had the key cannot
		// be told. The delete is done.
		return err
	case warm.had && errors.Is(err, memcache.ErrNotStored):
		return nil // a replace of a key only the old holder had yet
	}
	return err
}

// writeNode runs op, an invalidating write of key, on n, the slot's
// holder: when n is unreachable (or has a queue it cannot replay first) a
// delete of the key is queued for it (a tombstone while it takes them)
// and the error wraps ErrQueued.
func (c *Client) writeNode(n *node, key string, op func(Conn) error) error {
	if !n.ready() {
		n.enqueue(key)
		return ErrQueued
	}
	err := op(n.be)
	if Unreachable(err) {
		n.unreachable(key)
		return fmt.Errorf("%w: %w", ErrQueued, err)
	}
	return err
}

// writeAnnounced runs a write of key in slot i, announced to the
// incoming node b: op at the slot's holder n (nil: the slot is vacant,
// and nothing has the key), then the key's tombstone at b.
func (c *Client) writeAnnounced(n, b *node, key string, kind warmWriteKind, op func(Conn) error) error {
	var err error
	switch {
	case n != nil:
		err = c.writeNode(n, key, op)
	case kind == writeDelete:
		err = memcache.ErrCacheMiss
	default:
		err = ErrVacantSlot
	}
	if berr := c.tombstoneIncoming(b, key); berr != nil {
		if err == nil || errors.Is(err, memcache.ErrCacheMiss) || errors.Is(err, memcache.ErrNotStored) {
			return berr
		}
		return errors.Join(err, berr)
	}
	return err
}

// withWarm returns err, joined with warmErr (the warm source's) when
// there is one.
func withWarm(err, warmErr error) error {
	if warmErr == nil {
		return err
	}
	return errors.Join(err, warmErr)
}

// writeWarmSource sends a write of key to w, before the new holder gets
// it. While w is read (before its readsUntil by the client's clock) it is
// op itself; after that (the warming ended, or was remembered after a map
// removed it) it is a delete of the key: the old holder needs only to
// lose it. Any answer but an acknowledgement turns w off for reads and
// queues a delete of the key for it. With revert.WarmWriteDurable see
// warmWriteReverted.
func (c *Client) writeWarmSource(w *warmSource, key string, kind warmWriteKind, op func(Conn) error, now time.Time) warmWritten {
	if !c.durable {
		return warmWritten{had: warmWriteReverted(w, op)}
	}
	orig := kind
	substituted := !now.Before(w.readsUntil)
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
