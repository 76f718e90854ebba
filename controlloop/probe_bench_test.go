package controlloop

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/testenv"
)

// benchLoop is a loop over fakes whose prober is real, tracking every fake
// node: a probe of it is a real TCP connection and a stats exchange.
func benchLoop(b *testing.B, fm *testenv.FakeMemcached, interval time.Duration) *Loop {
	b.Helper()
	store := &fakeStore{}
	loop, err := New(Options{
		Pool: assignPool, KVPrefix: "mcrib", NumSlots: 16,
		Hold: time.Minute, ProbeInterval: interval, MaxAbsentFraction: 0.25,
		Store: store, Discovery: &fakeDiscovery{}, Leadership: &fakeLeader{store: store},
		Prober: cachenodes.NewProber(cachenodes.ProberOptions{Timeout: time.Second}),
	})
	if err != nil {
		b.Fatal(err)
	}
	var m cachenodes.Membership
	for i, addr := range fm.Addrs() {
		m.Instances = append(m.Instances, cachenodes.Instance{Node: cachenodes.Node{ID: fmt.Sprintf("n%05d", i), Addr: addr}, Present: true})
	}
	loop.onAnswer(m)
	return loop
}

// BenchmarkProbeRound probes 2,000 fake memcached nodes once per op over
// real TCP: the time one round takes and the connections per second. The
// target is a round well within one probe interval (2s) on 2 cores.
func BenchmarkProbeRound(b *testing.B) {
	const nodes = 2000
	fm := testenv.StartFakeMemcached(b, testenv.FakeMemcachedOptions{Nodes: nodes})
	loop := benchLoop(b, fm, 2*time.Second)
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		loop.probeRound(ctx)
	}
	elapsed := time.Since(start)
	b.ReportMetric(float64(nodes*b.N)/elapsed.Seconds(), "conns/s")
	b.ReportMetric(elapsed.Seconds()/float64(b.N), "s/round")
}

// BenchmarkVerdictDelay measures how long the probe loop takes, from its
// start, to have a verdict on every healthy node: 1,000 healthy nodes
// alone, then beside 1,000 black-holed ones (they accept and never answer,
// so each of their probes hangs for the 1s timeout). Probes are per node,
// so the black-holed ones must not delay the healthy ones by anything like
// a probe interval; the ratio of the two is reported.
func BenchmarkVerdictDelay(b *testing.B) {
	for _, silent := range []int{0, 1000} {
		b.Run(fmt.Sprintf("silent=%d", silent), func(b *testing.B) {
			const healthy = 1000
			fm := testenv.StartFakeMemcached(b, testenv.FakeMemcachedOptions{Nodes: healthy + silent})
			for _, n := range fm.Nodes[healthy:] {
				n.SetMode(testenv.FakeSilent)
			}
			var worst time.Duration
			for b.Loop() {
				loop := benchLoop(b, fm, 2*time.Second)
				ctx, cancel := context.WithCancel(context.Background())
				var wg sync.WaitGroup
				start := time.Now()
				wg.Go(func() { loop.probeLoop(ctx) })
				for !allProbed(loop, healthy) {
					time.Sleep(time.Millisecond)
				}
				worst = max(worst, time.Since(start))
				cancel()
				wg.Wait()
			}
			b.ReportMetric(worst.Seconds()*1000, "ms-to-all-healthy")
		})
	}
}

// allProbed reports whether the first n nodes (the healthy ones, by ID)
// have been read at least once.
func allProbed(l *Loop, n int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range n {
		s, ok := l.tr.nodes[fmt.Sprintf("n%05d", i)]
		if !ok || !s.haveStats {
			return false
		}
	}
	return true
}
