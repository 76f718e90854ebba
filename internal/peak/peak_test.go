package peak

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)

func TestCountPeak(t *testing.T) {
	type step struct {
		at      time.Duration // since t0
		observe int           // -1: no observation, only a peak read
		peak    int
		ok      bool
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"nothing seen", []step{{0, -1, 0, false}}},
		{"only zero", []step{{0, 0, 0, false}, {time.Minute, -1, 0, false}}},
		{"a count", []step{{0, 20, 20, true}, {time.Hour, -1, 20, true}}},
		{"zero keeps the last count for the window", []step{
			{0, 20, 20, true}, {time.Minute, 0, 20, true},
			{time.Minute + Window - time.Nanosecond, -1, 20, true},
			{time.Minute + Window, -1, 0, false},
		}},
		{"a drop takes effect after the window", []step{
			{0, 20, 20, true}, {time.Minute, 10, 20, true},
			{time.Minute + Window - time.Second, -1, 20, true},
			{time.Minute + Window, -1, 10, true},
		}},
		{"a rise takes effect at once", []step{{0, 10, 10, true}, {time.Minute, 30, 30, true}}},
		{"the largest of several, each until its own end", []step{
			{0, 30, 30, true}, {time.Minute, 10, 30, true}, {2 * time.Minute, 20, 30, true}, {3 * time.Minute, 5, 30, true},
			{time.Minute + Window, -1, 20, true}, // 30 ended at 1m, is forgotten at 11m
			{3*time.Minute + Window, -1, 5, true},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p Count
			for _, s := range tc.steps {
				now := t0.Add(s.at)
				if s.observe >= 0 {
					p.Observe(now, s.observe)
				}
				if n, ok := p.Peak(now); n != s.peak || ok != s.ok {
					t.Fatalf("at %v: peak %d, %v; want %d, %v", s.at, n, ok, s.peak, s.ok)
				}
			}
		})
	}
}

// newCountingClient returns a Client of service "web" with a fake clock
// that has read a document of limit 100, burst 20.
