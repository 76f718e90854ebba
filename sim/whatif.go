package sim

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/mcribapi"
)

// The what-if (docs/simulation.md, "What-if"): before a drain or a
// resize, the simulator runs it on the pool as it is now (its nodes,
// zones and slot map, its hit rate, gets per second and flags, as
// ParseShape reads them from the status and slot-map documents) through
// mcrib's own loop, and again without it, and answers what it will cost:
// how long until it is over, the lowest hit rate of five seconds while it
// runs, the database misses it adds and the lowest boot limit.

// The actions a what-if simulates.
const (
	ActionDrain  = "drain"
	ActionResize = "resize"
)

// whatIfScenario is the scenario of a what-if's run; it is no scenario
// of mcrib sim's.
const whatIfScenario = "what-if"

const (
	// whatIfWindow is the span of the hit rate a what-if's lowest is of.
	whatIfWindow = 5 * time.Second
	// whatIfTail is simulated after the action is over: the keys nobody
	// read while their slot warmed miss then.
	whatIfTail = time.Minute
	// whatIfWarmup is simulated before the action (its last half is the
	// baseline); the caches start settled.
	whatIfWarmup = 4 * time.Minute
	// maxSampledReads bounds the reads a second simulated one by one,
	// each standing for the rest.
	maxSampledReads = 20000
)

// Fleet is a live pool as the simulator takes it: its nodes and its slot
// map (without warmings or announces: the moves under way are taken as
// over).
type Fleet struct {
	Nodes []FleetNode
	Map   *cachenodes.SlotMap
}

// FleetNode is one node of a Fleet: Down when it does not answer, Absent
// when Consul does not list it as passing.
type FleetNode struct {
	ID, Addr, AZ string
	Down, Absent bool
}

// Action is what a what-if simulates: a drain of Zone by Drain
// (PUT /v1/drain/{zone}), or a resize by Resize (PUT /v1/resize).
type Action struct {
	Kind   string
	Zone   string
	Drain  mcribapi.Drain
	Resize mcribapi.Resize
}

// Prediction is what a what-if answers.
type Prediction struct {
	// Duration is from the request until the action is over: the drain
	// at its target (every twin split, for a resize) and no slot's
	// warming object left in the map. Over is false when that did not
	// come within the time the action could take at most; Blocked then
	// says why, in one sentence.
	Duration time.Duration
	Over     bool
	Blocked  string
	// LowestHitRate is the pool's hit rate now less the simulated fall:
	// the lowest hit rate of five seconds from the request until it is
	// over, below the simulated baseline.
	LowestHitRate float64
	// ExtraMisses are the database queries the action adds, from the
	// request until a minute after it is over, in the pool's gets.
	ExtraMisses int64
	// LowestBootLimit is the lowest boot limit enforced meanwhile.
	LowestBootLimit float64
}

// Predict simulates a on the pool shape describes, which must carry its
// Fleet. It takes a few seconds of wall time.
func Predict(ctx context.Context, shape Shape, a Action) (Prediction, error) {
	if shape.Fleet == nil || shape.Fleet.Map == nil {
		return Prediction{}, fmt.Errorf("%w: the what-if needs the pool's nodes and slot map", ErrBadConfig)
	}
	cfg := shape.Apply(Config{Warmup: whatIfWarmup})
	cfg.Scenario, cfg.Fleet, cfg.action = whatIfScenario, shape.Fleet, &a
	r, err := Run(ctx, cfg)
	if err != nil {
		return Prediction{}, err
	}
	p := Prediction{Duration: r.ActionTime, Over: r.ActionOver, Blocked: r.ActionBlocked,
		ExtraMisses: max(0, r.ExtraDBMisses), LowestBootLimit: r.LowestBootLimit}
	p.LowestHitRate = r.LowestWindowHitRate
	if shape.HitRate > 0 {
		p.LowestHitRate = shape.HitRate - max(0, r.Baseline-r.LowestWindowHitRate)
	}
	p.LowestHitRate = min(1, max(0, p.LowestHitRate))
	return p, nil
}

// actionRun is a what-if's action in progress: when it was asked, when
// it was over (zero: not yet), and what its run measured meanwhile.
type actionRun struct {
	asked, over time.Time
	err         error
	// the current five-second window's hits and reads, and the lowest
	// hit rate of a window so far (+Inf: none)
	hits, reads uint64
	lowest      float64
	lowestLimit float64
	// stopped is the simulated time after the scenario's start when the
	// run stopped.
	stopped time.Duration
}

// longest returns how long a's run is simulated at most: its steps'
// time, the last move's announce, one whole --warm-for and the removal of
// its warming object, and a minute after.
func (a *Action) longest(cfg Config) time.Duration {
	steps, every := 0, time.Duration(0)
	switch a.Kind {
	case ActionDrain:
		steps, every = (100+a.Drain.StepPercent-1)/max(1, a.Drain.StepPercent), a.Drain.StepInterval
	case ActionResize:
		// The first split comes a step interval after the doubling.
		steps, every = (100+a.Resize.StepPercent-1)/max(1, a.Resize.StepPercent)+1, a.Resize.StepInterval
	}
	return time.Duration(steps)*every + 2*cachenodes.AnnounceLead + warmFor(cfg) + whatIfTail
}

