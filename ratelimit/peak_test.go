package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/internal/leakcheck"
)

func newCountingClient(t *testing.T) (*Client, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(t0)
	c, err := NewClient(ClientOptions{Consul: &api.Client{}, Key: "test/pool/bootlimit", Service: "web", Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	c.onReading(docReading{Snap: Snapshot{Found: true, ModifyIndex: 1, Doc: Document{Mode: ModeAuto, Limit: 100, Burst: 20}}}, 1)
	return c, clk
}

// TestClientCountsTheLargestRecentCount: a share is never taken from an
// instance count that is unknown, zero or late: 0 passing instances (200
// serving instances once admitted 2,000 boots/s against a limit of 10,
// each counting itself alone) and a count that dropped keep the largest
// count of the last 10 minutes; after that, 0 falls back and a smaller
// count is taken.
func TestClientCountsTheLargestRecentCount(t *testing.T) {
	c, clk := newCountingClient(t)
	if c.Limit() != 1 {
		t.Fatalf("before any count: share %v, want the fallback 1", c.Limit())
	}
	c.onCount(20, 1)
	if c.Limit() != 5 || c.Burst() != 1 || c.Instances() != 20 {
		t.Fatalf("20 instances: share %v burst %d of %d, want 5, 1 of 20", c.Limit(), c.Burst(), c.Instances())
	}
	clk.Advance(time.Minute)
	c.onCount(0, 2)
	if c.Limit() != 5 || c.Instances() != 20 {
		t.Errorf("0 instances a minute after 20: share %v of %d, want 5 of 20", c.Limit(), c.Instances())
	}
	c.onCount(10, 3)
	if c.Limit() != 5 {
		t.Errorf("10 instances a minute after 20: share %v, want 5 (of 20) for 10 minutes", c.Limit())
	}
	clk.Advance(PeakWindow)
	c.share()
	if c.Limit() != 10 || c.Instances() != 10 {
		t.Errorf("10 instances for 10 minutes: share %v of %d, want 10 of 10", c.Limit(), c.Instances())
	}
	c.onCount(0, 4)
	clk.Advance(PeakWindow)
	c.share()
	if c.Limit() != 1 {
		t.Errorf("0 instances for 10 minutes: share %v, want the fallback 1", c.Limit())
	}
}

// TestClientShareFollowsTheWindow: the share moves when a remembered count
// leaves the window, without a new count arriving.
func TestClientShareFollowsTheWindow(t *testing.T) {
	leakcheck.Check(t)
	c, clk := newCountingClient(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.expireCounts(ctx) }()
	defer func() { cancel(); <-done }()
	c.onCount(20, 1)
	clk.Advance(time.Minute)
	c.onCount(10, 2)
	armed, cancelArmed := context.WithTimeout(ctx, 5*time.Second)
	defer cancelArmed()
	if !clk.BlockUntil(armed, 1) {
		t.Fatal("no timer armed for the end of the window")
	}
	clk.Advance(PeakWindow - time.Second)
	if c.Limit() != 5 {
		t.Fatalf("inside the window: share %v, want 5", c.Limit())
	}
	clk.Advance(time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for c.Limit() != 10 {
		if time.Now().After(deadline) {
			t.Fatalf("the share stayed %v once 20 left the window, want 10", c.Limit())
		}
		time.Sleep(time.Millisecond)
	}
}
