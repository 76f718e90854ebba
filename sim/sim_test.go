package sim

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// small is a pool and workload small enough for a run of a few seconds
// under -race.
func small(scenario, policy string) Config {
	p, err := ParsePolicy(policy)
	if err != nil {
		panic(err)
	}
	return Config{
		Scenario: scenario, Policy: p, Seed: 7,
		Nodes: 16, Warmup: 2 * time.Minute, Duration: 4 * time.Minute,
		Clients: 400, SampledReads: 1000, ItemsPerNode: 1000,
		// the database as tight, relative to the traffic, as by default
		DBCapacity: 2400 * 400 / 2000.0,
	}
}

func run(t *testing.T, cfg Config) Result {
	t.Helper()
	r, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Run(%s, %s): %v", cfg.Scenario, cfg.Policy.Name, err)
	}
	return r
}

// figures returns r's numbers, as the report's results.json has them.
func figures(t *testing.T, r Result) string {
	t.Helper()
	b, err := json.Marshal(jsonResults([]Result{r}))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSameSeedSameNumbers runs configs twice and once with another seed;
// under -short (make check) only the one that runs the loop through a
// node failure.
func TestSameSeedSameNumbers(t *testing.T) {
	cases := []struct{ scenario, policy string }{
		{NodeFailure, PolicyMCrib}, {AgentRollout, PolicyImmediate}, {Partition, PolicyMCrib}, {ColdStart, PolicyAdaptive},
	}
	if testing.Short() {
		cases = cases[:1]
	}
	for _, c := range cases {
		scenario, policy := c.scenario, c.policy
		cfg := small(scenario, policy)
		a, b := run(t, cfg), run(t, cfg)
		if fa, fb := figures(t, a), figures(t, b); fa != fb {
			t.Errorf("%s under %s: two runs of the same config differ:\n%s\n%s", scenario, policy, fa, fb)
		}
		cfg.Seed++
		if c := run(t, cfg); figures(t, c) == figures(t, a) {
			t.Errorf("%s under %s: another seed gave the same numbers", scenario, policy)
		}
	}
}

func TestEveryScenarioAndPolicy(t *testing.T) {
	for _, sc := range Scenarios() {
		for _, policy := range []string{PolicyImmediate, PolicyMCrib, PolicyAdaptive, "static:20"} {
			cfg := small(sc, policy)
			if !Applies(sc, cfg.Policy) {
				continue // zone-drain under immediate: TestZoneDrainNeedsTheLoop
			}
			cfg.Duration = 90 * time.Second
			cfg.Warmup = time.Minute
			cfg.SampledReads = 200
			r := run(t, cfg)
			if !(r.Baseline > 0.5 && r.Baseline < 1) || !(r.LowestHitRate >= 0 && r.LowestHitRate <= 1) {
				t.Errorf("%s under %s: baseline %v, lowest %v", sc, policy, r.Baseline, r.LowestHitRate)
			}
			if want := int((cfg.Duration + 2*time.Minute) / sampleEvery); len(r.Series) < want/2 {
				t.Errorf("%s under %s: %d points, want about %d", sc, policy, len(r.Series), want)
			}
			if r.Simulated != cfg.Warmup+cfg.Duration {
				t.Errorf("%s under %s: simulated %s, want %s", sc, policy, r.Simulated, cfg.Warmup+cfg.Duration)
			}
			limit := r.Series[len(r.Series)-1].BootLimit
			if policy == PolicyImmediate != math.IsNaN(limit) {
				t.Errorf("%s under %s: boot limit %v", sc, policy, limit)
			}
		}
	}
}

func TestAgentRolloutTargets(t *testing.T) {
	cfg := small(AgentRollout, PolicyMCrib)
	cfg.Nodes = 24 // 6 agents restart, a slot holder among them
	m := run(t, cfg)
	if m.Flushes != 0 || m.Replacements != 0 || m.OverloadSeconds != 0 {
		t.Errorf("mcrib: %d flushes, %d replacements, %d s overload; want none", m.Flushes, m.Replacements, m.OverloadSeconds)
	}
	if drop := 100 * (m.Baseline - m.LowestHitRate); drop > 0.5 {
		t.Errorf("mcrib: hit rate %.2f points below baseline, want at most 0.5", drop)
	}
	cfg.Policy = Policy{Name: PolicyImmediate, Immediate: true}
	im := run(t, cfg)
	if im.Flushes == 0 || im.Replacements == 0 {
		t.Errorf("immediate: %d flushes, %d replacements; want the 2022 damage", im.Flushes, im.Replacements)
	}
	if im.LowestHitRate >= m.LowestHitRate {
		t.Errorf("immediate: lowest hit rate %.4f, not below mcrib's %.4f", im.LowestHitRate, m.LowestHitRate)
	}
}

func TestObserverFaultTargets(t *testing.T) {
	for _, sc := range []string{ObserverBlip, PacketLoss} {
		cfg := small(sc, PolicyMCrib)
		cfg.LossRate = 5e-3 // enough lost checks in a short run
		m := run(t, cfg)
		if m.Flushes != 0 || m.Replacements != 0 {
			t.Errorf("%s under mcrib: %d flushes, %d replacements; want none", sc, m.Flushes, m.Replacements)
		}
		cfg.Policy = Policy{Name: PolicyImmediate, Immediate: true}
		if im := run(t, cfg); im.Flushes == 0 {
			t.Errorf("%s under immediate: no flush; the scenario did not bite", sc)
		}
	}
}

func TestColdStartDrivesTheLimiter(t *testing.T) {
	cfg := small(ColdStart, PolicyAdaptive)
	cfg.ZipfS = 1.05 // a long tail: the cache refills slowly enough to cut
	ad := run(t, cfg)
	low := math.Inf(1)
	for _, p := range ad.Series {
		if p.T > 0 {
			low = math.Min(low, p.BootLimit)
		}
	}
	if low != 10 || ad.BootsRefused == 0 {
		t.Errorf("adaptive: lowest boot limit %v, %d boots refused; want the floor of 10 and refusals", low, ad.BootsRefused)
	}
	cfg.Policy = Policy{Name: PolicyImmediate, Immediate: true}
	im := run(t, cfg)
	cfg.Policy, _ = ParsePolicy("static:2")
	slow := run(t, cfg)
	if slow.OverloadSeconds >= im.OverloadSeconds || !(slow.Recovery > im.Recovery || !slow.Recovered) {
		t.Errorf("static:2: %d s overload, back in %s; immediate %d s, %s: a low limit should trade time for load",
			slow.OverloadSeconds, slow.Recovery, im.OverloadSeconds, im.Recovery)
	}
}

// TestColdStartAdaptiveAgainstStatic is the cold-start target on a small
// run, with the boot limit's floor and ceiling scaled to its 400 clients:
// the adaptive limiter overloads the database only until its first reading
// shows the cold cache (here the slow start's 4 × the floor of 2 is above
// the 6 boots/s this database takes), far less than the 2022 behaviour,
// and is back within 1.25× the best static limit that keeps the database
// within its capacity (static:6 with these draws).
func TestColdStartAdaptiveAgainstStatic(t *testing.T) {
	cfg := small(ColdStart, PolicyAdaptive)
	cfg.BootLimitMin, cfg.BootLimitMax = 2, 200
	ad := run(t, cfg)
	cfg.Policy = Policy{Name: PolicyImmediate, Immediate: true}
	im := run(t, cfg)
	rs := []Result{ad, im}
	for _, n := range []string{"static:2", "static:4", "static:6", "static:8"} {
		cfg.Policy, _ = ParsePolicy(n)
		rs = append(rs, run(t, cfg))
	}
	firstReading := int(cfg.WithDefaults().StatsInterval / time.Second)
	if ad.OverloadSeconds > firstReading+1 || 3*ad.OverloadSeconds > im.OverloadSeconds {
		t.Errorf("adaptive: %d s overload (immediate %d s); want at most the %d s before the first reading shows the cold cache, and a third of immediate's",
			ad.OverloadSeconds, im.OverloadSeconds, firstReading+1)
	}
	c, ok := coldStartCheck(rs)
	if !ok || !ad.Recovered || !strings.Contains(c.Detail, "best static: static:6") {
		t.Fatalf("cold-start check %+v: want static:6 the best static limit", c)
	}
	if best, _ := find(rs, ColdStart, "static:6"); ad.Recovery > best.Recovery*5/4 {
		t.Errorf("adaptive back in %s, static:6 in %s: want within 1.25×", ad.Recovery, best.Recovery)
	}
}

func TestChecks(t *testing.T) {
	rs := []Result{
		{Scenario: ColdStart, Policy: PolicyAdaptive, Recovered: true, Recovery: 100 * time.Second},
		{Scenario: ColdStart, Policy: "static:20", Recovered: true, Recovery: 60 * time.Second, OverloadSeconds: 5},
		{Scenario: ColdStart, Policy: "static:10", Recovered: true, Recovery: 90 * time.Second, OverloadSeconds: 3},
		{Scenario: ColdStart, Policy: "static:5", Recovered: true, Recovery: 200 * time.Second},
		{Scenario: AgentRollout, Policy: PolicyMCrib, Baseline: 0.9, LowestHitRate: 0.896},
	}
	cs := Checks(rs)
	if len(cs) != 2 || !cs[0].OK || !cs[1].OK {
		t.Fatalf("Checks = %+v; want two met", cs)
	}
	// The best static limit is static:5, the fastest without overload (the
	// faster ones overload the database): 1.25 × 200 s.
	if want := "best static: static:5 back in 3m20s, 1.25× = 4m10s"; !strings.Contains(cs[1].Detail, want) {
		t.Errorf("cold-start detail %q, want it to name %q", cs[1].Detail, want)
	}
	rs[0].Recovery = 251 * time.Second // beyond 1.25 × 200 s
	if c := Checks(rs)[1]; c.OK {
		t.Errorf("adaptive back in 251 s met the target against static:5's 200 s: %s", c.Detail)
	}
	rs[0].Recovery = 100 * time.Second
	rs[2].OverloadSeconds = 0 // a static limit as fast as adaptive, without overload
	if c := Checks(rs)[1]; c.OK {
		t.Errorf("met although static:10 is as fast without overload: %s", c.Detail)
	}
	rs[2].OverloadSeconds = 3
	for _, r := range []*Result{&rs[2], &rs[3]} {
		r.OverloadSeconds = 1
	}
	if c := Checks(rs)[1]; c.OK || !strings.Contains(c.Detail, "sweep lower limits") {
		t.Errorf("no static limit without overload: %+v, want not met, asking for lower limits", c)
	}
	rs[4].LowestHitRate = 0.89 // 1 point
	rs[0].OverloadSeconds = 1
	for _, c := range Checks(rs) {
		if c.OK {
			t.Errorf("%s: met, want not met (%s)", c.Target, c.Detail)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []Config{
		{Scenario: "flood"},
		{Scenario: ColdStart, Nodes: 10, Slots: 12},
		{Scenario: ColdStart, Nodes: 4, Slots: 8},
		{Scenario: ColdStart, ZipfS: 0.9},
	} {
		if _, err := Run(context.Background(), c); !errors.Is(err, ErrBadConfig) {
			t.Errorf("Run(%+v) = %v; want ErrBadConfig", c, err)
		}
	}
	for _, p := range []string{"static:0", "static:x", "fast"} {
		if _, err := ParsePolicy(p); !errors.Is(err, ErrBadConfig) {
			t.Errorf("ParsePolicy(%q) = %v; want ErrBadConfig", p, err)
		}
	}
}

func TestParseShape(t *testing.T) {
	status := []byte(`{"pool":"web","nodes":[{},{},{}],"boot_limit":{"floor":5,"ceiling":300}}`)
	slotmap := []byte(`{"pool":"web","num_slots":2,"generation":1,"updated_at":"2026-01-01T00:00:00Z",` +
		`"slots":[{"slot":0,"node_id":"a","addr":"10.0.0.1:11211","az":""},{"slot":1,"node_id":"b","addr":"10.0.0.2:11211","az":""}],` +
		`"spares":[{"node_id":"c","addr":"10.0.0.3:11211","az":""}]}`)
	s, err := ParseShape(status, slotmap)
	if err != nil {
		t.Fatal(err)
	}
	c := s.Apply(Config{}).WithDefaults()
	if s.Pool != "web" || c.Nodes != 3 || c.Slots != 2 || c.BootLimitMin != 5 || c.BootLimitMax != 300 {
		t.Errorf("shape %+v gives %d nodes, %d slots, limit %v..%v", s, c.Nodes, c.Slots, c.BootLimitMin, c.BootLimitMax)
	}
	for _, bad := range [][2][]byte{{[]byte("{"), slotmap}, {status, []byte(`{"num_slots":1}`)}} {
		if _, err := ParseShape(bad[0], bad[1]); !errors.Is(err, ErrBadConfig) {
			t.Errorf("ParseShape(%s, %s) = %v; want ErrBadConfig", bad[0], bad[1], err)
		}
	}
}
