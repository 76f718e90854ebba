package hitrate

import (
	"math"
	"testing"
	"time"
)

// TestMeterHugeCounters feeds counters near 2^64: after a restart
// (a bogus stats reply), and over several nodes whose sum overflows a
// uint64. The rate stays in [0, 1].
func TestMeterHugeCounters(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		readings []map[string]Counters
		want     float64 // the last rate; NaN: only check the range
	}{
		{
			name: "a restart reporting huge counters is only a baseline",
			readings: []map[string]Counters{
				{"a": {Hits: 900, Misses: 100, PID: 1, Uptime: time.Hour}},
				{"a": {Hits: 990, Misses: 110, PID: 1, Uptime: time.Hour + 5*time.Second}},
				{"a": {Hits: math.MaxUint64 - 5, Misses: math.MaxUint64 / 2, PID: 2, Uptime: 3 * time.Second}},
			},
			want: 0.9,
		},
		{
			name: "a restart reporting huge misses alone is only a baseline",
			readings: []map[string]Counters{
				{"a": {Hits: 900, Misses: 100, PID: 1, Uptime: time.Hour}},
				{"a": {Hits: 990, Misses: 110, PID: 1, Uptime: time.Hour + 5*time.Second}},
				{"a": {Hits: 10, Misses: math.MaxUint64 / 2, PID: 2, Uptime: 3 * time.Second}},
			},
			want: 0.9,
		},
		{
			// Unreadable for ten minutes, restarted meanwhile: 3 million
			// gets in its 600 s of uptime (5,000 a second) are believable.
			name: "gets within the uptime's bound after a long gap count",
			readings: []map[string]Counters{
				{"a": {Hits: 900, Misses: 100, PID: 1, Uptime: time.Hour}},
				{"a": {Hits: 2_400_000, Misses: 600_000, PID: 2, Uptime: 10 * time.Minute}},
			},
			want: 0.8,
		},
		{
			name: "two nodes whose sum overflows a uint64",
			readings: []map[string]Counters{
				{"a": {Hits: 0, Misses: 0, PID: 1, Uptime: 1000 * time.Hour}, "b": {Hits: 0, Misses: 0, PID: 2, Uptime: 1000 * time.Hour}},
				{"a": {Hits: math.MaxUint64 - 1, Misses: 1, PID: 1, Uptime: 1000 * time.Hour}, "b": {Hits: math.MaxUint64 - 1, Misses: 1, PID: 2, Uptime: 1000 * time.Hour}},
			},
			want: math.NaN(),
		},
		{
			name: "a believable restart still counts",
			readings: []map[string]Counters{
				{"a": {Hits: 900, Misses: 100, PID: 1, Uptime: time.Hour}},
				{"a": {Hits: 80, Misses: 20, PID: 2, Uptime: 5 * time.Second}},
			},
			want: 0.8,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m Meter
			var rate float64
			for i, r := range tt.readings {
				rate, _ = m.Observe(t0.Add(time.Duration(i)*5*time.Second), r, Slots{})
				if rate < 0 || rate > 1 || math.IsNaN(rate) {
					t.Fatalf("reading %d: rate %v outside [0, 1]", i, rate)
				}
			}
			if !math.IsNaN(tt.want) && math.Abs(rate-tt.want) > 1e-9 {
				t.Errorf("rate %v, want %v", rate, tt.want)
			}
		})
	}
}
