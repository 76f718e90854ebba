package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/internal/leakcheck"
)

// TestControlLoopTicksOnTheClock drives the control loop with a fake
// clock: the stats are read once per interval of that clock, at its time.
func TestControlLoopTicksOnTheClock(t *testing.T) {
	leakcheck.Check(t)
	t0 := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
	clk := clock.NewFake(t0)
	reads := make(chan time.Time, 10)
	var hits uint64
	svc, err := NewService(ServiceOptions{
		Client: &api.Client{}, Key: "test/clock/bootlimit", Config: fastConfig, Clock: clk,
		IsLeader: func() bool { return false }, // the loop then writes nothing to Consul
		Stats: func(context.Context) (map[string]Counters, Slots) {
			hits += 900
			reads <- clk.Now()
			return map[string]Counters{"mc-1": {Hits: hits, Misses: hits / 9, PID: 1}}, Slots{}
		},
	})
	if err != nil {
		t.Fatalf("NewService: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); svc.controlLoop(ctx, false) }()
	defer func() { cancel(); <-done }()

	armed, cancelArmed := context.WithTimeout(ctx, 5*time.Second)
	defer cancelArmed()
	if !clk.BlockUntil(armed, 1) {
		t.Fatal("the control loop armed no ticker on the clock")
	}
	for i := 1; i <= 4; i++ {
		clk.Advance(fastConfig.Interval - time.Millisecond)
		select {
		case at := <-reads:
			t.Fatalf("stats read at %v, before the interval passed", at.Sub(t0))
		default:
		}
		clk.Advance(time.Millisecond)
		select {
		case at := <-reads:
			if want := t0.Add(time.Duration(i) * fastConfig.Interval); !at.Equal(want) {
				t.Fatalf("read %d at %v, want %v", i, at.Sub(t0), want.Sub(t0))
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no stats read after interval %d", i)
		}
	}
	// The fourth read shows that the loop finished the third interval.
	if r, ok := svc.HitRate(); !ok || r < 0.85 || r > 0.95 {
		t.Fatalf("hit rate %v, %v after three intervals at 0.9, want about 0.9", r, ok)
	}
}
