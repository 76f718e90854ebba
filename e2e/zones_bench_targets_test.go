package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestBenchZonesTargets checks that the targets of the zone-drain benchmark
// catch a slow drain, a dip of the warm drain's hit rate, warm moves that
// save too few misses, and a cold drain that says nothing.
func TestBenchZonesTargets(t *testing.T) {
	good := func() (*zoneDrainResult, *zoneDrainResult) {
		warm := &zoneDrainResult{cfg: zoneDrainConfigFor("warm", "2m"), steady: 0.95, lowest: 0.93, drainTook: 7 * time.Second, extra: 100}
		cold := &zoneDrainResult{cfg: zoneDrainConfigFor("cold", "0s"), steady: 0.95, lowest: 0.60, drainTook: 7 * time.Second, extra: 4000}
		return warm, cold
	}
	for _, tc := range []struct {
		name  string
		edit  func(warm, cold *zoneDrainResult)
		wants []string
	}{
		{"all met", func(_, _ *zoneDrainResult) {}, nil},
		{"a slow warm drain", func(w, _ *zoneDrainResult) { w.drainTook = 34 * time.Second }, []string{"the warm drain took 34s"}},
		{"a slow cold drain", func(_, c *zoneDrainResult) { c.drainTook = 40 * time.Second }, []string{"the cold drain took 40s"}},
		{"a warm dip", func(w, _ *zoneDrainResult) { w.lowest = 0.89 }, []string{"lowest hit rate 89.00%"}},
		{"too many warm misses", func(w, _ *zoneDrainResult) { w.extra = 1001 }, []string{"1001 extra misses"}},
		{"a cold drain without cost", func(_, c *zoneDrainResult) { c.extra = 0 }, []string{"says nothing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			warm, cold := good()
			tc.edit(warm, cold)
			missed := zoneDrainTargets(warm, cold)
			if len(missed) != len(tc.wants) {
				t.Fatalf("missed %q, want %d target(s) missed", missed, len(tc.wants))
			}
			for i, w := range tc.wants {
				if !strings.Contains(missed[i], w) {
					t.Errorf("missed[%d] = %q, want it to contain %q", i, missed[i], w)
				}
			}
		})
	}
	// The report is written from the same figures.
	warm, cold := good()
	dir := t.TempDir()
	if err := writeZoneDrainReport(dir, warm, cold, zoneDrainTargets(warm, cold)); err != nil {
		t.Fatal(err)
	}
}
