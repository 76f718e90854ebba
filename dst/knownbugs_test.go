package dst

import (
	"flag"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/internal/revert"
	"github.com/mcrib/mcrib/internal/testenv"
)

// knownBugs are the known bugs that the simulation finds in this
// tree: for each, the fix whose absence (or whose revert switch) lets it
// happen, the seed and the simulated time at which it is found, and the
// rule that finds it. When the code or the simulation changes, the seeds
// move: make dst-selftest finds them anew. revert.FreshWarmReads is not
// here: the random mix rarely has a client read a warm source on a map
// that is not fresh (none of seeds 1-50 of 10 minutes does), so
// TestPlantedStaleMapReadsWarmSource plants the world that does.
var knownBugs = []struct {
	fix  revert.Fix
	seed uint64
	at   time.Duration
	rule string
}{
	{revert.FollowerFlush, 17, 132310 * time.Millisecond, ruleInv2Undecided},
	{revert.ForgottenFlush, 18, 106914 * time.Millisecond, ruleInv2Forgotten},
	{revert.WarmFromOwing, 10, 161353 * time.Millisecond, ruleInv9WarmOwing},
	{revert.WarmWriteDurable, 10, 46530 * time.Millisecond, ruleEndedWarming},
	{revert.CeilingAfterTakeover, 47, 389888 * time.Millisecond, ruleInv3Ceiling},
	{revert.CallerErrorNotLeaderDown, 15, 10011 * time.Millisecond, ruleShareUnfailed},
	{revert.GenerationOrder, 19, 24370 * time.Millisecond, ruleClientGeneration},
	{revert.ForwardedNeverShared, 10, 10336 * time.Millisecond, ruleShareUnfailed},
	{revert.AssuredLimit, 16, 81593 * time.Millisecond, ruleAdmissions},
	{revert.StoredBeforeFlush, 19, 137140 * time.Millisecond, ruleInv2Undecided},
	{revert.ListedOnce, 15, 16227 * time.Millisecond, ruleSlotMapValid},
	{revert.ShareNotAlone, 56, 204525 * time.Millisecond, ruleAdmissions},
	{revert.Tombstones, 6, 17320 * time.Millisecond, ruleTombstones},
	{revert.EndedWarmingGrace, 18, 61428 * time.Millisecond, ruleEndedWarming},
}

// others is the set of every fix but f: with f reverted, a violation that
// only another fix's rule finds is recorded and the run goes on (turning
// one fix off may break what another proves: the old flush path keeps its
// marks in memory, so a restart forgets them too).
func others(f revert.Fix) revert.Set { return revert.Of(revert.All()...) &^ revert.Of(f) }

// TestDSTKnownBugs shows that the checker finds each known bug: its seed,
// run with the bug's fix reverted and violations of the other fixes'
// rules tolerated, ends with a violation of the bug's rule, attributed to
// the fix, at the time the table says.
func TestDSTKnownBugs(t *testing.T) {
	testenv.SkipShort(t, "each known bug's seed run to the minute it is found")
	for _, b := range knownBugs {
		t.Run(b.fix.String(), func(t *testing.T) {
			cfg := Config{Seed: b.seed, Duration: b.at + time.Second, Reverted: revert.Of(b.fix), Tolerate: others(b.fix)}
			res := Run(cfg)
			v := res.Violation
			switch {
			case v == nil:
				t.Fatalf("seed %d ran clean for %v: the checker no longer finds %s there (run make dst-selftest to find it anew)", b.seed, res.SimTime, b.fix)
			case v.Rule != b.rule || v.Fix != b.fix:
				t.Fatalf("seed %d: want rule %s (%s), got %v", b.seed, b.rule, b.fix, v)
			case v.At.Round(time.Millisecond) != b.at:
				t.Errorf("seed %d: found at %v, the table says %v", b.seed, v.At, b.at)
			}
			t.Logf("seed %d at %.3fs: %s", b.seed, v.At.Seconds(), v.Message)
		})
	}
}

var (
	selfTestFlag = flag.Bool("dst.selftest", false, "run TestDSTSelfTest (make dst-selftest)")
	fixFlag      = flag.String("dst.fix", "all", "the fixes TestDSTSelfTest proves the checker against: all, or names")
)

// TestDSTSelfTest proves the checker against each known fix: with the
// fix reverted and the other fixes' violations tolerated, seeds
// of the short set (-dst.seeds from -dst.from, 10 simulated minutes each)
// must find it. For each fix it reports how many seeds found it, the first
// that did, and the earliest find, as a line of the table TestDSTKnownBugs
// keeps.
func TestDSTSelfTest(t *testing.T) {
	if !*selfTestFlag {
		t.Skip("run with -dst.selftest (make dst-selftest)")
	}
	seeds := *seedsFlag
	if seeds == 0 {
		seeds = 50
	}
	duration := 10 * time.Minute
	if *durationFlag != 0 {
		duration = *durationFlag
	}
	only, err := parseSet(*fixFlag)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range revert.All() {
		if !only.Reverted(f) {
			continue
		}
		start := time.Now()
		var first, earliest *Violation
		n := 0
		for s := *fromFlag; s < *fromFlag+uint64(seeds); s++ {
			res := Run(Config{Seed: s, Duration: duration, Reverted: revert.Of(f), Tolerate: others(f)})
			v := res.Violation
			switch {
			case v == nil:
				continue
			case v.Fix != f:
				t.Errorf("seed %d, %s reverted: %v", s, f, v)
				continue
			}
			n++
			if first == nil {
				first = v
			}
			if earliest == nil || v.At < earliest.At {
				earliest = v
			}
		}
		if first == nil {
			t.Errorf("%s: none of %d seeds from %d found it", f, seeds, *fromFlag)
			continue
		}
		t.Logf("%s: found by %d of %d seeds in %v; first by seed %d at %.3fs: %s", f, n, seeds, time.Since(start).Round(time.Millisecond), first.Seed, first.At.Seconds(), first.Message)
		t.Logf("\t{revert.%s, %d, %d * time.Millisecond, %s}, // the earliest: %s", goName(f), earliest.Seed, earliest.At.Milliseconds(), ruleName(earliest.Rule), earliest.Message)
	}
}

// goName is the Go name of a fix's constant.
func goName(f revert.Fix) string {
	var b strings.Builder
	for _, part := range strings.Split(f.String(), "-") {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

// ruleName is the Go name of a rule's constant.
func ruleName(rule string) string {
	for name, r := range map[string]string{
		"ruleInv2Undecided": ruleInv2Undecided, "ruleInv2Forgotten": ruleInv2Forgotten, "ruleInv9WarmOwing": ruleInv9WarmOwing,
		"ruleS7CopyOwing": ruleS7CopyOwing, "ruleStaleRead": ruleStaleRead, "ruleInv3Ceiling": ruleInv3Ceiling, "ruleClientGeneration": ruleClientGeneration,
		"ruleShareUnfailed": ruleShareUnfailed, "ruleAdmissions": ruleAdmissions, "ruleSlotMapValid": ruleSlotMapValid,
		"ruleTombstones": ruleTombstones, "ruleFresh": ruleFresh, "ruleEndedWarming": ruleEndedWarming,
	} {
		if r == rule {
			return name
		}
	}
	return strconv.Quote(rule)
}
