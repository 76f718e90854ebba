package e2e

import (
	"math/rand/v2"
	"os"
	"testing"
	"time"
)

// TestBenchRealAgentRolloutShort is the short form of make bench-real that
// make test runs: 12 real memcached each registered in its own Consul client
// agent, mcrib serve with its damping defaults, cache-aside load, and the
// agents of 3 slot holders restarted one after another, each away ~8 s. No
// flush, no replacement, and the hit rate stays within 1 point of the
// baseline measured before the rollout.
func TestBenchRealAgentRolloutShort(t *testing.T) {
	cfg := benchRealConfig{
		name: "short", nodes: 12, slots: 8, restarts: 3, keys: 20000, opsPerSec: 1200,
		warmup: 3 * time.Second, baseline: 6 * time.Second,
		absences: []time.Duration{8 * time.Second, 8 * time.Second, 8 * time.Second},
		gap:      time.Second, tail: 3 * time.Second, interval: time.Second,
	}
	r := runBenchReal(t, cfg)
	t.Logf("bench-real short: %v", r)
	for _, m := range benchRealTargets(r) {
		t.Error(m)
	}
}

// TestBenchRealAgentRollout is make bench-real: the long form, run only
// with MCRIB_BENCH_REAL=1 (make test runs the short form above). The agents
// of 25% of the 12 nodes restart one after another, each away 20–30 s;
// BENCH_REAL_DURATION (default 4m) sets the whole run, the rest going to the
// baseline before and the tail after. With MCRIB_BENCH_REAL_OUT=DIR it
// writes report.md and hit-rate.svg there.
func TestBenchRealAgentRollout(t *testing.T) {
	if os.Getenv("MCRIB_BENCH_REAL") != "1" {
		t.Skip("the long real-stack rollout runs with MCRIB_BENCH_REAL=1 (make bench-real); make test runs TestBenchRealAgentRolloutShort")
	}
	total := 4 * time.Minute
	if v := os.Getenv("BENCH_REAL_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("BENCH_REAL_DURATION: %v", err)
		}
		total = d
	}
	cfg := benchRealConfig{
		name: "long", nodes: 12, slots: 8, restarts: 3, keys: 100000, opsPerSec: 2000,
		warmup: 10 * time.Second, gap: 5 * time.Second, interval: 2 * time.Second,
	}
	r := rand.New(rand.NewPCG(10, 2026))
	rollout := time.Duration(0)
	for range cfg.restarts {
		a := 20*time.Second + time.Duration(r.Int64N(int64(10*time.Second)))/time.Second*time.Second
		cfg.absences = append(cfg.absences, a)
		rollout += a + cfg.gap + 2*time.Second
	}
	rest := max(20*time.Second, (total-cfg.warmup-rollout)/2)
	cfg.baseline, cfg.tail = rest, rest
	res := runBenchReal(t, cfg)
	t.Logf("bench-real: %v", res)
	missed := benchRealTargets(res)
	if dir := os.Getenv("MCRIB_BENCH_REAL_OUT"); dir != "" {
		if err := writeBenchRealReport(dir, res, missed); err != nil {
			t.Fatal(err)
		}
		t.Logf("report written to %s", dir)
	}
	for _, m := range missed {
		t.Error(m)
	}
}
