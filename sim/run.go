package sim

import (
	"context"
	"math"
	"math/rand/v2"
	"time"

	"github.com/mcrib/mcrib/clock"
)

// epoch is the simulated wall time a run starts at.
var epoch = time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)

// sampleEvery is the spacing of the points of the charts.
const sampleEvery = 10 * time.Second

// sim is one run in progress.
type sim struct {
	cfg     Config
	ctx     context.Context
	clk     *clock.Fake
	q       queue
	w       *world
	wl      *workload
	policy  membershipPolicy
	limiter *bootLimiter
	t0      time.Duration // the scenario's start
	m       *measure
	dm      *drainMeasure
}

// Run simulates cfg (after WithDefaults) and returns what it measured. The
// same Config always gives the same Result, Wall aside.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	start := time.Now()
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6d63726962))
	s := &sim{cfg: cfg, ctx: ctx, clk: clock.NewFake(epoch), t0: cfg.Warmup}
	s.w = newWorld(s.clk, rng, cfg.Nodes, cfg.ItemsPerNode, cfg.Fleet)
	s.wl = newWorkload(cfg, s.w, rand.New(rand.NewPCG(cfg.Seed, 0x776f726b)))
	if cfg.Policy.Immediate {
		s.policy = newImmediatePolicy(s.w, cfg.Slots)
		s.limiter = newBootLimiter(cfg, nil, s.clk.Now())
	} else {
		p, err := newMCribPolicy(s.w, cfg)
		if err != nil {
			return Result{}, err
		}
		s.policy = p
		p.wake = func(d time.Duration) bool {
			if d >= cfg.ProbeInterval {
				return false // the probe interval's pass comes first
			}
			s.q.at(s.clk.Now().Sub(epoch)+d, func() { p.pass(ctx) })
			return true
		}
		s.limiter = newBootLimiter(cfg, p.loop, s.clk.Now())
		if warmFor(cfg) > 0 {
			s.wl.warm = p.warming() // the clients follow the warm sources
		}
	}
	// The pool as it has been serving: every node listed, the map filled,
	// each slot holder holding the most popular keys of its slot.
	s.consul()
	s.policy.onProbeInterval(ctx)
	s.wl.prefill(s.policy.route())

	length := scenarioLength(cfg)
	if cfg.Duration > 0 {
		length = cfg.Duration
	}
	end := s.t0 + length
	s.m = newMeasure(cfg, s.t0, end)
	s.dm = newDrainMeasure(s.t0)
	// The second that ends at an event's time is measured before the
	// event: it happened before.
	s.q.every(time.Second, time.Second, 0, s.second)
	s.q.every(cfg.ProbeInterval, cfg.ProbeInterval, 1, func() { s.policy.onProbeInterval(ctx) })
	s.q.every(cfg.StatsInterval, cfg.StatsInterval, 1, func() { s.limiter.observe(ctx, s.clk.Now()) })
	s.schedule(rand.New(rand.NewPCG(cfg.Seed, 0x7363656e)))
	for s.q.Len() > 0 {
		e := s.q.next()
		if e.at > end || s.actionOver(e.at) {
			break
		}
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		s.clk.Set(epoch.Add(e.at))
		e.run()
	}
	if err := s.drainErr(); err != nil {
		return Result{}, err
	}
	if err := s.growErr(); err != nil {
		return Result{}, err
	}
	if err := s.actionErr(); err != nil {
		return Result{}, err
	}
	r := s.m.result(cfg)
	s.fillDrain(&r, s.dm)
	s.fillGrow(&r)
	s.fillAction(&r)
	r.Keys = cfg.Keys
	r.Flushes = s.policy.flushes() - s.m.flushesAt0
	r.Replacements = s.policy.replacements() - s.m.replAt0
	r.BootsRefused = s.limiter.refused - s.m.refusedAt0
	if (cfg.Scenario == ZoneDrain || cfg.Scenario == Grow || cfg.Scenario == whatIfScenario) && !cfg.noDrain {
		// The same run without the drain (the growth, the action): the
		// misses it added.
		twin := cfg
		twin.noDrain = true
		if cfg.Scenario == whatIfScenario {
			twin.Duration = r.Simulated // a what-if stops once its action is over
		}
		t, err := Run(ctx, twin)
		if err != nil {
			return Result{}, err
		}
		r.ExtraDBMisses = r.DBMisses - t.DBMisses
	}
	r.Wall = time.Since(start)
	return r, nil
}

// consul hands the policy the Consul answer of now.
func (s *sim) consul() { s.policy.onConsul(s.ctx, s.w.membership()) }

