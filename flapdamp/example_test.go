package flapdamp_test

import (
	"fmt"
	"time"

	"github.com/mcrib/mcrib/flapdamp"
)

// A node's memcached goes down three times in a minute. The third flap takes
// its penalty over 2000 and suppresses it; once the penalty has decayed
// below 750 it is usable again.
func ExamplePenalty() {
	cfg := flapdamp.DampingConfig{} // defaults: +1000 a flap, half-life 2 min, suppress 2000, reuse 750
	start := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)

	var p flapdamp.Penalty
	for _, d := range []time.Duration{0, 30 * time.Second, time.Minute} {
		p.Flap(start.Add(d), cfg)
		// A probe failing again 1 s later belongs to the same failure.
		p.Flap(start.Add(d+time.Second), cfg)
	}
	for _, d := range []time.Duration{time.Minute, 3 * time.Minute, 5 * time.Minute} {
		now := start.Add(d)
		fmt.Printf("t+%v: penalty %.0f, suppressed %v\n", d, p.Value(now, cfg), p.Suppressed(now, cfg))
	}
	fmt.Println("flaps:", p.Flaps())
	// Output:
	// t+1m0s: penalty 2548, suppressed true
	// t+3m0s: penalty 1274, suppressed true
	// t+5m0s: penalty 637, suppressed false
	// flaps: 3
}
