package controlloop

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcrib/mcrib/hitrate"
	"github.com/mcrib/mcrib/internal/leakcheck"
	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/warmcopy"
)

// fakeCopier records the copies the loop runs: each runs until its
// context ends.
type fakeCopier struct {
	mu      sync.Mutex
	changed signal
	running map[warmcopy.Move]bool
	started []warmcopy.Move
}

func (f *fakeCopier) Copy(ctx context.Context, m warmcopy.Move, _ *warmcopy.Progress) error {
	f.mu.Lock()
	if f.running == nil {
		f.running = map[warmcopy.Move]bool{}
	}
	f.running[m] = true
	f.started = append(f.started, m)
	f.changed.notifyLocked()
	f.mu.Unlock()
	<-ctx.Done()
	f.mu.Lock()
	delete(f.running, m)
	f.changed.notifyLocked()
	f.mu.Unlock()
	return ctx.Err()
}

func (f *fakeCopier) Totals() warmcopy.Stats { return warmcopy.Stats{} }

func (f *fakeCopier) runningMoves() []warmcopy.Move {
	var out []warmcopy.Move
	for m := range f.running {
		out = append(out, m)
	}
	return out
}

// copyWorld is threeZones with a fake copier and the copies' goroutine
// running until the test ends.
func copyWorld(t *testing.T) (*world, *fakeCopier) {
	t.Helper()
	w := threeZones(t)
	w.loop.opts.WarmFor = 2 * time.Minute
	fc := &fakeCopier{}
	w.loop.copies.copier = fc
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.loop.copies.run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		w.loop.copies.mu.Lock()
		up := w.loop.copies.base != nil
		w.loop.copies.mu.Unlock()
		if up {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the copies' goroutine did not start")
		}
		time.Sleep(time.Millisecond)
	}
	return w, fc
}

// TestLeaderCopiesWhileItWarms: one copy per warming move, from its warm
// source into its new holder, started as the move serves, the lock
// confirmed while it runs, and stopped when the warming ends early.
func TestLeaderCopiesWhileItWarms(t *testing.T) {
	leakcheck.Check(t)
	w, fc := copyWorld(t)
	if _, err := w.loop.Replace(context.Background(), "b2", "retire it", "ops"); err != nil {
		t.Fatal(err)
	}
	w.pass(mcribapi.OutcomeOK)
	if got := fc.startedMoves(); got != nil {
		t.Fatalf("a copy started during the announce: %v", got)
	}
	w.serve()
	want := warmcopy.Move{Source: cacheNode("b2").Addr, Target: cacheNode("b3").Addr, Slot: 4, NumSlots: 6}
	waitUntil(t, &fc.mu, &fc.changed, "the copy of slot 4 runs", func() bool {
		return slices.Equal(fc.runningMoves(), []warmcopy.Move{want})
	})
	// The lock is confirmed while it runs: at once, and again as the
	// clock moves.
	at := w.clk.Now()
	for deadline := time.Now().Add(30 * time.Second); w.loop.copies.lockConfirmedAt().IsZero(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the lock was not confirmed while the copy runs")
		}
	}
	if got := w.loop.copies.lockConfirmedAt(); !got.Equal(at) {
		t.Fatalf("lock confirmed at %v, want %v", got, at)
	}
	// Further passes start no second copy of the move.
	w.after(time.Second)
	if n := len(fc.startedMoves()); n != 1 {
		t.Fatalf("%d copies started, want 1", n)
	}
	if n := w.node("b3"); n.CopiedKeys != 0 || n.CopiedBytes != 0 {
		t.Fatalf("b3 copied %d keys, %d bytes from a copier that copied none", n.CopiedKeys, n.CopiedBytes)
	}
	// b2 stops answering: the warming ends, and so does its copy.
	w.away("b2")
	w.pass(mcribapi.OutcomeOK)
	if m, _ := w.store.stored(); !m.Warming(4).Ended() {
		t.Fatalf("the warming did not end")
	}
	waitUntil(t, &fc.mu, &fc.changed, "the copy stops", func() bool { return len(fc.running) == 0 })
}

func (f *fakeCopier) startedMoves() []warmcopy.Move {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.started)
}

// TestCopyStopsWithLeadership: a leader that loses the lock stops
// confirming it (the copy's adds wait) and stops its copies at its next
// pass.
func TestCopyStopsWithLeadership(t *testing.T) {
	leakcheck.Check(t)
	w, fc := copyWorld(t)
	if _, err := w.loop.Replace(context.Background(), "b2", "retire it", "ops"); err != nil {
		t.Fatal(err)
	}
	w.serve()
	waitUntil(t, &fc.mu, &fc.changed, "the copy runs", func() bool { return len(fc.running) == 1 })
	w.lead.loseLock()
	// The confirming goroutine finds the lock gone: what it confirmed
	// last grows old.
	deadline := time.Now().Add(30 * time.Second)
	for leading, _ := w.lead.counts(); leading; leading, _ = w.lead.counts() {
		if time.Now().After(deadline) {
			t.Fatal("the lock was not confirmed again")
		}
		w.clk.Advance(confirmEvery)
		time.Sleep(time.Millisecond)
	}
	if age := w.clk.Now().Sub(w.loop.copies.lockConfirmedAt()); age < 0 {
		t.Fatalf("lock confirmed %v ago", age)
	}
	w.clk.Advance(warmcopy.LockFresh)
	if age := w.clk.Now().Sub(w.loop.copies.lockConfirmedAt()); age < warmcopy.LockFresh {
		t.Fatalf("a lost lock still counts as confirmed %v ago", age)
	}
	w.pass(mcribapi.OutcomeFollower)
	waitUntil(t, &fc.mu, &fc.changed, "the copy stops", func() bool { return len(fc.running) == 0 })
}

// TestCopyGetsAreNobodys: the copies' gets at a warm source are left out
// of its counters, in HitCounters too, until its memcached restarts.
func TestCopyGetsAreNobodys(t *testing.T) {
	w := threeZones(t)
	w.loop.copies.copier = &fakeCopier{}
	w.loop.copies.done = map[string]copyGets{"a1": {pid: 1, gets: 100, hits: 80}}
	got := w.loop.copies.discount("a1", hitrate.Counters{Hits: 1000, Misses: 500, PID: 1})
	if got.Hits != 920 || got.Misses != 480 {
		t.Fatalf("discounted %+v, want 920 hits and 480 misses", got)
	}
	w.prober.setCounters(cacheNode("a1").Addr, 1000, 500)
	w.probe()
	nodes, _ := w.loop.HitCounters(context.Background())
	if c := nodes["a1"]; c.Hits != 920 || c.Misses != 480 {
		t.Fatalf("HitCounters gave a1 %+v, want the copy's gets left out", c)
	}
	// Another pid: the node restarted, its counters and the copy's start
	// from zero.
	if got := w.loop.copies.discount("a1", hitrate.Counters{Hits: 10, Misses: 5, PID: 2}); got.Hits != 10 || got.Misses != 5 {
		t.Fatalf("after a restart: %+v", got)
	}
	if _, ok := w.loop.copies.done["a1"]; ok {
		t.Fatalf("the copy's gets before the restart are still kept")
	}
}
