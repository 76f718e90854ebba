package mcclient

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
)

// DefaultWarmTTL is the expiry of a value copied from a warming slot's old
// holder into its new holder when Options.WarmTTL is zero; it matches the
// default of `mcrib serve --warm-ttl`.
const DefaultWarmTTL = time.Hour

// ClockSkew is how far apart the clocks of a pool's clients may be (the
// client guarantee counts with 1 s): cachenodes.ClockSkew.
const ClockSkew = cachenodes.ClockSkew

// maxRelativeExpiry is the longest expiry memcached reads as seconds from
// now; a larger number is a Unix time.
const maxRelativeExpiry = 30 * 24 * 3600

// warmSource is a slot's warming object as one routing table knows it: the
// slot's previous holder (A), which the client reads on a miss of the new
// holder (B) until readsUntil by its clock (while the map is fresh and the
// source is not turned off), and sends the slot's writes to until
// writesUntil. While a table has it, B gets a tombstone where it would get
// a delete.
type warmSource struct {
	n *node
	// readsUntil ends the reads of the source: the warming's ReadsUntil
	// (ended_at when it ended early, else until). It is zero for a
	// warming remembered after a later map removed it: written, not read.
	readsUntil time.Time
	// writesUntil ends the writes to the source: the warming's
	// WritesUntil, ReadsUntil plus cachenodes.WarmWriteGrace. (With
	// revert.WarmWriteDurable the writes end with the reads.)
	writesUntil time.Time
	// st is shared by the tables in which the same source warms the same
	// new holder (a slot and its twin, the tables before and after a
	// doubling, every map of one warming), so that a new map neither
	// turns the source on again nor loses a fill or a write under way.
	st *warmState
}

// warmState is what the tables of one warming (one source, one new
// holder) share.
type warmState struct {
	// off is set when a write to the source failed (or it did not answer
	// a read): the client reads it no more. Writes still go to it.
	off   atomic.Bool
	guard warmGuard
}

// warmPair names one warming: its source and its new holder, by node ID.
type warmPair struct{ source, holder string }

// warmOf returns slot i's warm source in r, or nil (also for a nil r).
func (r *routing) warmOf(i int) *warmSource {
	if r == nil || i >= len(r.warm) {
		return nil
	}
	return r.warm[i]
}

// incomingOf returns the node announced to slot i in r, or nil.
func (r *routing) incomingOf(i int) *node {
	if r == nil || i >= len(r.incoming) {
		return nil
	}
	return r.incoming[i]
}

// readsSource reports whether the client reads w, the warm source of a
// slot of r, now: before its readsUntil by the client's clock, not turned
// off, and r's map fresh (a client whose map is not fresh reads no warm
// source: a later map it has not seen may have ended the warming; with
// revert.FreshWarmReads it reads one whatever the map's age).
func (c *Client) readsSource(r *routing, w *warmSource, now time.Time) bool {
	return w != nil && !w.st.off.Load() && now.Before(w.readsUntil) && (r.fresh(now) || !c.freshReads)
}

// writesSource reports whether the slot's writes go to w now: until its
// writesUntil by the client's clock, whether or not it is turned off for
// reads. With revert.WarmWriteDurable they go to it only while it is read
// (freshness aside), as they did; with revert.EndedWarmingGrace only
// until its readsUntil.
func (c *Client) writesSource(w *warmSource, now time.Time) bool {
	if !c.durable {
		return !w.st.off.Load() && now.Before(w.readsUntil)
	}
	if !c.writeGrace {
		return now.Before(w.readsUntil) // revert.EndedWarmingGrace
	}
	return now.Before(w.writesUntil)
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