// second runs one second of the workload and records it.
func (s *sim) second() {
	now := s.clk.Now()
	at := now.Sub(epoch)
	if at == s.t0 {
		s.m.flushesAt0, s.m.replAt0, s.m.refusedAt0 = s.policy.flushes(), s.policy.replacements(), s.limiter.refused
	}
	s.wl.churn()
	// The second that ends now: its boots were asked for over it.
	boots := s.limiter.admit(now.Add(-time.Second), s.wl.pending)
	if p, ok := s.policy.(*mcribPolicy); ok && s.wl.warm != nil {
		s.wl.warm = p.warming() // a resize gives it an entry per new slot
		p.copySecond(p.served, s.cfg)
	}
	s.wl.second(s.policy.route(), boots)
	s.m.second(at, s.wl, s.limiter.limit(now))
	s.dm.second(at, s.wl)
	s.actionSecond(at)
}

// Result is what one run measured. Times are from the scenario's start.
type Result struct {
	Scenario string `json:"scenario"`
	Policy   string `json:"policy"`
	Nodes    int    `json:"nodes"`
	Slots    int    `json:"slots"`
	// Keys is the number of keys read (its default depends on the
	// scenario).
	Keys int `json:"keys,omitempty"`
	// Baseline is the hit rate before the scenario (the warmup's last
	// half); LowestHitRate the lowest one-minute hit rate after its start.
	Baseline      float64 `json:"baseline_hit_rate"`
	LowestHitRate float64 `json:"lowest_hit_rate"`
	// OverloadSeconds counts the seconds the database was asked for more
	// than its capacity.
	OverloadSeconds int `json:"db_overload_seconds"`
	Flushes         int `json:"flushes"`
	Replacements    int `json:"replacements"`
	BootsRefused    int `json:"boots_refused"`
	// Recovery is how long after the start the fleet was back: every
	// client booted and the one-minute hit rate at or above 95% of the
	// baseline, for good. Recovered is false when that never came.
	Recovery  time.Duration `json:"recovery"`
	Recovered bool          `json:"recovered"`
	// LowestSecondHitRate is the lowest hit rate of one second after the
	// start, SecondsBelow90 the seconds whose hit rate was below 90%, and
	// DBMisses the queries the database was asked after the start.
	LowestSecondHitRate float64 `json:"lowest_second_hit_rate"`
	SecondsBelow90      int     `json:"seconds_below_90"`
	DBMisses            int64   `json:"db_misses"`
	// Zone drains (zone-drain): ExtraDBMisses are DBMisses beyond those of
	// the same run without the drain; DrainTime is from the drain request
	// until the zone held its target (GET /v1/drain: drained), Drained
	// false when that never came.
	ExtraDBMisses int64         `json:"extra_db_misses,omitempty"`
	DrainTime     time.Duration `json:"drain_time,omitempty"`
	Drained       bool          `json:"drained,omitempty"`
	// Growth (grow): GrowTime is from the resize request until every twin
	// was split and no slot warmed, Grown false when that never came (the
	// naive resize is done at once); GrowBound is its target, the steps'
	// time plus one warm-for.
	GrowTime  time.Duration `json:"grow_time,omitempty"`
	Grown     bool          `json:"grown,omitempty"`
	GrowBound time.Duration `json:"grow_bound,omitempty"`
	// A what-if (whatif.go): ActionTime is from the request until the
	// action was over (ActionOver; else the time simulated, and
	// ActionBlocked says why), LowestWindowHitRate the lowest hit rate of
	// five seconds meanwhile, LowestBootLimit the lowest boot limit.
	ActionTime          time.Duration `json:"action_time,omitempty"`
	ActionOver          bool          `json:"action_over,omitempty"`
	ActionBlocked       string        `json:"action_blocked,omitempty"`
	LowestWindowHitRate float64       `json:"lowest_window_hit_rate,omitempty"`
	LowestBootLimit     float64       `json:"lowest_boot_limit,omitempty"`
	Simulated           time.Duration `json:"simulated"`
	Wall                time.Duration `json:"-"`
	Series              []Point       `json:"series"`
}

// Point is one point of the charts.
type Point struct {
	T         float64 `json:"t"` // seconds from the scenario's start
	HitRate   float64 `json:"hit_rate"`
	DBLoad    float64 `json:"db_load"`    // queries asked a second, averaged
	BootLimit float64 `json:"boot_limit"` // NaN: no limit
}

// SpeedUp returns simulated time per wall-clock time.
func (r Result) SpeedUp() float64 {
	if r.Wall <= 0 {
		return math.Inf(1)
	}
	return r.Simulated.Seconds() / r.Wall.Seconds()
}
