package ratelimit

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"
)

// TestServiceLimitHoldsThroughAPlannedMove: with the controller in auto
// mode at 500 boots/s, a planned move that makes its slot miss everything
// moves the pool's hit rate (what applications see) but not the limit;
// the same fall of a slot no planned move touched cuts it.
func TestServiceLimitHoldsThroughAPlannedMove(t *testing.T) {
	cfg := ControllerConfig{Floor: 10, Ceiling: 1000, Low: 0.8, Target: 0.9, Interval: time.Second}
	c := func(hits, misses uint64) Counters {
		return Counters{Hits: hits, Misses: misses, PID: 1, Uptime: time.Hour}
	}
	for _, planned := range []bool{true, false} {
		s := newStepped(t, cfg)
		s.leading.Store(true)
		start, _ := json.Marshal(Document{Mode: ModeAuto, Limit: 500, Burst: 50, Floor: 10, Ceiling: 1000, UpdatedAt: t0.Add(-time.Hour), AutoLimit: 500})
		s.store.put(start)
		if err := s.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
		// Two slots at 0.85 (between low and target: the limit holds).
		var h1, m1, h2, m2 uint64
		for range 4 {
			h1, m1, h2, m2 = h1+850, m1+150, h2+850, m2+150
			s.tick(map[string]Counters{"a": c(h1, m1), "b": c(h2, m2)})
		}
		// Slot b goes cold.
		low := math.Inf(1)
		for range 6 {
			h1, m1, m2 = h1+850, m1+150, m2+1000
			b := c(h2, m2)
			b.Planned = planned
			s.tick(map[string]Counters{"a": c(h1, m1), "b": b})
			low = min(low, s.store.stored(t).Limit)
		}
		rate, _ := s.HitRate()
		if rate > 0.6 {
			t.Fatalf("planned %v: the pool's hit rate %v does not show slot b's misses", planned, rate)
		}
		switch {
		case planned && low != 500:
			t.Errorf("a planned move cut the boot limit to %v (hit rate %v)", low, rate)
		case !planned && low >= 500:
			t.Errorf("slot b's fall, no planned move, left the limit at %v", low)
		}
	}
}
