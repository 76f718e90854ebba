package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/mcribapi"
)

// TestBenchGrowTargets checks that the targets of the growth benchmark
// catch a dip of the default run's hit rate, warm splits that save too
// few misses, a naive resize that says nothing and a slow growth; and that
// the report describes the runs and judges each warm variant.
func TestBenchGrowTargets(t *testing.T) {
	good := func() []*growResult {
		def := &growResult{cfg: growConfigFor(variantDefault), steady: 0.97, lowestSpan: 0.965, lowest: 0.95, done: 100 * time.Second, extra: 15}
		off := &growResult{cfg: growConfigFor(variantCopyOff), steady: 0.97, lowestSpan: 0.95, lowest: 0.94, done: 90 * time.Second, extra: 400}
		fixed := &growResult{cfg: growConfigFor(variantFixed2m), steady: 0.97, lowestSpan: 0.93, lowest: 0.92, done: 167 * time.Second, extra: 1000}
		cold := &growResult{cfg: growConfigFor(variantCold), steady: 0.97, lowestSpan: 0.88, lowest: 0.87, done: 40 * time.Second, extra: 5000}
		naive := &growResult{cfg: growConfigFor(variantNaive), steady: 0.97, lowestSpan: 0.75, lowest: 0.74, extra: 1000}
		return []*growResult{def, off, fixed, cold, naive}
	}
	if got, want := growDoneBound(), 340*time.Second; got != want {
		t.Fatalf("the bound of done is %v; want %v (8 steps of 5 s and 5 minutes)", got, want)
	}
	if got, want := growConfigFor(variantDefault).window, 250*time.Second; got != want {
		t.Errorf("the window is %v; want %v (the steps, the fixed 2m and 90 s)", got, want)
	}
	for _, tc := range []struct {
		name  string
		edit  func(def, naive *growResult)
		wants []string
	}{
		{"all met", func(_, _ *growResult) {}, nil},
		{"a dip", func(d, _ *growResult) { d.lowestSpan = 0.959 }, []string{"lowest hit rate 95.90% (5 s)"}},
		{"a lowest second alone is not judged", func(d, _ *growResult) { d.lowest = 0.93 }, nil},
		{"too many misses", func(d, _ *growResult) { d.extra = 21 }, []string{"21 extra misses, 0.021×"}},
		{"a naive resize without cost", func(_, n *growResult) { n.extra = 0 }, []string{"says nothing"}},
		{"done within the passes' slack", func(d, _ *growResult) { d.done = 340*time.Second + 900*time.Millisecond }, nil},
		{"a slow growth", func(d, _ *growResult) { d.done = 341*time.Second + 100*time.Millisecond }, []string{"done in 5m41.1s"}},
		{"not done", func(d, _ *growResult) { d.notDone = true }, []string{"done in not by 5m41s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs := good()
			tc.edit(runs[0], runs[4])
			wantMissed(t, growTargets(runs[0], runs[4]), tc.wants)
		})
	}
	runs := good()
	for i := range 9 {
		runs[0].splits = append(runs[0].splits, growLook{at: time.Duration(i) * 5 * time.Second, split: 2 * i})
	}
	slot := 16
	at := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	runs[0].warmings = warmEndsOf([]mcribapi.Event{
		{Kind: mcribapi.EventWarmStart, Slot: &slot, At: at},
		{Kind: mcribapi.EventWarmEnd, Slot: &slot, At: at.Add(42 * time.Second), Reason: "node mc-01 no longer warms slot 16 (converged: over the last 30s the new holder's hit rate was …)"},
	})
	dir := t.TempDir()
	if err := writeGrowReport(dir, runs, growTargets(runs[0], runs[4])); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"32 memcached (mc-01…32)", "--slots 16 ", "16 slots and 16 spares", "40000 Zipf-distributed keys (2500 a slot",
		"num_slots 32, step_percent 10, step_interval 5s", "| default | (defaults) | 97.00% | 1m40s | 96.50% | 95.00% |",
		"| fixed 2m | `--warm-min 2m --warm-for 2m --warm-copy-rate 0` |", "split 2 a step", "plain 32-slot map",
		"| naive | `--warm-for 0s` | 97.00% | at once |", "0.015×", "- default: 0@0.0s → 2@5.0s", "16@40.0s; done at 1m40s; 1 warmings (1 converged), 42s–42s long",
		"| default | **met**: 0.50 points | **met**: 0.015× | **met**: 1m40s |", "| copy off | **not met**: 2.00 points | **not met**: 0.400× | **met**: 1m30s |"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the report lacks %q:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), "| cold | **") {
		t.Errorf("the report judges the cold run against the warm targets:\n%s", b)
	}
}
