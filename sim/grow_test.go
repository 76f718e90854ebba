package sim

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
)

// growPool is a pool of 16 nodes whose 8 slots double to 16: 8 steps of
// one twin every 30 s, then the last split's 2-minute warming.
func growPool(policy string) Config {
	cfg := small(Grow, policy)
	cfg.Warmup, cfg.Duration = 2*time.Minute, 8*time.Minute
	return cfg
}

func TestGrowWarmBeatsNaive(t *testing.T) {
	warm, cold, naive := run(t, growPool(PolicyMCrib)), run(t, growPool(PolicyMCribCold)), run(t, growPool(PolicyNaive))
	if warm.Slots != 8 {
		t.Fatalf("grow of 16 nodes: %d slots; want 8, a spare for each", warm.Slots)
	}
	for _, r := range []Result{warm, cold} {
		if !r.Grown || r.GrowTime > r.GrowBound {
			t.Errorf("%s: done %v in %s; want within %s", r.Policy, r.Grown, r.GrowTime, r.GrowBound)
		}
	}
	if want := 8*growStepInterval + cachenodes.AnnounceLead + 2*time.Minute; warm.GrowBound != want {
		t.Errorf("warm growth's bound %s; want %s (8 steps of 30 s, the last one's 12 s announce and the 2m warm-for)", warm.GrowBound, want)
	}
	if naive.ExtraDBMisses <= 0 || warm.ExtraDBMisses >= naive.ExtraDBMisses || warm.ExtraDBMisses >= cold.ExtraDBMisses {
		t.Errorf("extra DB misses: warm %d, cold %d, naive %d; want warm below both, naive above 0",
			warm.ExtraDBMisses, cold.ExtraDBMisses, naive.ExtraDBMisses)
	}
	if warm.LowestSecondHitRate <= naive.LowestSecondHitRate {
		t.Errorf("lowest hit rate (1 s): warm %.4f, naive %.4f; want warm above", warm.LowestSecondHitRate, naive.LowestSecondHitRate)
	}
	var b strings.Builder
	WriteTable(&b, []Result{warm, cold, naive})
	for _, want := range []string{"time to done", "| naive | 8 → 16 |", "at once", "| 1.000× |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("grow table lacks %q:\n%s", want, b.String())
		}
	}
	cs := growChecks([]Result{warm, cold, naive})
	if len(cs) != 3 || !cs[0].OK {
		t.Errorf("grow checks %+v; want 3, warm growth done in time", cs)
	}
}

func TestGrowNeedsSparesAndTheLoop(t *testing.T) {
	for _, cfg := range []Config{
		small(Grow, PolicyImmediate),
		{Scenario: Grow, Nodes: 16, Slots: 16},
		{Scenario: AgentRollout, Policy: Policy{Name: PolicyNaive, Cold: true, Naive: true}},
	} {
		if _, err := Run(context.Background(), cfg); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%s under %s with %d slots of %d nodes: %v; want ErrBadConfig", cfg.Scenario, cfg.Policy.Name, cfg.Slots, cfg.Nodes, err)
		}
	}
}

func TestGrowChecks(t *testing.T) {
	rs := []Result{
		{Scenario: Grow, Policy: PolicyMCrib, Slots: 256, Grown: true, GrowTime: 7 * time.Minute, GrowBound: 7 * time.Minute,
			Baseline: 0.99, LowestSecondHitRate: 0.975, ExtraDBMisses: 100},
		{Scenario: Grow, Policy: PolicyNaive, Slots: 256, ExtraDBMisses: 1000},
	}
	for _, c := range Checks(rs) {
		if !c.OK {
			t.Errorf("%s: not met (%s)", c.Target, c.Detail)
		}
	}
	rs[0].GrowTime, rs[0].LowestSecondHitRate, rs[0].ExtraDBMisses = 7*time.Minute+time.Second, 0.969, 101
	for _, c := range growChecks(rs) {
		if c.OK {
			t.Errorf("%s: met (%s); want not met", c.Target, c.Detail)
		}
	}
}

// TestGrowRunsAsLongAsTheWarmRun: every policy of grow runs the same
// window, the warm run's steps, its last split's announce, its warm-for
// and a minute in which the keys nobody read while their twin warmed
// miss, whatever its own warm-for (mcrib-cold and naive run with 0s).
func TestGrowRunsAsLongAsTheWarmRun(t *testing.T) {
	for _, policy := range []string{PolicyMCrib, PolicyMCribCold, PolicyNaive} {
		p, err := ParsePolicy(policy)
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{Scenario: Grow, Nodes: 1000, WarmFor: 15 * time.Minute, Policy: p}.WithDefaults()
		if got, want := scenarioLength(cfg), 10*growStepInterval+cachenodes.AnnounceLead+15*time.Minute+time.Minute; got != want {
			t.Errorf("%s: grow of 256 slots with --warm-for 15m runs %v; want %v", policy, got, want)
		}
	}
}
