package hitrate

import (
	"testing"
	"time"
)

// TestSettlingNeedsGetsOfItsOwn: a node whose Planned mark ended is
// counted again only on an interval in which it had gets of its own,
// close to the others' rate: an interval in which it served none tells
// nothing of its contents, and it stays left out.
func TestSettlingNeedsGetsOfItsOwn(t *testing.T) {
	c := func(hits, misses uint64, planned bool) Counters {
		return Counters{Hits: hits, Misses: misses, PID: 1, Uptime: time.Hour, Planned: planned}
	}
	at := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	m := Meter{LeavesOutPlanned: true}
	m.Observe(at(0), map[string]Counters{"a": c(0, 0, false), "b": c(0, 0, true)}, Slots{})
	m.Observe(at(1), map[string]Counters{"a": c(950, 50, false), "b": c(0, 1000, true)}, Slots{})
	// The mark ended; b served nothing in this interval.
	m.Observe(at(2), map[string]Counters{"a": c(1900, 100, false), "b": c(0, 1000, false)}, Slots{})
	if m.Settling() != 1 {
		t.Fatalf("b without gets of its own after its mark ended: %d settling, want 1 (left out)", m.Settling())
	}
	// Its own interval at 0.95, as a's: counted again.
	m.Observe(at(3), map[string]Counters{"a": c(2850, 150, false), "b": c(950, 1050, false)}, Slots{})
	if m.Settling() != 0 {
		t.Fatalf("b back at the others' rate: %d settling, want 0", m.Settling())
	}
}

// TestObservingTwiceAtOneInstant: a second observation at the same
// instant (a clock that did not move) leaves the meter working: later
// intervals still move the rate.
func TestObservingTwiceAtOneInstant(t *testing.T) {
	c := func(hits, misses uint64) map[string]Counters {
		return map[string]Counters{"a": {Hits: hits, Misses: misses, PID: 1, Uptime: time.Hour}}
	}
	var m Meter
	m.Observe(t0, c(0, 0), Slots{})
	m.Observe(t0.Add(time.Second), c(950, 50), Slots{})
	m.Observe(t0.Add(time.Second), c(1045, 55), Slots{})
	// A collapse at the usual traffic a second later.
	rate, ok := m.Observe(t0.Add(2*time.Second), c(1045, 1055), Slots{})
	if !ok || rate > 0.6 {
		t.Fatalf("rate %v (ok %v) after a collapse that followed two observations at one instant; want it to fall to about half", rate, ok)
	}
}
