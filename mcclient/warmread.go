package mcclient

import "github.com/bradfitz/gomemcache/memcache"

// warmGet reads key from w after the new holder n missed it. A hit is
// copied into n (see fill) and answered when fill lets it through; a
// source that does not answer is turned off; every failure is a miss.
// While a write of the key is under way in this client the source is not
// read: what it holds is about to change.
func (c *Client) warmGet(n *node, w *warmSource, key string) (*memcache.Item, error) {
	if !w.n.ready() {
		return nil, memcache.ErrCacheMiss
	}
	var mark guardMark
	if c.durable {
		if mark = w.st.guard.markWrites(key); !mark.quiet {
			return nil, memcache.ErrCacheMiss
		}
	}
	it, err := w.n.be.Get(key)
	if err != nil {
		if Unreachable(err) {
			w.st.off.Store(true)
		}
		return nil, memcache.ErrCacheMiss
	}
	if !c.fill(n, w, it, mark) {
		return nil, memcache.ErrCacheMiss
	}
	return it, nil
}

// fill copies it, read from w, into n with memcached's add (never over a
// value n got meanwhile) and the warm TTL, and reports whether it may be
// answered. After the copy w is read again: a delete that raced with the
// copy reached w before n (writes go to the old holder first), so a key w
// no longer has is taken back out of n and missed.
//
// mark holds the writes of the key's stripe from before w was read (its
// stripe is nil with revert.WarmWriteDurable, and none of what follows is
// done). A write of this client that began since may have reached n
// before the copy: the copy is not made, or taken back. While the copy is
// unchecked the fill is marked under way, so that this client's other
// reads do not take the copy for a checked value (see Client.Get). And a
// copy whose add did not answer may have landed unchecked: a delete of it
// is queued for n.
func (c *Client) fill(n *node, w *warmSource, it *memcache.Item, mark guardMark) bool {
	durable := mark.s != nil
	if durable {
		defer w.st.guard.beginFill(it.Key)()
		if mark.writesSince() {
			return false
		}
	}
	err := n.be.Add(&memcache.Item{Key: it.Key, Value: it.Value, Flags: it.Flags, Expiration: c.warmExpiry()})
	if err != nil {
		// Not stored: n got the key meanwhile (a set goes to both, a fill
		// is checked by its own reader). Unreachable: the next read of n
		// will tell.
		if durable && Unreachable(err) {
			n.unreachable(it.Key)
		}
		return true
	}
	if !durable || !mark.writesSince() {
		_, err = w.n.be.Get(it.Key)
		if err == nil && (!durable || (!mark.writesSince() && !w.st.off.Load() && !w.n.q.Has(it.Key))) {
			return true
		}
		if Unreachable(err) {
			w.st.off.Store(true)
		}
	}
	if err := n.be.Delete(it.Key); Unreachable(err) {
		n.unreachable(it.Key)
	}
	return false
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
