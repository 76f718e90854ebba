package hitrate

import (
	"math"
	"testing"
	"time"
)

// TestApplicationView: the hits and misses applications saw of a warming
// slot, from the increases of its new holder and its warm source.
func TestApplicationView(t *testing.T) {
	tests := []struct {
		name                 string
		holder, source       pairDelta
		wantHits, wantMisses uint64
	}{
		// 1000 gets, 500 missed the new holder and went to the warm
		// source; 450 hit there, each read twice (mcclient re-checks a
		// copy), 50 missed: the applications saw 950 hits.
		{"mcclient re-checks each copy", pairDelta{500, 500}, pairDelta{900, 50}, 950, 50},
		// mcrouter's WarmUpRoute reads the warm source once.
		{"mcrouter reads once", pairDelta{500, 500}, pairDelta{450, 50}, 950, 50},
		// A router that does not warm (twemproxy) forwards nothing: every
		// miss of the new holder is the application's.
		{"nothing forwarded", pairDelta{500, 500}, pairDelta{0, 0}, 500, 500},
		// 100 of 500 misses not forwarded (a client's until passed) by a
		// router that reads the warm source once: those are misses too.
		{"some not forwarded", pairDelta{500, 500}, pairDelta{380, 20}, 880, 120},
		// The two stats reads are up to a probe interval apart: the warm
		// source may count more misses than the holder in one interval.
		{"the source read later", pairDelta{900, 100}, pairDelta{10, 150}, 900, 100},
		{"no traffic", pairDelta{}, pairDelta{}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, m := applicationView(tt.holder, tt.source)
			if h != tt.wantHits || m != tt.wantMisses {
				t.Fatalf("applicationView(%+v, %+v) = %d hits, %d misses; want %d, %d", tt.holder, tt.source, h, m, tt.wantHits, tt.wantMisses)
			}
			if h+m != tt.holder.hits+tt.holder.misses {
				t.Fatalf("%d gets counted, the new holder had %d: the warm source's gets were counted again", h+m, tt.holder.hits+tt.holder.misses)
			}
		})
	}
}

// warmingPool is a reading of a pool of slot holder a (0.95) and a slot
// warming on new holder n from warm source w, after i intervals of 1000
// gets each: n misses half of its gets, w answers 9 in 10 of them (and
// mcclient reads each copy twice), so applications see 0.95 everywhere.
// planned marks n and w Planned.
func warmingPool(i uint64, planned bool) map[string]Counters {
	c := func(hits, misses uint64) Counters {
		return Counters{Hits: hits, Misses: misses, PID: 1, Uptime: time.Hour}
	}
	n, w := c(500*i, 500*i), c(900*i, 50*i)
	w.WarmSourceOf = "n"
	n.Planned, w.Planned = planned, planned
	return map[string]Counters{"a": c(950*i, 50*i), "n": n, "w": w}
}

// TestMeterCountsWarmReadsAsApplicationsDo: a get the warm source
// answered is a hit and the warm source's gets are not counted again, so
// the pool's hit rate stays at what applications see (0.95) where the raw
// counters say 0.797.
func TestMeterCountsWarmReadsAsApplicationsDo(t *testing.T) {
	var m Meter
	m.Observe(t0, warmingPool(0, true), Slots{})
	rate, ok := m.Observe(t0.Add(time.Second), warmingPool(1, true), Slots{})
	if !ok || math.Abs(rate-0.95) > 1e-9 {
		t.Fatalf("pool hit rate during a warm move %v (ok %v), want 0.95 as applications see it", rate, ok)
	}
	if m.Requests() != 2000 {
		t.Errorf("%d gets counted, want 2000: the warm source's gets counted again", m.Requests())
	}
}

