package mcclient

import (
	"errors"
	"math"
	"sync/atomic"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
)

// DefaultWarmTTL is the expiry of a value copied from a warming slot's old
// holder into its new holder when Options.WarmTTL is zero; it matches the
// default of `mcrib serve --warm-ttl`.
const DefaultWarmTTL = time.Hour

// maxRelativeExpiry is the longest expiry memcached reads as seconds from
// now; a larger number is a Unix time.
const maxRelativeExpiry = 30 * 24 * 3600

// warmSource is a warming slot's previous holder, as one routing table
// knows it: read on a miss of the new holder and written with it until
// until by the client's clock, or until it is turned off.
type warmSource struct {
	n     *node
	until time.Time
	// off is set when a write to the source failed (or it did not answer):
	// the client stops using it at once. Tables in which the same node
	// warms the same slot share it, so a new map does not turn it back on.
	off *atomic.Bool
}

// newWarmSource returns slot's warm source n until until, sharing prev's
// off switch when prev (the slot's source in the previous table) is the
// same node.
func newWarmSource(n *node, until time.Time, prev *warmSource) *warmSource {
	off := new(atomic.Bool)
	if prev != nil && prev.n.id == n.id {
		off = prev.off
	}
	return &warmSource{n: n, until: until, off: off}
}

// warmOf returns slot i's warm source in r, or nil (also for a nil r).
func (r *routing) warmOf(i int) *warmSource {
	if r == nil || i >= len(r.warm) {
		return nil
	}
	return r.warm[i]
}

// activeWarm returns slot i's warm source when the client uses it now:
// the slot warms, until has not passed by the client's clock and no write
// to the source failed. Otherwise nil.
func (c *Client) activeWarm(r *routing, i int) *warmSource {
	w := r.warmOf(i)
	if w == nil || w.off.Load() || !c.sh.clock.Now().Before(w.until) {
		return nil
	}
	return w
}

// warmGet reads key from w after the new holder n missed it. A hit is
// copied into n with memcached's add (never over a value n got
// meanwhile) and the warm TTL, then w is read again: a delete that raced
// with the copy reached w before n (see warmWrite), so a key w no longer
// has is taken back out of n and missed. A source that does not answer is
// turned off; every failure is a miss.
func (c *Client) warmGet(n *node, w *warmSource, key string) (*memcache.Item, error) {
	if !w.n.ready() {
		return nil, memcache.ErrCacheMiss
	}
	it, err := w.n.be.Get(key)
	if err != nil {
		if Unreachable(err) {
			w.off.Store(true)
		}
		return nil, memcache.ErrCacheMiss
	}
	if !c.fill(n, w, it) {
		return nil, memcache.ErrCacheMiss
	}
	return it, nil
}

// fill copies it, read from w, into n (see warmGet) and reports whether
// it may be answered: false when w no longer has the key.
func (c *Client) fill(n *node, w *warmSource, it *memcache.Item) bool {
	err := n.be.Add(&memcache.Item{Key: it.Key, Value: it.Value, Flags: it.Flags, Expiration: c.warmExpiry()})
	if err != nil {
		// Not stored: n got the key meanwhile (a set goes to both, a fill
		// is checked by its own reader). Unreachable: the next read of n
		// will tell.
		return true
	}
	_, err = w.n.be.Get(it.Key)
	if err == nil {
		return true
	}
	if Unreachable(err) {
		w.off.Store(true)
	}
	if err := n.be.Delete(it.Key); Unreachable(err) {
		n.unreachable(it.Key)
	}
	return false
}

// warmExpiry returns the expiry of a copied value: Options.WarmTTL in
// whole seconds (at least one), or the Unix time it ends when it is above
// memcached's 30 days of relative expiry.
func (c *Client) warmExpiry() int32 {
	s := int64((c.opts.WarmTTL + time.Second - 1) / time.Second)
	if s > maxRelativeExpiry {
		s += c.sh.clock.Now().Unix()
	}
	return int32(min(s, math.MaxInt32))
}

// warmWrite sends a write to w before the new holder gets it, and reports
// whether w applied it. An error that answered (a miss of a delete, a
// "not stored" of a replace) leaves w in use; any other failure, or a
// queue of deletes w cannot replay first, turns w off: the client stops
// reading a holder that may have missed a write.
func warmWrite(w *warmSource, op func(Conn) error) bool {
	if !w.n.ready() {
		w.off.Store(true)
		return false
	}
	err := op(w.n.be)
	if err != nil && !errors.Is(err, memcache.ErrCacheMiss) && !errors.Is(err, memcache.ErrNotStored) {
		w.off.Store(true)
	}
	return err == nil
}
