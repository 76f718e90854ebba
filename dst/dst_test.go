package dst

import (
	"flag"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/internal/revert"
)

var (
	seedFlag     = flag.Uint64("dst.seed", 0, "run this one seed (TestDST)")
	seedsFlag    = flag.Int("dst.seeds", 0, "run this many seeds from -dst.from (TestDST); 0: the short fixed set")
	fromFlag     = flag.Uint64("dst.from", 1, "the first seed of -dst.seeds")
	durationFlag = flag.Duration("dst.duration", 0, "simulated time per seed (0: the test's own)")
	traceFlag    = flag.Bool("dst.trace", false, "print every trace line")
	opsFlag      = flag.Bool("dst.ops", false, "trace every client and probe call")
	logsFlag     = flag.Bool("dst.logs", false, "print the replicas' logs")
	tolerateFlag = flag.String("dst.tolerate", "pending", `fixes whose violations do not stop a run: "pending" (the fixes this tree lacks), "all", "none" or names`)
	revertedFlag = flag.String("dst.reverted", "none", "fixes to turn off (Config.Reverted)")
)

// pending lists the fixes that this tree does not hold yet: a clean run
// tolerates their violations. Every fix the simulation proves itself
// against has landed, so it is empty; each fix's switch (Config.Reverted,
// applied with revert.Apply to each object the world builds) turns it
// back off for the self-test (TestDSTKnownBugs).
var pending revert.Set

// parseSet reads a list of fix names: "all", "none", "pending" or
// comma-separated names.
func parseSet(s string) (revert.Set, error) {
	switch s {
	case "all":
		return revert.Of(revert.All()...), nil
	case "none", "":
		return 0, nil
	case "pending":
		return pending, nil
	}
	var out revert.Set
	for _, name := range strings.Split(s, ",") {
		f, err := revert.Parse(strings.TrimSpace(name))
		if err != nil {
			return 0, err
		}
		out |= revert.Of(f)
	}
	return out, nil
}

// flagConfig returns the Config of seed as the flags ask.
func flagConfig(t *testing.T, seed uint64, duration time.Duration) Config {
	t.Helper()
	tol, err := parseSet(*tolerateFlag)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := parseSet(*revertedFlag)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Seed: seed, Duration: duration, Tolerate: tol, Reverted: rev, TraceOps: *opsFlag}
	if *durationFlag != 0 {
		cfg.Duration = *durationFlag
	}
	if *traceFlag {
		cfg.Trace = os.Stdout
	}
	if *logsFlag {
		cfg.Logs = os.Stdout
	}
	return cfg
}

// shortSeeds is make test's fixed set: a few seeds of a few simulated
// minutes each; under -short (make check) only the first.
var shortSeeds = []uint64{1, 2, 3}

const shortDuration = 90 * time.Second

// TestDST runs seeds (the short fixed set, or those the flags name) and
// fails on the first violation no tolerated fix explains. It logs what it
// tolerated and how fast it ran.
func TestDST(t *testing.T) {
	seeds := shortSeeds
	if testing.Short() {
		seeds = shortSeeds[:1]
	}
	duration := shortDuration
	switch {
	case *seedFlag != 0:
		seeds, duration = []uint64{*seedFlag}, 10*time.Minute
	case *seedsFlag > 0:
		seeds, duration = nil, 10*time.Minute
		for s := range uint64(*seedsFlag) {
			seeds = append(seeds, *fromFlag+s)
		}
	}
	start := time.Now()
	var sim time.Duration
	found := map[revert.Fix]*Violation{}
	failed, resized, splits := 0, 0, 0
	if *durationFlag != 0 {
		duration = *durationFlag
	}
	for _, seed := range seeds {
		res := Run(flagConfig(t, seed, duration))
		sim += res.SimTime
		if res.Doublings > 0 {
			resized++
		}
		splits += res.Splits
		for _, v := range res.Tolerated {
			t.Logf("seed %d at %7.3fs: known bug %s (rule %s): %s", seed, v.At.Seconds(), v.Fix, v.Rule, v.Message)
			if f := found[v.Fix]; f == nil || v.At < f.At {
				found[v.Fix] = v
			}
		}
		if res.Violation != nil {
			failed++
			t.Error(res.Violation)
		}
	}
	el := time.Since(start)
	t.Logf("%d seeds, %v simulated in %v: %.0f simulated seconds per wall second, %.1f seeds of %v per CPU-minute; %d failed",
		len(seeds), sim, el.Round(time.Millisecond), sim.Seconds()/el.Seconds(), float64(len(seeds))/el.Minutes(), duration, failed)
	t.Logf("%d of %d seeds resized the pool at least once; %d twins split", resized, len(seeds), splits)
	for _, f := range slices.Sorted(func(yield func(revert.Fix) bool) {
		for f := range found {
			if !yield(f) {
				return
			}
		}
	}) {
		v := found[f]
		t.Logf("earliest %s: seed %d at %.3fs (%s)", f, v.Seed, v.At.Seconds(), v.Rule)
	}
}