// TestMeterLeavesOutPlanned: the boot limiter's input leaves out
// the nodes planned moves touch, keeping their counters as the next
// interval's baseline, so that what they counted meanwhile is never
// counted when they are counted again.
func TestMeterLeavesOutPlanned(t *testing.T) {
	c := func(hits, misses uint64) Counters {
		return Counters{Hits: hits, Misses: misses, PID: 1, Uptime: time.Hour}
	}
	m := Meter{LeavesOutPlanned: true}
	var all Meter
	reading := func(n int, b Counters, planned bool) map[string]Counters {
		b.Planned = planned
		return map[string]Counters{"a": c(uint64(950*n), uint64(50*n)), "b": b}
	}
	at := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	m.Observe(at(0), reading(0, c(0, 0), false), Slots{})
	all.Observe(at(0), reading(0, c(0, 0), false), Slots{})
	// b moved cold: it misses everything for two intervals.
	for n, b := range []Counters{c(0, 1000), c(0, 2000)} {
		r := reading(n+1, b, true)
		got, ok := m.Observe(at(n+1), r, Slots{})
		if !ok || math.Abs(got-0.95) > 1e-9 {
			t.Fatalf("interval %d: input %v (ok %v), want 0.95: a planned move's node is left out", n+1, got, ok)
		}
		if pool, _ := all.Observe(at(n+1), r, Slots{}); pool > 0.9 {
			t.Fatalf("interval %d: the pool's hit rate %v did not count b's misses", n+1, pool)
		}
	}
	// The mark ended, but b's own interval (900 hits, 100 misses: 0.90)
	// is still below a's (0.95): left out while it settles.
	if got, ok := m.Observe(at(3), reading(3, c(900, 2100), false), Slots{}); !ok || math.Abs(got-0.95) > 1e-9 || m.Settling() != 1 {
		t.Fatalf("b settling at 0.90 against 0.95: input %v (ok %v), %d settling; want 0.95 and 1", got, ok, m.Settling())
	}
	// b's interval at 0.94 (within 0.02 of a's): counted from the next.
	if got, _ := m.Observe(at(4), reading(4, c(1840, 2160), false), Slots{}); math.Abs(got-0.95) > 1e-9 || m.Settling() != 0 {
		t.Fatalf("b back within 0.02 of a: input %v, %d settling; want 0.95 and 0", got, m.Settling())
	}
	// Counted again: only this interval's increase (920 hits, 80 misses).
	got, ok := m.Observe(at(5), reading(5, c(2760, 2240), false), Slots{})
	if want := 0.95 + 0.5*(0.935-0.95); !ok || math.Abs(got-want) > 1e-9 {
		t.Fatalf("input after the move settled %v (ok %v), want %v: b's misses while left out were counted", got, ok, want)
	}
	// A node that never comes back to the others' rate counts again
	// 10 minutes after its mark ended.
	m3 := Meter{LeavesOutPlanned: true}
	m3.Observe(at(0), reading(0, c(0, 0), true), Slots{})
	for n := 1; n <= 601; n++ {
		m3.Observe(at(n), reading(n, c(uint64(500*n), uint64(500*n)), n == 1), Slots{})
	}
	if m3.Settling() != 0 {
		t.Fatalf("b at 0.5 ten minutes after its mark ended: still left out")
	}
	if got, _ := m3.Observe(at(602), reading(602, c(500*602, 500*602), false), Slots{}); got > 0.95-1e-9 {
		t.Fatalf("b at 0.5 counted again: input %v, want below 0.95", got)
	}
	// Only planned nodes had gets: no reading.
	m2 := Meter{LeavesOutPlanned: true}
	m2.Observe(at(0), map[string]Counters{"b": {Planned: true}}, Slots{})
	if _, ok := m2.Observe(at(1), map[string]Counters{"b": {Misses: 100, Planned: true}}, Slots{}); ok {
		t.Fatal("a reading of planned nodes alone is a reading")
	}
}

// TestSplitView: a split's warm source also serves slot s, so its gets
// are slot s's and the ones forwarded to it.
func TestSplitView(t *testing.T) {
	tests := []struct {
		name                 string
		holder, source       pairDelta
		wantHits, wantMisses uint64
	}{
		// Every get hits: the twin's 1000 gets all missed the new holder
		// and hit the source; slot s had 1000 gets of its own. 2000 gets,
		// 2000 hits (the 0.50 of finding 5 was 1000 of 3000... read as a
		// miss and a hit).
		{"every get hits", pairDelta{0, 1000}, pairDelta{2000, 0}, 2000, 0},
		// Half the twin's gets hit the new holder already; slot s misses
		// 10 of its 500.
		{"half warm", pairDelta{500, 500}, pairDelta{990, 10}, 1490, 10},
		// Fewer gets at the source than misses of the new holder: they
		// are taken as forwarded hits, the rest of the misses as misses.
		{"fewer source gets than holder misses", pairDelta{0, 100}, pairDelta{50, 0}, 50, 50},
		{"no traffic", pairDelta{}, pairDelta{}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, m := splitView(tt.holder, tt.source)
			if h != tt.wantHits || m != tt.wantMisses {
				t.Fatalf("splitView(%+v, %+v) = %d hits, %d misses; want %d, %d", tt.holder, tt.source, h, m, tt.wantHits, tt.wantMisses)
			}
		})
	}
}

// TestMeterCountsASplitAsApplicationsDo (finding 5 of issue 26): during a
// split whose every get hits, through the warm source or not, the pool's
// hit rate is 1.00, not the 0.50 of counting a get forwarded to the source
// as a miss of the new holder and a hit of the source.
func TestMeterCountsASplitAsApplicationsDo(t *testing.T) {
	pool := func(i uint64) map[string]Counters {
		c := func(hits, misses uint64) Counters {
			return Counters{Hits: hits, Misses: misses, PID: 1, Uptime: time.Hour}
		}
		// s holds slot s (1000 gets of its own a second, all hits) and
		// warms t, whose twin's 1000 gets all miss t and hit s.
		s, tw := c(2000*i, 0), c(0, 1000*i)
		s.WarmSourceOf, s.HoldsSlot = "t", true
		return map[string]Counters{"s": s, "t": tw}
	}
	var m Meter
	m.Observe(t0, pool(0), Slots{})
	rate, ok := m.Observe(t0.Add(time.Second), pool(1), Slots{})
	if !ok || math.Abs(rate-1) > 1e-9 {
		t.Fatalf("pool hit rate during a split %v (ok %v), want 1.00 as applications see it", rate, ok)
	}
	if m.Requests() != 2000 {
		t.Errorf("%d gets counted, want 2000", m.Requests())
	}
}
