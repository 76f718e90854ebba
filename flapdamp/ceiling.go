package flapdamp

import (
	"slices"
	"time"
)

// CeilingWindow is the sliding window of Ceiling: a replacement recorded at t
// counts against the ceiling until t + CeilingWindow.
const CeilingWindow = 60 * time.Second

// Ceiling is the replacement ceiling: it allows at most PerMinute slot
// replacements in any CeilingWindow (60 s) sliding window
// (mcrib serve --max-replacements-per-minute). A replacement recorded at t
// frees its place again at exactly t + 60 s.
//
// Times that go backwards never mint capacity: a now earlier than the latest
// recorded replacement is treated as that time (golang/go#65508 is the same
// trap in x/time/rate).
//
// The zero value, like any Ceiling with PerMinute <= 0, allows nothing.
// A Ceiling is not safe for concurrent use.
type Ceiling struct {
	// PerMinute is how many replacements fit in any 60 s window.
	PerMinute int

	// recent holds the recorded replacement times still inside the window
	// as of the latest Record, oldest first (non-decreasing).
	recent []time.Time
}

// Allow reports whether one more replacement fits at now. It does not record
// one; call Record when the replacement is made.
func (c *Ceiling) Allow(now time.Time) bool {
	return c.Remaining(now) > 0
}

// Record records one replacement made at now. It records even when Allow
// would refuse, so that a forced replacement still counts.
func (c *Ceiling) Record(now time.Time) {
	now = c.clamp(now)
	first := c.firstInWindow(now)
	// Drop what has left the window, reusing the backing array.
	n := copy(c.recent, c.recent[first:])
	c.recent = append(c.recent[:n], now)
}

// GiveBack forgets one replacement recorded at exactly at, when there is
// one, and reports whether there was: a replacement counted when it was
// announced and then dropped before it was made (docs/api.md, "Announce,
// then serve") frees its place again. A time matching no record gives
// nothing back, so a give-back that cannot be matched errs on the side of
// counting.
func (c *Ceiling) GiveBack(at time.Time) bool {
	i := slices.IndexFunc(c.recent, func(t time.Time) bool { return t.Equal(at) })
	if i < 0 {
		return false
	}
	c.recent = slices.Delete(c.recent, i, i+1)
	return true
}

// Remaining returns how many more replacements fit at now (0 when none).
func (c *Ceiling) Remaining(now time.Time) int {
	now = c.clamp(now)
	inWindow := len(c.recent) - c.firstInWindow(now)
	return max(c.PerMinute-inWindow, 0)
}

// NextAt returns the earliest time, not before now, at which one more
// replacement fits, assuming none is recorded meanwhile: now itself when one
// fits now, else when enough recorded replacements leave the window. With
// PerMinute <= 0 nothing ever fits and NextAt returns the zero Time.
func (c *Ceiling) NextAt(now time.Time) time.Time {
	if c.PerMinute <= 0 {
		return time.Time{}
	}
	eff := c.clamp(now)
	first := c.firstInWindow(eff)
	inWindow := len(c.recent) - first
	if inWindow < c.PerMinute {
		return now
	}
	// One fits once inWindow-PerMinute+1 of the oldest have left.
	return c.recent[first+inWindow-c.PerMinute].Add(CeilingWindow)
}

// Recent returns the recorded replacement times still inside the window at
// now, oldest first, with n more at now (the replacements about to be
// made): what a leader stores so that the next one honours the window.
func (c *Ceiling) Recent(now time.Time, n int) []time.Time {
	now = c.clamp(now)
	out := append([]time.Time(nil), c.recent[c.firstInWindow(now):]...)
	for range n {
		out = append(out, now)
	}
	return out
}

// Adopt merges replacement times recorded elsewhere (by a previous leader)
// into c as a multiset: each instant counts as often as it appears in times
// or in c, whichever is more. The times a leader stores include those this
// ceiling recorded itself, so adopting them back counts nothing twice,
// while two replacements made at the same instant count as two.
func (c *Ceiling) Adopt(times []time.Time) {
	if len(times) == 0 {
		return
	}
	sorted := slices.SortedFunc(slices.Values(times), func(a, b time.Time) int { return a.Compare(b) })
	for i := 0; i < len(sorted); {
		t := sorted[i]
		n := 1
		for i+n < len(sorted) && sorted[i+n].Equal(t) {
			n++
		}
		i += n
		lo, _ := slices.BinarySearchFunc(c.recent, t, func(a, b time.Time) int { return a.Compare(b) })
		have := 0
		for lo+have < len(c.recent) && c.recent[lo+have].Equal(t) {
			have++
		}
		for range n - have {
			c.recent = slices.Insert(c.recent, lo, t)
		}
	}
}

// clamp returns now, or the latest recorded time when now is earlier.
func (c *Ceiling) clamp(now time.Time) time.Time {
	if n := len(c.recent); n > 0 && now.Before(c.recent[n-1]) {
		return c.recent[n-1]
	}
	return now
}

// firstInWindow returns the index of the oldest recorded time t still in
// the window at now, that is with now < t + CeilingWindow.
func (c *Ceiling) firstInWindow(now time.Time) int {
	for i, t := range c.recent {
		if now.Before(t.Add(CeilingWindow)) {
			return i
		}
	}
	return len(c.recent)
}
