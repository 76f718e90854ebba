package ratelimit

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
	"golang.org/x/time/rate"
)

// admitted counts how many of n Allow calls at the real clock succeed.
func admitted(a *Admitter, n int) int {
	ok := 0
	for range n {
		if a.Allow(time.Now()) {
			ok++
		}
	}
	return ok
}

func TestAdmitterBurst(t *testing.T) {
	a := NewAdmitter(5, 5)
	if got := admitted(a, 40); got < 5 || got > 7 {
		t.Fatalf("40 rapid calls at 5/s burst 5 admitted %d, want 5 to 7", got)
	}
}

func TestAdmitterCutShrinksTheBucket(t *testing.T) {
	t.Run("real clock", func(t *testing.T) {
		a := NewAdmitter(1000, 100)
		a.Set(5, 5, time.Now())
		if got := admitted(a, 40); got < 5 || got > 6 {
			t.Fatalf("after a cut from 1000/100 to 5/5, 40 rapid calls admitted %d, want 5 or 6", got)
		}
	})
	t.Run("fake clock", func(t *testing.T) {
		a := NewAdmitter(1000, 100)
		if !a.Allow(t0) { // the bucket is full (100 tokens)
			t.Fatal("a fresh admitter refused")
		}
		a.Set(5, 5, t0)
		got := 0
		for range 40 {
			if a.Allow(t0) {
				got++
			}
		}
		if got != 5 {
			t.Fatalf("after the cut, %d admitted at one instant, want exactly the new burst 5", got)
		}
		if l, b := a.Limit(); l != 5 || b != 5 {
			t.Fatalf("Limit() = %v, %v; want 5, 5", l, b)
		}
	})
}

func TestAdmitterRaiseRefillsAtTheNewRate(t *testing.T) {
	a := NewAdmitter(1, 1)
	if !a.Allow(t0) || a.Allow(t0) {
		t.Fatal("want exactly one admission from a bucket of 1")
	}
	a.Set(100, 10, t0)
	// A raise does not hand out tokens at once; they refill at 100/s.
	if a.Allow(t0) {
		t.Fatal("a raise minted a token")
	}
	n := 0
	for range 20 {
		if a.Allow(t0.Add(100 * time.Millisecond)) {
			n++
		}
	}
	if n != 10 {
		t.Fatalf("100ms at 100/s with burst 10 admitted %d, want 10", n)
	}
}

// TestAdmitterTimeNeverGoesBack is golang/go#65508: a late caller passing
// an older time must not move the limiter's clock back (which would mint
// the tokens of the same interval twice).
func TestAdmitterTimeNeverGoesBack(t *testing.T) {
	a := NewAdmitter(1, 2)
	calls := []time.Time{t0.Add(10 * time.Second), t0, t0.Add(10 * time.Second), t0.Add(10 * time.Second)}
	got := 0
	for _, c := range calls {
		if a.Allow(c) {
			got++
		}
	}
	if got != 2 {
		t.Fatalf("admitted %d, want 2 (the bucket of 2; no token may be minted by the older time)", got)
	}
	// Set with an older time must not move it back either.
	a.Set(1, 2, t0)
	if a.Allow(t0.Add(10 * time.Second)) {
		t.Fatal("an older Set minted tokens")
	}
}

func TestAdmitterZeroLimitAdmitsNothing(t *testing.T) {
	a := NewAdmitter(100, 10)
	a.Set(0, 1, t0)
	for i := range 5 {
		if ok, ra := a.Admit(t0.Add(time.Duration(i) * time.Minute)); ok || ra != ClosedRetryAfter {
			t.Fatalf("limit 0 answered %v, retry after %v; want a refusal with %v", ok, ra, ClosedRetryAfter)
		}
	}
	a.Set(5, 5, t0.Add(5*time.Minute))
	if !a.Allow(t0.Add(5*time.Minute + time.Second)) {
		t.Fatal("reopening at 5/s did not admit after a second")
	}
}

