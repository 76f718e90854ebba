package ratelimit

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Retry-After bounds.
const (
	// ClosedRetryAfter is the Retry-After of a refusal while the limit is
	// 0 (boots stopped by an operator): there is no refill to wait for.
	ClosedRetryAfter = 10 * time.Second
	// MaxRetryAfter caps every Retry-After.
	MaxRetryAfter = time.Hour
)

// Admitter answers boot admissions from a golang.org/x/time/rate token
// bucket kept equal to the current limit and burst.
//
// Two properties of rate.Limiter are handled here. Lowering its limit keeps
// the tokens already in the bucket, so Set also lowers the burst, which caps
// the tokens at the new burst before the next admission. And a time older
// than the last one passed to the limiter moves its clock back and mints
// tokens (golang/go#65508), so every time passed on is first raised to the
// latest time seen: the limiter only ever sees a nondecreasing clock, even
// when callers on several goroutines read their clocks in one order and
// reach the Admitter in another.
//
// At high limits an admission takes a few tokens at once and keeps the
// rest for the next boots, which then take one without a lock (prefetch
// says how many; under a thousand boots/s it is one).
//
// After a refusal the Admitter notes until when the bucket is known to hold
// less than one token; until then it refuses without locking, which is what
// the limiter would answer (a refusal changes nothing in it, and its tokens
// only grow with time). A flood of boots during an incident, mostly refused,
// therefore costs one atomic load per boot.
//
// A limit of 0 admits nothing. The zero value is not usable; build one with
// NewAdmitter. An Admitter is safe for concurrent use; Allow and Admit do
// not allocate.
type Admitter struct {
	// local holds tokens taken from the limiter ahead of their boots (see
	// prefetch); an admission takes one with a compare-and-swap, no lock.
	local atomic.Int64
	// emptyUntil is the time, in nanoseconds after base, before which the
	// bucket holds less than one token; 0 means unknown, and closed (the
	// limit is 0) means until further notice.
	emptyUntil atomic.Int64
	// base is the first time seen; it is written once, under mu, before
	// emptyUntil is first set, and never again.
	base time.Time

	mu    sync.Mutex
	lim   *rate.Limiter
	last  time.Time // latest time passed to lim
	limit float64
	burst int
	chunk int // tokens taken from lim per locked admission; see prefetch
}

// prefetch returns how many tokens one locked admission takes from the
// limiter: the rest wait in local for the next boots, which then need no
// lock. It is at most a millisecond's worth of tokens, an eighth of the
// burst and 64, so a high limit admits without contention while a low one
// (under a thousand boots/s, or a burst under 16) takes exactly one token
// per boot, as a plain limiter does. Prefetched tokens are taken from the
// bucket before their boots happen, never after: the limit and the burst
// hold as they would without it.
func prefetch(limit float64, burst int) int {
	if math.IsInf(limit, 1) {
		return 64
	}
	perMilli := limit / 1000
	if !(perMilli >= 2) {
		return 1
	}
	return max(1, min(int(perMilli), burst/8, 64))
}

// closed is emptyUntil while the limit is 0.
const closed = math.MaxInt64

// NewAdmitter returns an Admitter enforcing limit boots per second with the
// given burst, starting with a full bucket.
func NewAdmitter(limit float64, burst int) *Admitter {
	return &Admitter{
		lim:   rate.NewLimiter(rateLimit(limit), bucketSize(limit, burst)),
		limit: limit,
		burst: burst,
		chunk: prefetch(limit, burst),
	}
}

// rateLimit converts a limit to a rate.Limit; +Inf is rate.Inf.
func rateLimit(limit float64) rate.Limit {
	if math.IsInf(limit, 1) {
		return rate.Inf
	}
	return rate.Limit(max(limit, 0))
}

// bucketSize is the limiter's burst for limit and burst: 0 when the limit
// is 0 (so nothing is admitted), else at least 1.
func bucketSize(limit float64, burst int) int {
	if !(limit > 0) {
		return 0
	}
	return max(burst, 1)
}

// monotonic returns now, or the latest time seen if now is older, and
// records it. It requires a.mu.
func (a *Admitter) monotonic(now time.Time) time.Time {
	if now.Before(a.last) {
		return a.last
	}
	a.last = now
	return now
}

