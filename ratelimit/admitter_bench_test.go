package ratelimit

import (
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
	"golang.org/x/time/rate"
)

// BenchmarkAllow measures the admission decision in process: the Admitter
// (what Service.Admit uses), the Client (what a web application calls) and,
// as the baseline, a plain rate.Limiter.Allow, each with 1 and 8
// goroutines, each reading the real clock once per call. "inf" and "1e9"
// admit every call, so they measure the decision itself; "1000" refuses
// most calls once its burst is spent.
func BenchmarkAllow(b *testing.B) {
	for _, l := range benchLimits {
		impls := []struct {
			name  string
			allow func() func() bool
		}{
			{"plain", func() func() bool {
				return rate.NewLimiter(rateLimit(l.limit), l.burst).Allow
			}},
			{"admitter", func() func() bool {
				a := NewAdmitter(l.limit, l.burst)
				return func() bool { return a.Allow(time.Now()) }
			}},
			{"client", func() func() bool {
				return benchClient(b, l.limit, l.burst).Allow
			}},
		}
		for _, impl := range impls {
			for _, g := range []int{1, 8} {
				b.Run(fmt.Sprintf("%s/%s/goroutines=%d", l.name, impl.name, g), func(b *testing.B) {
					allow := impl.allow()
					runAllow(b, g, func(int64) { allow() })
				})
			}
		}
	}
}

// BenchmarkAllowAt is BenchmarkAllow without the clock: every call passes
// a time computed from a counter, so only the decision is measured (on
// virtual machines whose clock source makes time.Now cost hundreds of
// nanoseconds, the clock otherwise dominates). The plain limiter gets
// AllowN(t, 1), the Admitter Allow(t).
func BenchmarkAllowAt(b *testing.B) {
	for _, l := range benchLimits {
		impls := []struct {
			name  string
			allow func() func(time.Time) bool
		}{
			{"plain", func() func(time.Time) bool {
				lim := rate.NewLimiter(rateLimit(l.limit), l.burst)
				return func(t time.Time) bool { return lim.AllowN(t, 1) }
			}},
			{"admitter", func() func(time.Time) bool {
				return NewAdmitter(l.limit, l.burst).Allow
			}},
		}
		for _, impl := range impls {
			for _, g := range []int{1, 8} {
				b.Run(fmt.Sprintf("%s/%s/goroutines=%d", l.name, impl.name, g), func(b *testing.B) {
					allow := impl.allow()
					base := time.Now()
					runAllow(b, g, func(i int64) { allow(base.Add(time.Duration(i) * 50)) })
				})
			}
		}
	}
}

// benchLimits are the limits the benchmarks run at.
var benchLimits = []struct {
	name  string
	limit float64
	burst int
}{
	{"limit=inf", math.Inf(1), 100},
	{"limit=1e9", 1e9, 1000},
	{"limit=1000", 1000, 100},
}

// runAllow calls call with a per-goroutine counter, in goroutines
// goroutines: one runs a plain loop, more use RunParallel, which starts
// parallelism × GOMAXPROCS goroutines (8 on a 2-core or 4-core machine).
func runAllow(b *testing.B, goroutines int, call func(i int64)) {
	b.ReportAllocs()
	if goroutines == 1 {
		var i int64
		for b.Loop() {
			i++
			call(i)
		}
		return
	}
	b.SetParallelism(max(1, goroutines/runtime.GOMAXPROCS(0)))
	b.RunParallel(func(pb *testing.PB) {
		var i int64
		for pb.Next() {
			i++
			call(i)
		}
	})
}

// benchClient returns a Client already following a published limit (Run is
// not needed to decide admissions).
func benchClient(b *testing.B, limit float64, burst int) *Client {
	b.Helper()
	consul, err := api.NewClient(api.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	c, err := NewClient(ClientOptions{Consul: consul, Key: "bench/default/bootlimit"})
	if err != nil {
		b.Fatal(err)
	}
	c.mu.Lock()
	c.doc, c.haveDoc = Document{Mode: ModeAuto, Limit: limit, Burst: burst}, true
	c.mu.Unlock()
	c.share()
	if got := c.Limit(); got != limit {
		b.Fatalf("client share %v, want %v", got, limit)
	}
	return c
}

// BenchmarkSlowStartQuiet measures what the boot-surge slow start adds in
// front of the Admitter (Service.Admit's path) when it caps nothing: in
// manual mode, or with no surge on and a second's requests under its
// threshold. It then costs atomics only, no mutex; during a surge it takes
// its mutex, as any admission under a cap does.
func BenchmarkSlowStartQuiet(b *testing.B) {
	for _, g := range []int{1, 8} {
		b.Run(fmt.Sprintf("admitter/goroutines=%d", g), func(b *testing.B) {
			a := NewAdmitter(1000, 100)
			runAllow(b, g, func(int64) { a.Admit(time.Now()) })
		})
		b.Run(fmt.Sprintf("slowstart+admitter/goroutines=%d", g), func(b *testing.B) {
			a := NewAdmitter(1000, 100)
			s := NewSlowStart(ControllerConfig{Floor: 10, Ceiling: 1000, Low: 0.8, Target: 0.9, Interval: 5 * time.Second})
			s.SetLimit(1000, true)
			runAllow(b, g, func(int64) {
				now := time.Now()
				if ok, _ := s.Allow(now); ok {
					if ok, _ := a.Admit(now); ok {
						s.Admitted()
					}
				}
			})
		})
	}
}