func TestAdmitterRetryAfter(t *testing.T) {
	tests := []struct {
		name  string
		limit float64
		burst int
		after time.Duration // time after the bucket was emptied
		want  time.Duration
	}{
		{"5/s: next token in 200ms, rounded up to 1s", 5, 5, 0, time.Second},
		{"0.1/s: next token in 10s", 0.1, 1, 0, 10 * time.Second},
		{"0.25/s: next token in 4s", 0.25, 1, 0, 4 * time.Second},
		{"0.25/s half refilled: 2s", 0.25, 1, 2 * time.Second, 2 * time.Second},
		{"0.3/s: 3.33s rounds up to 4s", 0.3, 1, 0, 4 * time.Second},
		{"tiny limit is capped", 1e-6, 1, 0, MaxRetryAfter},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := NewAdmitter(tt.limit, tt.burst)
			for range tt.burst {
				if !a.Allow(t0) {
					t.Fatal("the full bucket refused")
				}
			}
			ok, ra := a.Admit(t0.Add(tt.after))
			if ok {
				t.Fatal("the empty bucket admitted")
			}
			if ra != tt.want || a.RetryAfter(t0.Add(tt.after)) != tt.want {
				t.Fatalf("retry after %v, want %v", ra, tt.want)
			}
		})
	}
}

func TestAdmitterConcurrentNeverExceedsBurst(t *testing.T) {
	// 8 goroutines hammer a bucket of 20 at a fake instant: exactly 20 get
	// through, whatever the interleaving.
	a := NewAdmitter(1, 20)
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for i := range 100 {
				// Times jitter backwards and forwards around t0+1h.
				if a.Allow(t0.Add(time.Hour + time.Duration((g*100+i)%7)*time.Nanosecond)) {
					n++
				}
			}
			mu.Lock()
			total += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	if total != 20 {
		t.Fatalf("admitted %d, want 20 (the burst; 7ns cannot refill a 1/s bucket)", total)
	}
}

// TestAdmitterDecidesLikeTheLimiter drives an Admitter and a plain
// rate.Limiter with the same nondecreasing times and the same changes: the
// Admitter's lock-free refusals must never differ from the limiter's
// answer.
func TestAdmitterDecidesLikeTheLimiter(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	limits := []float64{0, 0.3, 1, 5, 50, 1000}
	for run := range 20 {
		limit, burst := limits[rng.IntN(len(limits))], 1+rng.IntN(10)
		a := NewAdmitter(limit, burst)
		ref := rate.NewLimiter(rateLimit(limit), bucketSize(limit, burst))
		now := t0
		for i := range 3000 {
			now = now.Add(time.Duration(rng.IntN(int(40 * time.Millisecond))))
			if rng.IntN(200) == 0 {
				limit, burst = limits[rng.IntN(len(limits))], 1+rng.IntN(10)
				a.Set(limit, burst, now)
				ref.SetLimitAt(now, rateLimit(limit))
				ref.SetBurstAt(now, bucketSize(limit, burst))
			}
			want := ref.AllowN(now, 1)
			var got bool
			var retry time.Duration
			if i%2 == 0 {
				got = a.Allow(now)
			} else {
				got, retry = a.Admit(now)
			}
			if got != want {
				t.Fatalf("run %d, call %d at %v (limit %v, burst %d): admitter %v, limiter %v", run, i, now.Sub(t0), limit, burst, got, want)
			}
			if i%2 == 1 && !got {
				wantRetry := a.RetryAfter(now)
				if retry != wantRetry || retry < time.Second || retry%time.Second != 0 {
					t.Fatalf("run %d, call %d: retry after %v from the fast path, %v from the limiter", run, i, retry, wantRetry)
				}
			}
		}
	}
}

