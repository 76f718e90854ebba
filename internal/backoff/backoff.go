// Package backoff spaces out retries after errors, one rule for all of
// mcrib's loops: exponential from Min, doubling with each failure in a row,
// capped at Max, with "equal jitter" (a wait drawn from [d/2, d)) so that
// replicas that failed together do not retry in step.
package backoff

import (
	"math/rand/v2"
	"time"
)

// Defaults of a zero Backoff.
const (
	DefaultMin = 100 * time.Millisecond
	DefaultMax = 5 * time.Second
)

// Backoff is the wait schedule of one retry loop. The zero value waits
// 100ms, 200ms, … up to 5s, each jittered into [d/2, d). It is not safe for
// concurrent use: each loop owns its own.
type Backoff struct {
	// Min is the ceiling of the first wait; zero means DefaultMin.
	Min time.Duration
	// Max caps every wait; zero means DefaultMax.
	Max time.Duration
	// Jitter returns a number in [0, 1); nil means math/rand/v2.Float64.
	// Tests pass a constant for exact waits.
	Jitter func() float64

	failures int
}

// Next records one more failure and returns the wait before the next try.
func (b *Backoff) Next() time.Duration {
	b.failures++
	return b.Delay(b.failures)
}

// Reset is called after a success: the next failure waits Min again.
func (b *Backoff) Reset() { b.failures = 0 }

// Failures returns the failures in a row recorded since the last Reset.
func (b *Backoff) Failures() int { return b.failures }

// Delay returns the wait after the n-th failure in a row (1 for the first)
// without recording anything.
func (b *Backoff) Delay(n int) time.Duration {
	lo, hi := b.Min, b.Max
	if lo <= 0 {
		lo = DefaultMin
	}
	if hi <= 0 {
		hi = DefaultMax
	}
	lo = min(lo, hi)
	d := hi
	if n <= 1 {
		d = lo
	} else if shift := n - 1; shift < 32 && lo<<shift > 0 && lo<<shift < hi {
		d = lo << shift
	}
	j := rand.Float64
	if b.Jitter != nil {
		j = b.Jitter
	}
	f := j()
	if f < 0 || f >= 1 {
		f = 0
	}
	return d/2 + time.Duration(float64(d/2)*f)
}
