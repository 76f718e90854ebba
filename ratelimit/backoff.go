package ratelimit

import (
	"context"
	"math/rand/v2"
	"time"
)

// backoff spaces out retries after errors: exponential from min to max,
// with ±20% jitter so replicas do not retry in step. The zero value uses
// 100ms and 5s. A backoff is not safe for concurrent use.
type backoff struct {
	min, max time.Duration
	n        int
}

// next returns the wait before the next retry and lengthens the one after.
func (b *backoff) next() time.Duration {
	lo, hi := b.min, b.max
	if lo <= 0 {
		lo = 100 * time.Millisecond
	}
	if hi <= 0 {
		hi = 5 * time.Second
	}
	d := lo << min(b.n, 30)
	if d > hi || d <= 0 {
		d = hi
	} else {
		b.n++
	}
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// reset starts the next series of retries from min again.
func (b *backoff) reset() { b.n = 0 }

// sleep waits for d or until ctx ends; it reports whether ctx is still
// alive.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