// startAction asks mcrib's loop for the action, as its endpoint does, and
// runs the pass the request kicks. The twin run (noDrain) asks nothing
// but measures the same.
func (s *sim) startAction() {
	p, ok := s.policy.(*mcribPolicy)
	if !ok {
		return
	}
	a := s.cfg.action
	p.act = actionRun{asked: s.clk.Now(), lowest: math.Inf(1), lowestLimit: math.Inf(1)}
	if s.cfg.noDrain {
		return
	}
	var err error
	switch a.Kind {
	case ActionDrain:
		_, err = p.loop.Drain(s.ctx, a.Zone, a.Drain, "what-if")
	case ActionResize:
		_, err = p.loop.StartResize(s.ctx, a.Resize, "what-if")
	default:
		err = fmt.Errorf("%w: unknown action %q", ErrBadConfig, a.Kind)
	}
	if err != nil {
		p.act.err = fmt.Errorf("the simulated %s was refused: %w", a.Kind, err)
		return
	}
	p.pass(s.ctx)
}

// checkAction records when the action is first over in m.
func (p *mcribPolicy) checkAction(a *Action, m *cachenodes.SlotMap, now time.Time) {
	r := &p.act
	if a == nil || r.asked.IsZero() || !r.over.IsZero() || m == nil || m.AnyWarming() || m.AnyIncoming() {
		return
	}
	switch a.Kind {
	case ActionDrain:
		if e := p.loop.Drains().Zones[a.Zone]; e != nil && e.State == mcribapi.DrainDrained {
			r.over = now
		}
	case ActionResize:
		if e := p.loop.ResizeDoc().Resize; m.NumTwins() == 0 && m.NumSlots() == a.Resize.NumSlots && (e == nil || e.State == mcribapi.ResizeDone) {
			r.over = now
		}
	}
}

// blocked says, in one sentence, what stopped the action from being
// over; "" when it is.
func (p *mcribPolicy) blocked(a *Action, ran time.Duration) string {
	if a == nil || !p.act.over.IsZero() {
		return ""
	}
	why := ""
	switch a.Kind {
	case ActionDrain:
		if e := p.loop.Drains().Zones[a.Zone]; e != nil {
			why = e.Blocked
		}
	case ActionResize:
		if e := p.loop.ResizeDoc().Resize; e != nil {
			why = e.Blocked
		}
	}
	if why == "" {
		return fmt.Sprintf("the simulated %s was not over after %s", a.Kind, ran)
	}
	return fmt.Sprintf("the simulated %s was not over after %s: %s", a.Kind, ran, why)
}

// actionSecond records the second that ends at at for the what-if: the
// hit rate of each five-second window from the request until the action
// is over, and the boot limit.
func (s *sim) actionSecond(at time.Duration) {
	p, ok := s.policy.(*mcribPolicy)
	if !ok || s.cfg.action == nil || p.act.asked.IsZero() || at <= s.t0 {
		return
	}
	r := &p.act
	now := s.clk.Now()
	if !r.over.IsZero() && now.Sub(r.over) >= whatIfWindow {
		return
	}
	r.lowestLimit = min(r.lowestLimit, s.limiter.limit(now))
	r.hits += s.wl.hits
	r.reads += s.wl.reads
	if (at-s.t0)%whatIfWindow == 0 && r.reads > 0 {
		r.lowest = min(r.lowest, float64(r.hits)/float64(r.reads))
		r.hits, r.reads = 0, 0
	}
}

// actionOver reports whether the what-if's run is done at at (from
// the epoch): a minute after its action was over.
func (s *sim) actionOver(at time.Duration) bool {
	p, ok := s.policy.(*mcribPolicy)
	if !ok || s.cfg.action == nil {
		return false
	}
	if over := p.act.over; !over.IsZero() && at > over.Sub(epoch)+whatIfTail {
		p.act.stopped = over.Sub(epoch) + whatIfTail - s.t0
		return true
	}
	return false
}

// actionErr returns the error of the what-if's request, if any.
func (s *sim) actionErr() error {
	if p, ok := s.policy.(*mcribPolicy); ok {
		return p.act.err
	}
	return nil
}

// fillAction puts the what-if's figures into r.
func (s *sim) fillAction(r *Result) {
	p, ok := s.policy.(*mcribPolicy)
	if !ok || s.cfg.action == nil {
		return
	}
	a := p.act
	if a.stopped > 0 {
		r.Simulated = a.stopped
	} else {
		r.Simulated = r.Simulated - s.t0
	}
	r.ActionOver = !a.over.IsZero()
	if r.ActionOver {
		r.ActionTime = a.over.Sub(a.asked)
	} else {
		r.ActionTime = r.Simulated
	}
	r.ActionBlocked = p.blocked(s.cfg.action, r.Simulated)
	r.LowestWindowHitRate, r.LowestBootLimit = a.lowest, a.lowestLimit
	if math.IsInf(a.lowest, 1) {
		r.LowestWindowHitRate = r.Baseline
	}
	if math.IsInf(a.lowestLimit, 1) || math.IsNaN(a.lowestLimit) {
		r.LowestBootLimit = 0
	}
}
