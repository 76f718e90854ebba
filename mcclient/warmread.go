package mcclient

import (
	"bytes"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mcrib/mcrib/cachenodes"
)

// warmGet reads key from w after the new holder n missed it, r's map
// being fresh. A hit is copied into n (see fill) and answered when fill
// lets it through; a source that does not answer is turned off; every
// failure, and a tombstone, is a miss. While a write of the key is under
// way in this client the source is not read: what it holds is about to
// change.
func (c *Client) warmGet(r *routing, n *node, w *warmSource, key string) (*memcache.Item, error) {
	if !w.n.ready() {
		return nil, memcache.ErrCacheMiss
	}
	var mark guardMark
	if c.durable {
		if mark = w.st.guard.markWrites(key); !mark.quiet {
			return nil, memcache.ErrCacheMiss
		}
	}
	readAt := c.sh.clock.Now()
	it, err := w.n.be.Get(key)
	if err != nil {
		if Unreachable(err) {
			w.st.off.Store(true)
		}
		return nil, memcache.ErrCacheMiss
	}
	if cachenodes.IsTombstone(it) || !c.fill(r, n, w, it, mark, readAt) {
		return nil, memcache.ErrCacheMiss
	}
	return it, nil
}

// fill copies it, read from w at readAt, into n with memcached's add
// (never over a value or a tombstone n got meanwhile) and the warm TTL,
// and reports whether it may be answered. The add is sent only within
// cachenodes.FillWithin of the read and while r's map is fresh, else the
// copy is dropped (the value read is still answered): no copy outlives
// the tombstone of a delete that raced with it. After the copy w is read
// again: a delete or set that raced with the copy reached w before n
// (writes go to the old holder first), so a copy w no longer holds as it
// was is undone with a tombstone in n (never a delete: n takes none while
// the slot has its warming object) and missed.
//
// mark holds the writes of the key's stripe from before w was read (its
// stripe is nil with revert.WarmWriteDurable, and none of what follows is
// done). A write of this client that began since may have reached n
// before the copy: the copy is not made, or undone. While the copy is
// unchecked the fill is marked under way, so that this client's other
// reads do not take the copy for a checked value (see Client.Get). And a
// copy whose add did not answer may have landed unchecked: a tombstone is
// queued for n.
func (c *Client) fill(r *routing, n *node, w *warmSource, it *memcache.Item, mark guardMark, readAt time.Time) bool {
	durable := mark.s != nil
	if durable {
		defer w.st.guard.beginFill(it.Key)()
		if mark.writesSince() {
			return false
		}
	}
	if now := c.sh.clock.Now(); now.Sub(readAt) >= cachenodes.FillWithin || !r.fresh(now) {
		return true // too late to copy: dropped
	}
	err := n.be.Add(&memcache.Item{Key: it.Key, Value: it.Value, Flags: it.Flags, Expiration: c.warmExpiry()})
	if err != nil {
		// Not stored: n got the key (or its tombstone) meanwhile (a set
		// goes to both, a fill is checked by its own reader); the value
		// read is answered unless a write of this client began since.
		// Unreachable: the next read of n will tell.
		if durable && Unreachable(err) {
			n.unreachable(it.Key)
		}
		return !durable || !mark.writesSince()
	}
	if !durable || !mark.writesSince() {
		cur, err := w.n.be.Get(it.Key)
		if err == nil && sameItem(cur, it) && (!durable || (!mark.writesSince() && !w.st.off.Load() && !w.n.q.Has(it.Key))) {
			return true
		}
		if Unreachable(err) {
			w.st.off.Store(true)
		}
	}
	if err := n.be.Set(cachenodes.TombstoneItem(it.Key)); err != nil {
		n.unreachable(it.Key)
	}
	return false
}

// sameItem reports whether cur, read from a warm source again, is still
// the value it that was copied (not a tombstone, the same value and
// flags).
func sameItem(cur, it *memcache.Item) bool {
	return !cachenodes.IsTombstone(cur) && cur.Flags == it.Flags && bytes.Equal(cur.Value, it.Value)
}

// suspectHit reports whether a hit on slot i's holder, read after mark
// (from before the read), may be a copy another goroutine of this client
// made and has not checked yet: a fill of the key's stripe was under way,
// or began meanwhile. Such a hit is read again through the old holder.
// With revert.WarmWriteDurable no hit is suspect.
func (c *Client) suspectHit(mark guardMark) bool {
	return mark.s != nil && !mark.fillsQuiet()
}

// markFills returns the fills of key's stripe in slot i's warming, before
// a read of the slot's holder; its stripe is nil when the slot does not
// warm or with revert.WarmWriteDurable.
func (c *Client) markFills(w *warmSource, key string) guardMark {
	if w == nil || !c.durable {
		return guardMark{}
	}
	return w.st.guard.markFills(key)
}
