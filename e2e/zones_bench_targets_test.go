package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBenchZonesTargets checks that the targets of the zone-drain benchmark
// catch a slow drain, a dip of the warm drain's hit rate, warm moves that
// save too few misses, and a cold drain that says nothing; and that the
// report describes the bed the runs use.
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
			wantMissed(t, zoneDrainTargets(warm, cold), tc.wants)
		})
	}
	// The report is written from the same figures.
	warm, cold := good()
	dir := t.TempDir()
	warm.zone, warm.fill, warm.baselineSlots, warm.warmMoves = "c", "a:11 b:11 c:10", 10, 10
	for i := range 11 {
		warm.steps = append(warm.steps, drainLook{at: time.Duration(i) * 3 * time.Second, slots: 10 - i})
	}
	if err := writeZoneDrainReport(dir, warm, cold, zoneDrainTargets(warm, cold)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	// The bed as the report describes it is the one the runs use: 32 slots
	// spread 11/11/10, 54 memcached six to a host, zone c drained in ten
	// steps of one slot.
	for _, want := range []string{"54 memcached in zones a, b, c (mc-a-1…18, mc-b-1…18, mc-c-1…18", "6 to a host on ports 11211–11216, 3 hosts per zone",
		"--slots 32 ", "spread the slots a:11 b:11 c:10; zone c, the one holding a multiple of ten, is drained", "zones a and b have a spare",
		"80000 Zipf-distributed keys (2500 a slot", "`PUT /v1/drain/c`", "- warm: zone c (first fill a:11 b:11 c:10), baseline 10; 10@0.0s → 9@3.0s", "0@30.0s (steps 3.0–3.0 s apart, 3.00 s on average); 10 warm and 0 cold moves", "**met**"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the report lacks %q:\n%s", want, b)
		}
	}
}
