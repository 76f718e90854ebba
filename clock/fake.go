package clock

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Fake is a Clock that moves only when told to (Advance, Set). Timers and
// tickers made from it fire, in order of their deadlines, as Advance
// passes them. BlockUntil lets a test wait until the code under test is
// waiting on the clock before it moves time. Build it with NewFake; it is
// safe for concurrent use.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	waiters []*fakeWaiter
	changed chan struct{} // closed and replaced whenever waiters change
}

// NewFake returns a Fake that reads start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start, changed: make(chan struct{})}
}

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// NewTimer returns a timer that fires when the fake time reaches d from
// now (at once, on the next Advance, if d <= 0).
func (f *Fake) NewTimer(d time.Duration) Timer {
	w := &fakeWaiter{f: f, ch: make(chan time.Time, 1)}
	f.mu.Lock()
	defer f.mu.Unlock()
	w.armLocked(d, 0)
	if d <= 0 {
		w.fireLocked()
	}
	return w
}

// NewTicker returns a ticker that ticks every d of fake time.
func (f *Fake) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("clock: non-positive interval for NewTicker")
	}
	w := &fakeWaiter{f: f, ch: make(chan time.Time, 1)}
	f.mu.Lock()
	defer f.mu.Unlock()
	w.armLocked(d, d)
	return fakeTicker{w}
}

// Advance moves the fake time forward by d, firing every timer and ticker
// whose deadline it passes, in deadline order. A ticker passed several
// times fires once per period, dropping ticks its reader does not take, as
// time.Ticker does.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setLocked(f.now.Add(d))
}

// Set moves the fake time to t (forward only; an earlier t is ignored) and
// fires what it passes, as Advance does.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.After(f.now) {
		f.setLocked(t)
	}
}

func (f *Fake) setLocked(end time.Time) {
	for {
		var next *fakeWaiter
		for _, w := range f.waiters {
			if !w.when.After(end) && (next == nil || w.when.Before(next.when)) {
				next = w
			}
		}
		if next == nil {
			break
		}
		if next.when.After(f.now) {
			f.now = next.when
		}
		next.fireLocked()
	}
	f.now = end
}

// Waiters returns how many timers and tickers are armed.
func (f *Fake) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}

// BlockUntil waits until at least n timers and tickers are armed, or ctx
// ends; it reports whether n was reached.
func (f *Fake) BlockUntil(ctx context.Context, n int) bool {
	for {
		f.mu.Lock()
		have, changed := len(f.waiters), f.changed
		f.mu.Unlock()
		if have >= n {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-changed:
		}
	}
}

func (f *Fake) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *Fake) removeLocked(w *fakeWaiter) bool {
	i := slices.Index(f.waiters, w)
	if i < 0 {
		return false
	}
	f.waiters = slices.Delete(f.waiters, i, i+1)
	f.notifyLocked()
	return true
}

// fakeWaiter is a timer (period 0) or a ticker of a Fake.
type fakeWaiter struct {
	f      *Fake
	when   time.Time
	period time.Duration
	ch     chan time.Time
}

func (w *fakeWaiter) armLocked(d, period time.Duration) {
	w.f.removeLocked(w)
	w.when, w.period = w.f.now.Add(d), period
	w.f.waiters = append(w.f.waiters, w)
	w.f.notifyLocked()
}

// fireLocked sends the time without blocking (the channel holds one tick)
// and re-arms a ticker or disarms a timer.
func (w *fakeWaiter) fireLocked() {
	select {
	case w.ch <- w.when:
	default:
	}
	if w.period > 0 {
		w.when = w.when.Add(w.period)
		return
	}
	w.f.removeLocked(w)
}

func (w *fakeWaiter) C() <-chan time.Time { return w.ch }

func (w *fakeWaiter) Stop() bool {
	w.f.mu.Lock()
	defer w.f.mu.Unlock()
	return w.f.removeLocked(w)
}

func (w *fakeWaiter) Reset(d time.Duration) bool {
	w.f.mu.Lock()
	defer w.f.mu.Unlock()
	active := slices.Contains(w.f.waiters, w)
	w.armLocked(d, 0)
	if d <= 0 {
		w.fireLocked()
	}
	return active
}

type fakeTicker struct{ w *fakeWaiter }

func (t fakeTicker) C() <-chan time.Time { return t.w.ch }
func (t fakeTicker) Stop()               { t.w.Stop() }
func (t fakeTicker) Reset(d time.Duration) {
	if d <= 0 {
		panic("clock: non-positive interval for Ticker.Reset")
	}
	t.w.f.mu.Lock()
	defer t.w.f.mu.Unlock()
	t.w.armLocked(d, d)
}

var _ Clock = (*Fake)(nil)
