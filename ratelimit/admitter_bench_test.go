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
// goroutines. "inf" and "1e9" admit every call, so they measure the
// decision itself; "1000" refuses most calls once its burst is spent.
func BenchmarkAllow(b *testing.B) {
	limits := []struct {
		name  string
		limit float64
		burst int
	}{
		{"limit=inf", math.Inf(1), 100},
		{"limit=1e9", 1e9, 1000},
		{"limit=1000", 1000, 100},
	}
	for _, l := range limits {
		impls := []struct {
			name  string
			allow func() func() bool
		}{
			{"plain", func() func() bool {
				lim := rate.NewLimiter(rateLimit(l.limit), l.burst)
				return lim.Allow
			}},
			{"admitter", func() func() bool {
				a := NewAdmitter(l.limit, l.burst)
				return func() bool { return a.Allow(time.Now()) }
			}},
			{"client", func() func() bool {
				c := benchClient(b, l.limit, l.burst)
				return c.Allow
			}},
		}
		for _, impl := range impls {
			for _, g := range []int{1, 8} {
				b.Run(fmt.Sprintf("%s/%s/goroutines=%d", l.name, impl.name, g), func(b *testing.B) {
					allow := impl.allow()
					b.ReportAllocs()
					if g == 1 {
						for b.Loop() {
							allow()
						}
						return
					}
					// RunParallel starts parallelism × GOMAXPROCS goroutines.
					b.SetParallelism(max(1, g/runtime.GOMAXPROCS(0)))
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							allow()
						}
					})
				})
			}
		}
	}
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
