package hitrate_test

import (
	"fmt"
	"time"

	"github.com/mcrib/mcrib/hitrate"
)

// ExampleMeter reads two nodes' counters three times: the first reading is
// a baseline, the second an interval at 0.9, and the third, as much
// traffic at 0.5, moves the smoothed rate halfway.
func ExampleMeter() {
	var m hitrate.Meter
	t0 := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
	read := func(s int, hitsA, missesA, hitsB, missesB uint64) {
		rate, ok := m.Observe(t0.Add(time.Duration(s)*5*time.Second), map[string]hitrate.Counters{
			"mc-1": {Hits: hitsA, Misses: missesA, PID: 1, Uptime: time.Hour},
			"mc-2": {Hits: hitsB, Misses: missesB, PID: 2, Uptime: time.Hour},
		}, hitrate.Slots{})
		fmt.Printf("reading %d: %.2f (a reading: %v)\n", s, rate, ok)
	}
	read(0, 1000, 100, 2000, 200)
	read(1, 1450, 150, 2450, 250) // +900 hits, +100 misses
	read(2, 1700, 400, 2700, 500) // +500 hits, +500 misses
	// Output:
	// reading 0: 0.00 (a reading: false)
	// reading 1: 0.90 (a reading: true)
	// reading 2: 0.70 (a reading: true)
}