func TestAdmitterDoesNotAllocate(t *testing.T) {
	a := NewAdmitter(1e9, 100)
	now := time.Now()
	if n := testing.AllocsPerRun(1000, func() { a.Allow(now) }); n != 0 {
		t.Errorf("Allow allocates %v times per call", n)
	}
	b := NewAdmitter(1, 1)
	if n := testing.AllocsPerRun(1000, func() { b.Admit(now) }); n != 0 {
		t.Errorf("Admit (refusing) allocates %v times per call", n)
	}
	consul, err := api.NewClient(&api.Config{Address: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := NewService(ServiceOptions{Client: consul, Key: "k", Config: testConfig})
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(1000, func() { svc.Admit() }); n != 0 {
		t.Errorf("Service.Admit allocates %v times per call", n)
	}
	c, err := NewClient(ClientOptions{Consul: consul, Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(1000, func() { c.Allow() }); n != 0 {
		t.Errorf("Client.Allow allocates %v times per call", n)
	}
}

func TestShareOf(t *testing.T) {
	tests := []struct {
		limit     float64
		burst, n  int
		wantLimit float64
		wantBurst int
	}{
		{1000, 100, 4, 250, 25},
		{1000, 100, 0, 1000, 100}, // no passing instance counts as one
		{100, 10, 3, 100.0 / 3, 4},
		{2, 1, 4, 1, 1}, // never below one boot per second
		{0, 1, 4, 0, 1}, // except when boots are stopped
		{10, 1, 1, 10, 1},
	}
	for _, tt := range tests {
		l, b := shareOf(tt.limit, tt.burst, tt.n)
		if l != tt.wantLimit || b != tt.wantBurst {
			t.Errorf("shareOf(%v, %d, %d) = %v, %d; want %v, %d", tt.limit, tt.burst, tt.n, l, b, tt.wantLimit, tt.wantBurst)
		}
	}
}

func TestPrefetch(t *testing.T) {
	for _, tc := range []struct {
		limit float64
		burst int
		want  int
	}{
		{5, 5, 1},
		{1000, 100, 1},
		{1999, 1000, 1},
		{3000, 10, 1},
		{10_000, 1000, 10},
		{10_000, 40, 5},
		{1e9, 1000, 64},
		{math.Inf(1), 1, 64},
		{0, 1, 1},
	} {
		if got := prefetch(tc.limit, tc.burst); got != tc.want {
			t.Errorf("prefetch(%v, %d) = %d, want %d", tc.limit, tc.burst, got, tc.want)
		}
	}
}

// TestAdmitterPrefetchAdmitsNoMoreThanPlain runs the same boots through an
// Admitter that prefetches and a plain rate.Limiter: the Admitter never
// admits more at any point, and at most one chunk fewer.
func TestAdmitterPrefetchAdmitsNoMoreThanPlain(t *testing.T) {
	const limit, burst = 1e6, 800
	a := NewAdmitter(limit, burst)
	if a.chunk != 64 {
		t.Fatalf("chunk %d, want 64 at 1e6/s with burst 800", a.chunk)
	}
	plain := rate.NewLimiter(rate.Limit(limit), burst)
	base := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
	got, want := 0, 0
	for i := range 200_000 {
		now := base.Add(time.Duration(i/2) * 500 * time.Nanosecond) // 4 boots per µs offered, 1 per µs allowed
		if a.Allow(now) {
			got++
		}
		if plain.AllowN(now, 1) {
			want++
		}
		if got > want || got < want-64 {
			t.Fatalf("after %d boots: the admitter admitted %d, the plain limiter %d", i+1, got, want)
		}
	}
	// A cut drops what was prefetched under the old limit.
	a.Set(5, 5, base.Add(time.Second))
	n := 0
	for range 100 {
		if a.Allow(base.Add(time.Second)) {
			n++
		}
	}
	if n > 5 {
		t.Fatalf("after a cut to 5/s burst 5, %d boots admitted at once", n)
	}
}