// Set changes the limit and the burst at now. Tokens above the new burst
// are dropped, so a cut leaves at most the new burst admittable at once.
func (a *Admitter) Set(limit float64, burst int, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.monotonic(now)
	a.emptyUntil.Store(0)
	a.local.Store(0) // tokens taken under the old limit do not outlive it
	a.lim.SetLimitAt(t, rateLimit(limit))
	a.lim.SetBurstAt(t, bucketSize(limit, burst))
	a.limit, a.burst, a.chunk = limit, burst, prefetch(limit, burst)
}

// takeLocal takes one prefetched token, if there is one.
func (a *Admitter) takeLocal() bool {
	for {
		n := a.local.Load()
		if n <= 0 {
			return false
		}
		if a.local.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// allowLocked takes a token for one boot at t from the limiter, and when
// the chunk is larger than one, the chunk at once if the bucket holds it,
// keeping the rest in local. It requires a.mu.
func (a *Admitter) allowLocked(t time.Time) bool {
	if k := a.chunk; k > 1 && a.lim.AllowN(t, k) {
		a.local.Add(int64(k - 1))
		return true
	}
	return a.lim.AllowN(t, 1)
}

// Limit returns the limit and the burst being enforced.
func (a *Admitter) Limit() (limit float64, burst int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.limit, a.burst
}

// Allow reports whether one boot may happen at now, and takes its token if
// so.
func (a *Admitter) Allow(now time.Time) bool {
	if a.takeLocal() {
		return true
	}
	if _, empty := a.knownEmpty(now); empty {
		return false
	}
	a.mu.Lock()
	t := a.monotonic(now)
	ok := a.allowLocked(t)
	if !ok {
		a.noteEmpty(t)
	}
	a.mu.Unlock()
	return ok
}

// Admit is Allow that also says, on refusal, how long to wait before the
// next token: whole seconds, at least 1s (for a Retry-After header).
func (a *Admitter) Admit(now time.Time) (ok bool, retryAfter time.Duration) {
	if a.takeLocal() {
		return true, 0
	}
	if until, empty := a.knownEmpty(now); empty {
		if until == closed {
			return false, ClosedRetryAfter
		}
		return false, wholeSeconds(time.Duration(until) - now.Sub(a.base))
	}
	a.mu.Lock()
	t := a.monotonic(now)
	ok = a.allowLocked(t)
	if !ok {
		a.noteEmpty(t)
		retryAfter = a.retryAfter(t)
	}
	a.mu.Unlock()
	return ok, retryAfter
}

// knownEmpty reports whether the bucket is known to hold less than one
// token at now, and until when. It takes no lock.
func (a *Admitter) knownEmpty(now time.Time) (until int64, empty bool) {
	until = a.emptyUntil.Load()
	switch until {
	case 0:
		return 0, false
	case closed:
		return closed, true
	}
	// a.base was written before the Store that until came from.
	return until, int64(now.Sub(a.base)) < until
}

// noteEmpty records, after a refusal at t, until when the bucket will hold
// less than one token (rounded down, so no admission is refused that the
// limiter would grant; at most MaxRetryAfter ahead). It requires a.mu.
func (a *Admitter) noteEmpty(t time.Time) {
	if a.base.IsZero() {
		a.base = t
	}
	if !(a.limit > 0) {
		a.emptyUntil.Store(closed)
		return
	}
	need := 1 - a.lim.TokensAt(t)
	if !(need > 0) {
		return
	}
	wait := min(need/a.limit, MaxRetryAfter.Seconds())
	until := int64(t.Sub(a.base)) + int64(wait*float64(time.Second))
	if until > 0 && until < closed {
		a.emptyUntil.Store(until)
	}
}

// RetryAfter returns how long from now until a token is free: whole
// seconds, at least 1s, at most MaxRetryAfter; ClosedRetryAfter while the
// limit is 0.
func (a *Admitter) RetryAfter(now time.Time) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.retryAfter(a.monotonic(now))
}

// retryAfter requires a.mu.
func (a *Admitter) retryAfter(t time.Time) time.Duration {
	if !(a.limit > 0) {
		return ClosedRetryAfter
	}
	need := 1 - a.lim.TokensAt(t)
	return wholeSeconds(time.Duration(min(need/a.limit, MaxRetryAfter.Seconds()) * float64(time.Second)))
}

// wholeSeconds rounds d up to whole seconds, at least 1s and at most
// MaxRetryAfter.
func wholeSeconds(d time.Duration) time.Duration {
	switch {
	case d <= time.Second:
		return time.Second
	case d >= MaxRetryAfter:
		return MaxRetryAfter
	}
	return (d + time.Second - 1).Truncate(time.Second)
}
