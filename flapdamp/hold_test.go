package flapdamp

import (
	"testing"
	"time"
)

// t0 is the base of every constructed time in these tests.
var t0 = time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)

// at returns t0 + d.
func at(d time.Duration) time.Time { return t0.Add(d) }

func TestHold(t *testing.T) {
	var never time.Time
	tests := []struct {
		name        string
		hold        time.Duration
		absent      time.Time
		unreachable time.Time
		now         time.Time
		wantDue     bool
		wantLeft    time.Duration
		wantCount   bool
	}{
		{"present and reachable", time.Minute, never, never, at(time.Hour), false, 0, false},
		{"present, unreachable for an hour", time.Minute, never, t0, at(time.Hour), false, 0, false},
		{"absent for a year, still answers probes", time.Minute, t0, never, at(365 * 24 * time.Hour), false, 0, false},
		{"both, just started", time.Minute, t0, t0, t0, false, time.Minute, true},
		{"both since t0, 1ns before the boundary", time.Minute, t0, t0, at(time.Minute - 1), false, 1, true},
		{"both since t0, exactly at the boundary", time.Minute, t0, t0, at(time.Minute), true, 0, true},
		{"both since t0, past the boundary", time.Minute, t0, t0, at(time.Hour), true, 0, true},
		{"unreachable later: counts from unreachable", time.Minute, t0, at(30 * time.Second), at(time.Minute), false, 30 * time.Second, true},
		{"unreachable later: due 60s after it", time.Minute, t0, at(30 * time.Second), at(90 * time.Second), true, 0, true},
		{"absent later: counts from absent", time.Minute, at(45 * time.Second), t0, at(time.Minute), false, 45 * time.Second, true},
		{"absent later: 1ns short", time.Minute, at(45 * time.Second), t0, at(105*time.Second - 1), false, 1, true},
		{"absent later: due 60s after it", time.Minute, at(45 * time.Second), t0, at(105 * time.Second), true, 0, true},
		{"zero hold: due at once", 0, t0, t0, t0, true, 0, true},
		{"negative hold counts as zero", -time.Minute, t0, t0, t0, true, 0, true},
		{"clock went backwards: full hold left", time.Minute, t0, t0, at(-time.Hour), false, time.Minute, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := Hold{Duration: tt.hold}
			if got := h.Due(tt.absent, tt.unreachable, tt.now); got != tt.wantDue {
				t.Errorf("Due = %v, want %v", got, tt.wantDue)
			}
			left, counting := h.Remaining(tt.absent, tt.unreachable, tt.now)
			if left != tt.wantLeft || counting != tt.wantCount {
				t.Errorf("Remaining = (%v, %v), want (%v, %v)", left, counting, tt.wantLeft, tt.wantCount)
			}
		})
	}
}
