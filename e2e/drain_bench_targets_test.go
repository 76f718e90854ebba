package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBenchDrainTargets checks that the targets of the drain benchmark
// catch, in either phase, a dip of the default run's hit rate, warm moves
// that save too few misses, a cold run that says nothing and warmings that
// outlast their bound; and that the report describes the runs and judges
// each warm variant.
func TestBenchDrainTargets(t *testing.T) {
	phases := func(lowest, extra float64, over time.Duration) [2]drainPhase {
		return [2]drainPhase{
			{name: "drain", lastStep: 15 * time.Second, over: 15*time.Second + over, lowestSpan: lowest, extra: extra, steps: []drainLook{{0, 6}, {15 * time.Second, 0}}},
			{name: "undrain", lastStep: 16 * time.Second, over: 16*time.Second + over, lowestSpan: lowest, extra: extra},
		}
	}
	good := func() []*drainBenchResult {
		mk := func(v warmVariant, lowest, extra float64, over time.Duration) *drainBenchResult {
			return &drainBenchResult{cfg: drainBenchConfigFor(v), steady: 0.97, zone: "a", fill: "a:6 b:5 c:5", baseline: 6, phases: phases(lowest, extra, over)}
		}
		return []*drainBenchResult{mk(variantDefault, 0.965, 40, time.Minute), mk(variantCopyOff, 0.95, 300, 90*time.Second),
			mk(variantFixed2m, 0.94, 500, 2*time.Minute), mk(variantCold, 0.90, 1000, 0)}
	}
	if got := drainBenchSteps(); got != 6 {
		t.Fatalf("%d steps; want 6 (the zone holding 6 of 16 slots, one a step)", got)
	}
	if got, want := drainBenchConfigFor(variantDefault).window, 15*time.Second+12*time.Second+2*time.Minute+45*time.Second; got != want {
		t.Errorf("the window is %v; want %v", got, want)
	}
	for _, tc := range []struct {
		name  string
		edit  func(def, cold *drainBenchResult)
		wants []string
	}{
		{"all met", func(_, _ *drainBenchResult) {}, nil},
		{"a dip in the undrain", func(d, _ *drainBenchResult) { d.phases[1].lowestSpan = 0.959 }, []string{"run's undrain: the lowest hit rate 95.90% (5 s)"}},
		{"too many misses in the drain", func(d, _ *drainBenchResult) { d.phases[0].extra = 51 }, []string{"run's drain: 51 extra misses, 0.051×"}},
		{"a cold undrain without cost", func(_, c *drainBenchResult) { c.phases[1].extra = 0 }, []string{"cold undrain cost no extra misses"}},
		{"warmings over at the bound", func(d, _ *drainBenchResult) { d.phases[0].over = d.phases[0].lastStep + 3*time.Minute }, nil},
		{"warmings over late", func(d, _ *drainBenchResult) { d.phases[1].over = d.phases[1].lastStep + 3*time.Minute + time.Second }, []string{"undrain: every warming over 3m1s after"}},
		{"warmings never over", func(d, _ *drainBenchResult) { d.phases[0].notOver = true }, []string{"drain: every warming over not within 5m0s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs := good()
			tc.edit(runs[0], runs[3])
			missed := drainBenchTargets(runs[0], runs[3])
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
	runs := good()
	dir := t.TempDir()
	if err := writeDrainBenchReport(dir, runs, drainBenchTargets(runs[0], runs[3])); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"27 memcached in zones a, b, c (9 each", "--slots 16 ", "spread the slots a:6 b:5 c:5; zone a, the one holding the most (6)",
		"step_percent 10, step_interval 3s", "| default | drain | (defaults) | 97.00% | 15.0 s | 1m0s | 96.50% |", "| cold | undrain | `--warm-for 0s` |",
		"0.040×", "- default, drain: 6@0.0s → 0@15.0s", "| default | drain | **met**: 0.50 points | **met**: 0.040× | **met**: 1m0s |",
		"| copy off | undrain | **not met**: 2.00 points | **not met**: 0.300× | **met**: 1m30s |"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the report lacks %q:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), "| cold | drain | **") {
		t.Errorf("the report judges the cold run against the warm targets:\n%s", b)
	}
}

// TestBenchVariantsPicksRuns checks the choice of runs by name: the named
// ones in the benchmark's order, the baseline always last.
func TestBenchVariantsPicksRuns(t *testing.T) {
	names := func(vs []warmVariant) string {
		var out []string
		for _, v := range vs {
			out = append(out, v.name)
		}
		return strings.Join(out, ",")
	}
	for list, want := range map[string]string{
		"":                        "default,copy off,fixed 2m,cold,naive",
		"default":                 "default,naive",
		"copy off, default":       "copy off,default,naive",
		"default,naive":           "default,naive",
		"fixed 2m,copy off,naive": "fixed 2m,copy off,naive",
	} {
		if got := names(benchVariants(t, growVariants, list)); got != want {
			t.Errorf("runs %q: %s; want %s", list, got, want)
		}
	}
	if got := names(benchVariants(t, drainBenchVariants, "default")); got != "default,cold" {
		t.Errorf("the drain's runs \"default\": %s; want default,cold", got)
	}
}
