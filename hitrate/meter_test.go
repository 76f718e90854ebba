package hitrate

import (
	"math"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)

// reading is one observation fed to a Meter: at second n, the nodes'
// cumulative counters and what is known of the slots; the meter must
// then report rate (within 1e-9) and ok, and HitRate the same rate, known
// when ok or kept (an interval without gets: no reading, the smoothed
// value kept).
type reading struct {
	n     int
	nodes map[string]Counters
	slots Slots
	rate  float64
	ok    bool
	kept  bool
}

func TestMeter(t *testing.T) {
	c := func(hits, misses uint64) Counters {
		return Counters{Hits: hits, Misses: misses, PID: 7, Uptime: time.Hour}
	}
	tests := []struct {
		name     string
		readings []reading
	}{
		{
			name: "the first reading is only a baseline",
			readings: []reading{
				{n: 1, nodes: map[string]Counters{"a": c(900, 100)}, ok: false},
			},
		},
		{
			name: "deltas summed over the nodes",
			readings: []reading{
				{n: 1, nodes: map[string]Counters{"a": c(900, 100), "b": c(5, 5)}},
				// a: +90 hits +10 misses; b: +0 hits +100 misses -> 90/200.
				{n: 2, nodes: map[string]Counters{"a": c(990, 110), "b": c(5, 105)}, rate: 0.45, ok: true},
			},
		},
		{
			name: "no traffic is no reading, and keeps the last value",
			readings: []reading{
				{n: 1, nodes: map[string]Counters{"a": c(0, 0)}},
				{n: 2, nodes: map[string]Counters{"a": c(90, 10)}, rate: 0.9, ok: true},
				{n: 3, nodes: map[string]Counters{"a": c(90, 10)}, rate: 0.9, kept: true},
				{n: 4, nodes: map[string]Counters{}, slots: Slots{Unreadable: 1}, rate: 0.9, kept: true},
				{n: 5, nodes: map[string]Counters{"a": c(180, 20)}, rate: 0.9, ok: true},
			},
		},
		{
			name: "no traffic before any value is not a value",
			readings: []reading{
				{n: 1, nodes: map[string]Counters{"a": c(0, 0)}},
				{n: 2, nodes: map[string]Counters{"a": c(0, 0)}, ok: false},
			},
		},
		{
			name: "a restart (new pid) counts the new counters from zero",
			readings: []reading{
				{n: 1, nodes: map[string]Counters{"a": {Hits: 5000, Misses: 5000, PID: 1, Uptime: time.Hour}}},
				{n: 2, nodes: map[string]Counters{"a": {Hits: 5000, Misses: 5100, PID: 2, Uptime: 2 * time.Hour}}, rate: 5000.0 / 10100, ok: true},
			},
		},
		{
			name: "a restart (uptime went back) counts the new counters from zero",
			readings: []reading{
				{n: 1, nodes: map[string]Counters{"a": {Hits: 100, Misses: 0, Uptime: time.Hour}}},
				{n: 2, nodes: map[string]Counters{"a": {Hits: 150, Misses: 50, Uptime: time.Second}}, rate: 0.75, ok: true},
			},
		},
		{
			name: "counters that went down (stats reset) count from zero",
			readings: []reading{
				{n: 1, nodes: map[string]Counters{"a": c(1000, 1000)}},
				{n: 2, nodes: map[string]Counters{"a": c(30, 10)}, rate: 0.75, ok: true},
			},
		},
		{
			name: "an unreadable node is left out, and its delta spans the gap when it comes back",
			readings: []reading{
				{n: 1, nodes: map[string]Counters{"a": c(0, 0), "b": c(0, 0)}},
				{n: 2, nodes: map[string]Counters{"a": c(100, 0)}, slots: Slots{Unreadable: 1}, rate: 1, ok: true},
				// b: +0 hits +200 misses over two seconds, a: +100 hits.
				// 100/300 at 300 req/s vs usual 100: weight 0.5.
				{n: 3, nodes: map[string]Counters{"a": c(200, 0), "b": c(0, 200)}, rate: 1 + 0.5*(1.0/3-1), ok: true},
			},
		},
		{
			name: "a pid first unknown then known is no restart",
			readings: []reading{
				{n: 1, nodes: map[string]Counters{"a": {Hits: 500, Misses: 500, Uptime: time.Hour}}},
				// +90 hits +10 misses, not the 590/1100 since the start.
				{n: 2, nodes: map[string]Counters{"a": {Hits: 590, Misses: 510, PID: 7, Uptime: time.Hour + time.Second}}, rate: 0.9, ok: true},
			},
		},
		{
			name: "an early tick at the usual traffic weighs as much as a full one",
			readings: []reading{
				{n: 2, nodes: map[string]Counters{"a": c(0, 0)}},
				// 1000 gets in 2 s: the usual traffic is 500 a second.
				{n: 4, nodes: map[string]Counters{"a": c(950, 50)}, rate: 0.95, ok: true},
				// 500 gets in 1 s, all misses: the same traffic, weight 0.5.
				{n: 5, nodes: map[string]Counters{"a": c(950, 550)}, rate: 0.475, ok: true},
			},
		},
		{
			name: "a quiet interval barely moves the value",
			readings: []reading{
				{n: 1, nodes: map[string]Counters{"a": c(0, 0)}},
				{n: 2, nodes: map[string]Counters{"a": c(950, 50)}, rate: 0.95, ok: true},
				// 10 requests, all misses, at 1% of the usual traffic:
				// weight 0.5 x 0.01.
				{n: 3, nodes: map[string]Counters{"a": c(950, 60)}, rate: 0.95 - 0.005*0.95, ok: true},
			},
		},
		{
			name: "an unserved slot's share of the gets counts as misses",
			readings: []reading{
				{n: 1, nodes: map[string]Counters{"a": c(0, 0)}, slots: Slots{Total: 4, Unserved: 1}},
				// 90 hits of 100 gets on the 3 slots served: 90 / (100 × 4/3).
				{n: 2, nodes: map[string]Counters{"a": c(90, 10)}, slots: Slots{Total: 4, Unserved: 1}, rate: 0.675, ok: true},
			},
		},
		{
			name: "an unreadable slot is left out, not counted as misses",
			readings: []reading{
				{n: 1, nodes: map[string]Counters{"a": c(0, 0)}, slots: Slots{Total: 4, Unreadable: 1}},
				{n: 2, nodes: map[string]Counters{"a": c(90, 10)}, slots: Slots{Total: 4, Unreadable: 1}, rate: 0.9, ok: true},
			},
		},
		{
			name: "the unserved slots' gets count in the traffic: the interval weighs in full",
			readings: []reading{
				{n: 1, nodes: map[string]Counters{"a": c(0, 0)}},
				{n: 2, nodes: map[string]Counters{"a": c(90, 10)}, rate: 0.9, ok: true},
				// Half the slots unserved: 45 hits of 50 gets read, 100
				// gets in all (the usual traffic), 0.45 weighed 0.5.
				{n: 3, nodes: map[string]Counters{"a": c(135, 15)}, slots: Slots{Total: 2, Unserved: 1}, rate: 0.675, ok: true},
			},
		},
		{
			name: "no slot served is a reading of 0 at the usual traffic",
			readings: []reading{
				{n: 1, nodes: map[string]Counters{"a": c(0, 0)}},
				{n: 2, nodes: map[string]Counters{"a": c(90, 10)}, rate: 0.9, ok: true},
				{n: 3, nodes: map[string]Counters{}, slots: Slots{Total: 2, Unserved: 2}, rate: 0.45, ok: true},
				{n: 4, nodes: map[string]Counters{}, slots: Slots{Total: 2, Unserved: 2}, rate: 0.225, ok: true},
			},
		},
		{
			name: "no slot served before any reading is a reading of 0",
			readings: []reading{
				{n: 1, nodes: map[string]Counters{}, slots: Slots{Total: 2, Unserved: 2}, rate: 0, ok: true},
				{n: 2, nodes: map[string]Counters{"a": c(0, 0)}, slots: Slots{Total: 2, Unserved: 1}, rate: 0, kept: true},
				// The first interval with gets weighs 0.5: no usual traffic yet.
				{n: 3, nodes: map[string]Counters{"a": c(100, 0)}, slots: Slots{Total: 2, Unserved: 1}, rate: 0.25, ok: true},
			},
		},
		{
			name: "a collapse at full traffic halves the distance at once",
			readings: []reading{
				{n: 1, nodes: map[string]Counters{"a": c(0, 0)}},
				{n: 2, nodes: map[string]Counters{"a": c(950, 50)}, rate: 0.95, ok: true},
				{n: 3, nodes: map[string]Counters{"a": c(950, 1050)}, rate: 0.475, ok: true},
				{n: 4, nodes: map[string]Counters{"a": c(950, 2050)}, rate: 0.2375, ok: true},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m Meter
			for _, r := range tt.readings {
				rate, ok := m.Observe(t0.Add(time.Duration(r.n)*time.Second), r.nodes, r.slots)
				if ok != r.ok || math.Abs(rate-r.rate) > 1e-9 {
					t.Fatalf("second %d: got %v, %v; want %v, %v", r.n, rate, ok, r.rate, r.ok)
				}
				if m.Slots() != r.slots {
					t.Fatalf("second %d: Slots() = %+v, want %+v", r.n, m.Slots(), r.slots)
				}
				if hr, hok := m.HitRate(); hr != rate || hok != (ok || r.kept) {
					t.Fatalf("second %d: HitRate() = %v, %v; Observe said %v, %v", r.n, hr, hok, rate, ok)
				}
			}
		})
	}
}

