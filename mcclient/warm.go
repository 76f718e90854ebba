package mcclient

import (
	"math"
	"sync/atomic"
	"time"
)

// DefaultWarmTTL is the expiry of a value copied from a warming slot's old
// holder into its new holder when Options.WarmTTL is zero; it matches the
// default of `mcrib serve --warm-ttl`.
const DefaultWarmTTL = time.Hour

// ClockSkew is how far apart the clocks of a pool's clients may be (the
// client guarantee counts with 1 s). A client reads a warming slot's old
// holder until the warming's until by its own clock, but sends the slot's
// writes there until until plus ClockSkew: a reader whose clock is behind
// the writer's still reads the old holder after the writer's until.
const ClockSkew = time.Second

// maxRelativeExpiry is the longest expiry memcached reads as seconds from
// now; a larger number is a Unix time.
const maxRelativeExpiry = 30 * 24 * 3600

// warmSource is a warming slot's previous holder, as one routing table
// knows it: read on a miss of the new holder until until by the client's
// clock (unless it is turned off), and written with it until writeUntil.
type warmSource struct {
	n *node
	// until ends the reads of the source. It is zero for a warming that
	// a later map ended early while the slot kept its holder: remembered
	// for its writes only.
	until time.Time
	// writeUntil ends the writes to the source: the latest until of this
	// warming in any map the client took, plus ClockSkew. (With
	// revert.WarmWriteDurable the writes end with the reads.)
	writeUntil time.Time
	// st is shared by the tables in which the same node warms the same
	// slot, so that a new map neither turns the source on again nor
	// loses a fill or a write under way.
	st *warmState
}

// warmState is what the tables of one warming share.
type warmState struct {
	// off is set when a write to the source failed (or it did not answer
	// a read): the client reads it no more. Writes still go to it.
	off   atomic.Bool
	guard warmGuard
}

// newWarmSource returns slot's warm source n until until, sharing prev's
// state (and keeping its later write end) when prev, the slot's source in
// the previous table, is the same node.
func newWarmSource(n *node, until time.Time, prev *warmSource) *warmSource {
	w := &warmSource{n: n, until: until, writeUntil: until.Add(ClockSkew), st: new(warmState)}
	if prev != nil && prev.n.id == n.id {
		w.st = prev.st
		if prev.writeUntil.After(w.writeUntil) {
			w.writeUntil = prev.writeUntil
		}
	}
	return w
}

// remembered returns w as a source written, not read: its warming ended
// in a map in which the slot kept its holder.
func (w *warmSource) remembered() *warmSource {
	return &warmSource{n: w.n, writeUntil: w.writeUntil, st: w.st}
}

// warmOf returns slot i's warm source in r, or nil (also for a nil r).
func (r *routing) warmOf(i int) *warmSource {
	if r == nil || i >= len(r.warm) {
		return nil
	}
	return r.warm[i]
}

// activeWarm returns slot i's warm source when the client reads it now:
// the slot warms, until has not passed by the client's clock and the
// source is not turned off. Otherwise nil.
func (c *Client) activeWarm(r *routing, i int) *warmSource {
	w := r.warmOf(i)
	if w == nil || w.st.off.Load() || !c.sh.clock.Now().Before(w.until) {
		return nil
	}
	return w
}

// writtenWarm returns slot i's warm source when the client's writes of
// the slot go to it now: until writeUntil by the client's clock, whether
// or not it is turned off for reads. With revert.WarmWriteDurable it is
// activeWarm, as it was.
func (c *Client) writtenWarm(r *routing, i int) *warmSource {
	if !c.durable {
		return c.activeWarm(r, i)
	}
	w := r.warmOf(i)
	if w == nil || !c.sh.clock.Now().Before(w.writeUntil) {
		return nil
	}
	return w
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
