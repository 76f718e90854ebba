package mcclient

import "sync/atomic"

// guardStripes is the number of stripes a warmGuard spreads keys over: a
// fill and a write of two keys of one stripe are treated as a race, which
// costs a miss or a read of the old holder, never a stale value.
const guardStripes = 64

// warmGuard orders, within one client, the fills of a warming slot (a
// value read from the old holder and copied into the new one) against the
// writes of the same keys, without a lock held across a node call:
//
//   - a fill reads the old holder only while no write of its key is under
//     way, and copies what it read only if no write began since (the
//     write's delete or set of the new holder may have come before the
//     copy);
//   - a hit on the new holder, while a fill of its key is under way or
//     began during the read, may be that fill's copy, not checked yet
//     against the old holder: it is read again from the old holder (see
//     Client.Get).
//
// Between clients the fill's own check of the old holder after the copy
// does this work (see fill). The zero value is ready; it is safe for
// concurrent use.
type warmGuard struct {
	stripes [guardStripes]guardStripe
}

// guardStripe counts the writes and fills of its keys begun and done.
type guardStripe struct {
	writesBegun, writesDone atomic.Int64
	fillsBegun, fillsDone   atomic.Int64
}

// stripe returns key's stripe (FNV-1a, so that a run is the same every
// time: the simulation replays it exactly).
func (g *warmGuard) stripe(key string) *guardStripe {
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		h ^= uint32(key[i])
		h *= 16777619
	}
	return &g.stripes[h%guardStripes]
}

// beginWrite marks a write of key under way until the returned func runs.
func (g *warmGuard) beginWrite(key string) func() {
	s := g.stripe(key)
	s.writesBegun.Add(1)
	return func() { s.writesDone.Add(1) }
}

// beginFill marks a fill of key under way until the returned func runs.
func (g *warmGuard) beginFill(key string) func() {
	s := g.stripe(key)
	s.fillsBegun.Add(1)
	return func() { s.fillsDone.Add(1) }
}

// guardMark is what a stripe's counters were when an operation looked.
type guardMark struct {
	s     *guardStripe
	begun int64
	quiet bool // nothing was under way
}

// markWrites returns the writes of key's stripe now: quiet when none is
// under way. (Done is loaded first: a write that ends between the loads
// is counted as under way, never the other way round.)
func (g *warmGuard) markWrites(key string) guardMark {
	s := g.stripe(key)
	done := s.writesDone.Load()
	begun := s.writesBegun.Load()
	return guardMark{s: s, begun: begun, quiet: begun == done}
}

// markFills is markWrites for fills.
func (g *warmGuard) markFills(key string) guardMark {
	s := g.stripe(key)
	done := s.fillsDone.Load()
	begun := s.fillsBegun.Load()
	return guardMark{s: s, begun: begun, quiet: begun == done}
}

// writesSince reports whether a write of the stripe began after m.
func (m guardMark) writesSince() bool { return m.s.writesBegun.Load() != m.begun }

// fillsQuiet reports whether no fill of the stripe was under way at m nor
// began since.
func (m guardMark) fillsQuiet() bool { return m.quiet && m.s.fillsBegun.Load() == m.begun }