func TestMeterForgetsVanishedNodes(t *testing.T) {
	var m Meter
	obs := func(n int, nodes map[string]Counters) float64 {
		t.Helper()
		rate, _ := m.Observe(t0.Add(time.Duration(n)*time.Second), nodes, Slots{})
		return rate
	}
	obs(0, map[string]Counters{"a": {Hits: 0}, "b": {Hits: 0}})
	obs(1, map[string]Counters{"a": {Hits: 0}, "b": {Hits: 100}})
	for n := 2; n < 2+forgetAfter; n++ {
		obs(n, map[string]Counters{"b": {Hits: uint64(100 * n)}})
	}
	if _, kept := m.nodes["a"]; kept {
		t.Fatalf("node a still remembered after %d readings without it", forgetAfter)
	}
	// a comes back with a huge miss count: as a forgotten node it only
	// sets a baseline and does not drag the hit rate down.
	n := 2 + forgetAfter
	if rate := obs(n, map[string]Counters{"a": {Misses: 1_000_000}, "b": {Hits: uint64(100 * n)}}); rate != 1 {
		t.Fatalf("rate %v after a forgotten node came back, want 1", rate)
	}
}

func TestMeterReset(t *testing.T) {
	var m Meter
	m.Observe(t0, map[string]Counters{"a": {}}, Slots{})
	m.Observe(t0.Add(time.Second), map[string]Counters{"a": {Hits: 10}}, Slots{})
	m.Reset()
	if _, ok := m.HitRate(); ok {
		t.Fatal("Reset kept the value")
	}
	if _, ok := m.Observe(t0.Add(2*time.Second), map[string]Counters{"a": {Hits: 20}}, Slots{}); ok {
		t.Fatal("the first reading after Reset was not a baseline")
	}
}
