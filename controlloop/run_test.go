package controlloop

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/internal/leakcheck"
	"github.com/mcrib/mcrib/mcribapi"
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

	waitCtx, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	passes := func(n int) []mcribapi.Outcome {
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
	if got := passes(1); !slices.Equal(got, []mcribapi.Outcome{mcribapi.OutcomeError}) {
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
	if got := passes(3); !slices.Equal(got[:3], []mcribapi.Outcome{mcribapi.OutcomeError, mcribapi.OutcomeError, mcribapi.OutcomeOK}) {
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

// TestRunStepsAtTheDrainInterval runs the loop on a fake clock with a probe
// interval of 2s and a drain whose steps are 3s apart: the step timer wakes
// Run for the second step at 3s, not at the 4s tick.
func TestRunStepsAtTheDrainInterval(t *testing.T) {
	leakcheck.Check(t)
	clk := clock.NewFake(assignNow)
	store := &fakeStore{}
	store.putLocked(slotMapOf(t, 3, []string{"a1", "b1", "c1", "a2", "b2", "c2"}, []string{"a3", "c3"}))
	lead := &fakeLeader{store: store}
	lead.win("s1")
	disc := &fakeDiscovery{answers: make(chan cachenodes.Membership), taken: make(chan struct{})}
	metrics := &fakeMetrics{}
	loop, err := New(Options{
		Pool: assignPool, KVPrefix: "mcrib", NumSlots: 6,
		Hold: time.Minute, ProbeInterval: 2 * time.Second, MaxAbsentFraction: 0.5, MaxReplacementsPerMinute: 10,
		Store: store, Discovery: disc, Leadership: lead, Prober: &fakeProber{}, Clock: clk, Metrics: metrics,
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
	start := clk.Now()
	var m cachenodes.Membership
	for _, id := range []string{"a1", "b1", "c1", "a2", "b2", "c2", "a3", "c3"} {
		m.Instances = append(m.Instances, cachenodes.Instance{Node: cacheNode(id), Present: true})
	}
	disc.answers <- m
	<-disc.taken
	held := func() int {
		sm, _ := store.stored()
		return zoneSlots(sm)["az-b"]
	}
	passes := func() int {
		metrics.mu.Lock()
		defer metrics.mu.Unlock()
		return len(metrics.passes)
	}

	// The first step comes at once (at 0s): one slot of two, announced.
	announced := func(sm *cachenodes.SlotMap) int {
		n := 0
		for i := range sm.NumSlots() {
			if sm.Incoming(i) != nil && sm.Slot(i).AZ == "az-b" {
				n++
			}
		}
		return n
	}
	if _, err := loop.Drain(ctx, "az-b", mcribapi.Drain{Reason: "r", Percent: 100, StepPercent: 50, StepInterval: 3 * time.Second}, "ops"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, &store.mu, &store.changed, "the first step", func() bool { return announced(store.slotMap) == 1 })
	// Run is idle on its ticker and the probe loop's timer: no step is due
	// before the next tick.
	waitCtx, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	for clk.Waiters() != 2 {
		if waitCtx.Err() != nil {
			t.Fatalf("%d clock waiters after the first step, want 2 (Run's ticker, the probe loop's timer)", clk.Waiters())
		}
		time.Sleep(time.Millisecond)
	}

	// The tick at 2s: a pass, no step yet; Run arms the step timer for 3s.
	n := passes()
	clk.Advance(2 * time.Second)
	waitUntil(t, &metrics.mu, &metrics.changed, "the pass of the 2s tick", func() bool { return len(metrics.passes) > n })
	if !clk.BlockUntil(waitCtx, 3) {
		t.Fatal("Run armed no timer for the step due at 3s")
	}
	if sm, _ := store.stored(); announced(sm) != 1 || held() != 2 {
		t.Fatalf("zone b holds %d slots, %d announced away, at 2s, want 2 and 1 (the second step is due at 3s)", held(), announced(sm))
	}

	// At 3s the timer fires: the second step, a tick before 4s.
	clk.Advance(time.Second)
	waitUntil(t, &store.mu, &store.changed, "the second step at 3s", func() bool { return announced(store.slotMap) == 2 })
	d := store.storedDrainDoc(t)
	if e := d.Zones["az-b"]; e == nil || e.LastStepAt == nil || !e.LastStepAt.Equal(start.Add(3*time.Second)) {
		t.Fatalf("the second step's time %+v, want %v", e, start.Add(3*time.Second))
	}
	// The first serves 12s after its announce.
	clk.Advance(9 * time.Second)
	waitUntil(t, &store.mu, &store.changed, "the first step served at 12s", func() bool { return zoneSlots(store.slotMap)["az-b"] == 1 })
}

// TestRunDoesNotSpinOnABlockedDrain: a drain step blocked for want of a
// spare outside the drained zone waits at least a probe interval before it
// is tried again, and a follower never arms the step timer: over 10s of a
// 1s probe interval Run makes about ten passes (it used to re-arm the step
// timer at 0 after every blocked step: 50 passes a second, each a full
// read of the pool, on every replica).
func TestRunDoesNotSpinOnABlockedDrain(t *testing.T) {
	// A drain with no spare outside the drained zone, and a return (an
	// undrain after the zone's nodes died: none of them is a spare).
	blocked := map[string]struct {
		slots, spares, present []string
		entry                  *mcribapi.DrainEntry
	}{
		"drain": {[]string{"a1", "b1", "c1", "a2", "b2", "c2"}, []string{"b3"}, []string{"a1", "b1", "c1", "a2", "b2", "c2", "b3"},
			&mcribapi.DrainEntry{Percent: 100, StepPercent: 50, StepInterval: "3s", Reason: "r", BaselineSlots: 2}},
		"return": {[]string{"a1", "c1", "a2", "c2", "a3", "c3"}, []string{"a4"}, []string{"a1", "c1", "a2", "c2", "a3", "c3", "a4"},
			&mcribapi.DrainEntry{Percent: 100, StepPercent: 50, StepInterval: "3s", Reason: "r", BaselineSlots: 2, Returning: true, MovedSlots: []int{4, 5}}},
	}
	for _, kind := range []string{"drain", "return"} {
		for _, leading := range []bool{true, false} {
			t.Run(kind+"/"+map[bool]string{true: "leader", false: "follower"}[leading], func(t *testing.T) {
				spinBlocked(t, leading, blocked[kind].slots, blocked[kind].spares, blocked[kind].present, blocked[kind].entry)
			})
		}
	}
}

// spinBlocked runs a loop whose pool has slots and spares, present nodes
// and zone b's drain entry, whose step is blocked, and holds it to about
// one pass a probe interval.
func spinBlocked(t *testing.T, leading bool, slots, spares, present []string, entry *mcribapi.DrainEntry) {
	leakcheck.Check(t)
	clk := clock.NewFake(assignNow)
	store := &fakeStore{}
	store.putLocked(slotMapOf(t, 3, slots, spares))
	store.putDrainLocked(&mcribapi.DrainDoc{Zones: map[string]*mcribapi.DrainEntry{"az-b": entry}})
	lead := &fakeLeader{store: store}
	if leading {
		lead.win("s1")
	}
	disc := &fakeDiscovery{answers: make(chan cachenodes.Membership), taken: make(chan struct{})}
	metrics := &fakeMetrics{}
	loop, err := New(Options{
		Pool: assignPool, KVPrefix: "mcrib", NumSlots: 6,
		Hold: time.Minute, ProbeInterval: time.Second, MaxAbsentFraction: 0.5, MaxReplacementsPerMinute: 10,
		Store: store, Discovery: disc, Leadership: lead, Prober: &fakeProber{}, Clock: clk, Metrics: metrics,
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
	var m cachenodes.Membership
	for _, id := range present {
		m.Instances = append(m.Instances, cachenodes.Instance{Node: cacheNode(id), Present: true})
	}
	disc.answers <- m
	<-disc.taken
	passes := func() int {
		metrics.mu.Lock()
		defer metrics.mu.Unlock()
		return len(metrics.passes)
	}
	// settle waits until Run and the probe loop wait on the clock
	// and no pass has come for a few polls.
	settle := func() {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		last, quiet := -1, 0
		for quiet < 3 {
			if time.Now().After(deadline) {
				t.Fatal("Run never settled")
			}
			time.Sleep(100 * time.Microsecond)
			if n := passes(); n == last && clk.Waiters() >= 2 {
				quiet++
			} else {
				last, quiet = n, 0
			}
		}
	}
	settle()
	start := passes()
	for range 200 {
		clk.Advance(50 * time.Millisecond)
		settle()
	}
	got := passes() - start
	if leading {
		if e := loop.Drains().Zones["az-b"]; e == nil || e.Blocked == "" {
			t.Fatalf("the drain is not blocked: %+v", e)
		}
	}
	t.Logf("%d passes in 10s", got)
	if got > 15 {
		t.Fatalf("Run made %d passes in 10s with a blocked step, want about 10 (one a probe interval)", got)
	}
}
