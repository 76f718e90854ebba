package controlloop

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/clock"
	"github.com/mcrib/mcrib/internal/leakcheck"
)

// TestRunSchedulesOnTheClock runs the loop over fakes: a failed pass waits
// for its backoff on the loop's clock (and no longer), passes follow kicks,
// and the ticks of the probe interval drive both passes and probe rounds.
func TestRunSchedulesOnTheClock(t *testing.T) {
	leakcheck.Check(t)
	clk := clock.NewFake(assignNow)
	store := &fakeStore{failReads: 2}
	lead := &fakeLeader{store: store}
	lead.win("s1")
	disc := &fakeDiscovery{answers: make(chan cachenodes.Membership), taken: make(chan struct{})}
	prober := &fakeProber{}
	metrics := &fakeMetrics{}
	loop, err := New(Options{
		Pool: assignPool, KVPrefix: "mcrib", NumSlots: 2,
		Hold: time.Minute, ProbeInterval: time.Minute, MaxAbsentFraction: 0.5, MaxReplacementsPerMinute: 10,
		Store: store, Discovery: disc, Leadership: lead, Prober: prober, Clock: clk, Metrics: metrics,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { loop.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})

	waitCtx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	passes := func(n int) []string {
		t.Helper()
		waitUntil(t, &metrics.mu, &metrics.changed, fmt.Sprintf("%d passes", n), func() bool { return len(metrics.passes) >= n })
		metrics.mu.Lock()
		defer metrics.mu.Unlock()
		return slices.Clone(metrics.passes)
	}
	// backingOff waits until Run sleeps on its backoff timer (beside the
	// two tickers) and checks how many times the store was read.
	backingOff := func(reads int) {
		t.Helper()
		if !clk.BlockUntil(waitCtx, 3) {
			t.Fatal("Run does not wait on a backoff timer")
		}
		store.mu.Lock()
		defer store.mu.Unlock()
		if store.reads != reads {
			t.Fatalf("%d reads while backing off, want %d", store.reads, reads)
		}
	}

	var m cachenodes.Membership
	for _, id := range []string{"a", "b", "c"} {
		m.Instances = append(m.Instances, cachenodes.Instance{Node: cacheNode(id), Present: true})
	}
	disc.answers <- m
	<-disc.taken
	if got := passes(1); !slices.Equal(got, []string{OutcomeError}) {
		t.Fatalf("passes %v", got)
	}
	backingOff(1)
	clk.Advance(time.Second)
	loop.Kick()
	passes(2)
	backingOff(2)
	clk.Advance(time.Second)
	loop.Kick()
	// A kick of the probe loop may add a pass after the third.
	if got := passes(3); !slices.Equal(got[:3], []string{OutcomeError, OutcomeError, OutcomeOK}) {
		t.Fatalf("passes %v", got)
	}
	if sm, writes := store.stored(); sm == nil || sm.Generation() != 1 || writes != 1 {
		t.Fatalf("after the first good pass the store holds %v after %d writes", sm, writes)
	}

	// A probe interval later (and up to a quarter interval more: each node's
	// second probe is spread over that), Run's ticker and the probe loop's
	// per-node schedule fire: one more pass, and one more stats read of
	// every node.
	before, n := prober.readCounts(), len(passes(3))
	clk.Advance(time.Minute + 15*time.Second)
	passes(n + 1)
	waitUntil(t, &prober.mu, &prober.changed, "a probe round on the tick", func() bool {
		for _, id := range []string{"a", "b", "c"} {
			addr := cacheNode(id).Addr
			if prober.reads[addr] <= before[addr] {
				return false
			}
		}
		return true
	})
	if err := loop.Ready(); err != nil {
		t.Fatalf("not ready: %v", err)
	}
}
