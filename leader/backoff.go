package leader

import "time"

// Retry delays between failed campaigns: they start at minRetryDelay, double
// with each consecutive failure and are capped at maxRetryDelay.
const (
	minRetryDelay = 250 * time.Millisecond
	maxRetryDelay = 5 * time.Second
)

// retryDelay returns how long to wait after the given number of consecutive
// failures (1 for the first). jitter in [0, 1) spreads the delay over
// [d/2, d) so that several electors that failed together do not retry in
// step. It is a pure function.
func retryDelay(failures int, jitter float64) time.Duration {
	d := minRetryDelay
	for i := 1; i < failures && d < maxRetryDelay; i++ {
		d *= 2
	}
	d = min(d, maxRetryDelay)
	if jitter < 0 || jitter >= 1 {
		jitter = 0
	}
	return d/2 + time.Duration(float64(d/2)*jitter)
}
