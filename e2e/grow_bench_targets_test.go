package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBenchGrowTargets checks that the targets of the growth benchmark
// catch a dip of warm growth's hit rate, warm splits that save too few
// misses, a naive resize that says nothing and a slow growth; and that the
// report describes the runs.
func TestBenchGrowTargets(t *testing.T) {
	good := func() (warm, cold, naive *growResult) {
		warm = &growResult{cfg: growConfigFor("warm", "10m", false), steady: 0.97, lowestSpan: 0.955, lowest: 0.94, done: 630 * time.Second, extra: 90}
		cold = &growResult{cfg: growConfigFor("cold", "0s", false), steady: 0.97, lowestSpan: 0.88, lowest: 0.87, done: 40 * time.Second, extra: 5000}
		naive = &growResult{cfg: growConfigFor("naive", "0s", true), steady: 0.97, lowestSpan: 0.75, lowest: 0.74, extra: 1000}
		return warm, cold, naive
	}
	if got, want := growStepsTime()+growWarmFor, 640*time.Second; got != want {
		t.Fatalf("the bound of done is %v; want %v (8 steps of 5 s and the 10m warm-for)", got, want)
	}
	if got := durationFlag(growWarmFor); got != "10m" {
		t.Errorf("the warm run's flag is --warm-for %s; want 10m", got)
	}
	for _, tc := range []struct {
		name  string
		edit  func(warm, naive *growResult)
		wants []string
	}{
		{"all met", func(_, _ *growResult) {}, nil},
		{"a warm dip", func(w, _ *growResult) { w.lowestSpan = 0.949 }, []string{"lowest hit rate 94.90% (5 s)"}},
		{"a lowest second alone is not judged", func(w, _ *growResult) { w.lowest = 0.93 }, nil},
		{"too many warm misses", func(w, _ *growResult) { w.extra = 101 }, []string{"101 extra misses"}},
		{"a naive resize without cost", func(_, n *growResult) { n.extra = 0 }, []string{"says nothing"}},
		{"done within the passes' slack", func(w, _ *growResult) { w.done = 640*time.Second + 900*time.Millisecond }, nil},
		{"a slow warm growth", func(w, _ *growResult) { w.done = 641*time.Second + 100*time.Millisecond }, []string{"done in 10m41.1s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			warm, _, naive := good()
			tc.edit(warm, naive)
			wantMissed(t, growTargets(warm, naive), tc.wants)
		})
	}
	warm, cold, naive := good()
	for i := range 9 {
		warm.splits = append(warm.splits, growLook{at: time.Duration(i) * 5 * time.Second, split: 2 * i})
	}
	dir := t.TempDir()
	if err := writeGrowReport(dir, warm, cold, naive, growTargets(warm, naive)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"32 memcached (mc-01…32)", "--slots 16 ", "16 slots and 16 spares", "40000 Zipf-distributed keys (2500 a slot",
		"num_slots 32, step_percent 10, step_interval 5s, under `--warm-for 10m`", "| warm | 10m | 97.00% | 10m30s | 95.50% | 94.00% |", "split 2 a step", "plain 32-slot map",
		"| naive | 0s | 97.00% | at once |", "0.090×", "- warm: 0@0.0s → 2@5.0s", "16@40.0s; done at 630.0 s", "**met**"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the report lacks %q:\n%s", want, b)
		}
	}
}
