package sim

import (
	"fmt"
	"io"
	"math/bits"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/mcribapi"
)

// The grow scenario (the growth benchmark of make bench-grow, at scale): at
// peak an operator doubles the pool's slots, N to 2N, through mcrib's own
// Loop.StartResize (`mcrib resize --slots 2N`), with the API's default pace,
// 10% of the twins every 30 s: slot s + N begins as a twin of slot s and
// each split moves it to a spare, warm under mcrib (--warm-for, 2m unless
// set) and cold under mcrib-cold (--warm-for 0s). The policy naive is the
// baseline of the comparison: a resize without twins, the clients switched
// at once to a plain map of 2N slots whose slots s + N are spares, so the
// keys of those slots move cold all at once.
const (
	growStepPercent  = 10
	growStepInterval = 30 * time.Second
	// growExtraShare is the target of warm growth's extra database
	// misses: at most a tenth of the naive resize's; growDropPoints that
	// of its lowest hit rate of one second: within 2 points of the
	// baseline.
	growExtraShare = 0.1
	growDropPoints = 2.0
	// growTail is simulated after the last warming could end.
	growTail = time.Minute
)

// growSteps returns how many split steps a resize from n slots takes.
func growSteps(n int) int {
	size := mcribapi.ResizeEntry{From: n, StepPercent: growStepPercent}.StepSize()
	return (n + size - 1) / size
}

// growBound is the target of growth's time to done from n slots: the
// steps' time (a step_interval a step), plus the announce of the last
// split (cachenodes.AnnounceLead: a split serves 12 s after its step
// starts), plus one warm-for.
func growBound(n int, warmFor time.Duration) time.Duration {
	return time.Duration(growSteps(n))*growStepInterval + cachenodes.AnnounceLead + warmFor
}

// growSlots is the default slot count of grow: the largest power of two
// not above half the nodes, so that a spare waits for every twin.
func growSlots(nodes int) int { return 1 << (bits.Len(uint(max(1, nodes/2))) - 1) }

// growth is the resize the scenario asked for: when, and when the pool was
// done (every twin split, no slot warming; zero: not yet).
type growth struct {
	asked, done time.Time
	from        int
	err         error
	// naive is set once the clients route by the naive map: the policy's
	// routes no longer follow the loop.
	naive bool
}

// check records when the growth is first done.
func (p *mcribPolicy) checkGrowth(m *cachenodes.SlotMap, now time.Time) {
	g := &p.grow
	if g.asked.IsZero() || !g.done.IsZero() || g.naive || m == nil {
		return
	}
	if m.NumSlots() == 2*g.from && m.NumTwins() == 0 && !m.WarmsAt(now) {
		if e := p.loop.ResizeDoc().Resize; e == nil || e.State == mcribapi.ResizeDone {
			g.done = now
		}
	}
}

// startGrow asks mcrib's loop to double the slots, as PUT /v1/resize
// does, and runs the pass the request kicks; under naive it switches the
// routes to the naive map instead. The twin run (noDrain) asks nothing.
func (s *sim) startGrow() {
	p, ok := s.policy.(*mcribPolicy)
	if !ok || s.cfg.noDrain {
		return
	}
	m := p.loop.SlotMap()
	p.grow = growth{asked: s.clk.Now(), from: m.NumSlots()}
	if s.cfg.Policy.Naive {
		nm, err := NaiveMap(m, s.clk.Now())
		if err != nil {
			p.grow.err = err
			return
		}
		p.grow.naive, p.grow.done = true, s.clk.Now()
		p.follow(nm)
		return
	}
	req := mcribapi.Resize{NumSlots: 2 * m.NumSlots(), Reason: "grow: the pool is short of memory",
		StepPercent: growStepPercent, StepInterval: growStepInterval}
	if _, err := p.loop.StartResize(s.ctx, req, "sim"); err != nil {
		p.grow.err = fmt.Errorf("doubling %d slots: %w", m.NumSlots(), err)
		return
	}
	p.pass(s.ctx)
}

// NaiveMap is the naive resize of m (the baseline of the growth
// benchmarks, here and in make bench-grow): a plain map of twice its slots whose
// slot s + N is m's spare s, without twins or warming.
func NaiveMap(m *cachenodes.SlotMap, now time.Time) (*cachenodes.SlotMap, error) {
	n := m.NumSlots()
	if m.NumSpares() < n {
		return nil, fmt.Errorf("the naive resize of %d slots needs %d spares, the pool has %d", n, n, m.NumSpares())
	}
	spec := m.Spec()
	spares := m.Spares()
	spec.Slots = append(spec.Slots, spares[:n]...)
	spec.Spares = spares[n:]
	spec.Warming, spec.Twins, spec.ResizedFrom = nil, nil, 0
	spec.Generation++
	spec.UpdatedAt = now
	return cachenodes.NewSlotMap(spec)
}

// growErr returns the error of the scenario's resize request, if any.
func (s *sim) growErr() error {
	if p, ok := s.policy.(*mcribPolicy); ok {
		return p.grow.err
	}
	return nil
}

// fillGrow puts the time to done into r.
func (s *sim) fillGrow(r *Result) {
	p, ok := s.policy.(*mcribPolicy)
	if !ok || s.cfg.Scenario != Grow {
		return
	}
	r.GrowBound = growBound(s.cfg.Slots, warmFor(s.cfg))
	if !p.grow.done.IsZero() {
		r.Grown, r.GrowTime = true, p.grow.done.Sub(p.grow.asked)
	}
}

// growChecks evaluates the growth's targets (docs/performance.md) on the
// grow runs in rs: warm growth (mcrib) done within the steps' time, the
// last split's announce plus
// one warm-for, its lowest hit rate of one second within 2 points of the
// baseline, and its extra database misses at most a tenth of the naive
// resize's.
func growChecks(rs []Result) []Check {
	warm, ok := find(rs, Grow, PolicyMCrib)
	if !ok {
		return nil
	}
	bound := warm.GrowBound
	drop := 100 * (warm.Baseline - warm.LowestSecondHitRate)
	out := []Check{{
		Target: fmt.Sprintf("grow under mcrib: %d → %d slots done within the steps' time plus the last split's announce and one warm-for (%s)", warm.Slots, 2*warm.Slots, bound),
		OK:     warm.Grown && warm.GrowTime <= bound,
		Detail: "done in " + fmtGrowTime(warm),
	}, {
		Target: fmt.Sprintf("grow under mcrib (warm splits): lowest hit rate (1 s) within %g points of the baseline", growDropPoints),
		OK:     drop <= growDropPoints,
		Detail: fmt.Sprintf("baseline %.2f%%, lowest %.2f%%, %.2f points below", 100*warm.Baseline, 100*warm.LowestSecondHitRate, drop),
	}}
	if naive, ok := find(rs, Grow, PolicyNaive); ok {
		out = append(out, Check{
			Target: "grow: warm growth's extra database misses at most a tenth of the naive resize's",
			OK:     naive.ExtraDBMisses > 0 && float64(warm.ExtraDBMisses) <= growExtraShare*float64(naive.ExtraDBMisses),
			Detail: fmt.Sprintf("warm %d, naive %d (%s)", warm.ExtraDBMisses, naive.ExtraDBMisses, share(warm.ExtraDBMisses, naive.ExtraDBMisses)),
		})
	}
	return out
}

// share is a / b as "0.012×", or "—" without a baseline.
func share(a, b int64) string {
	if b <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.3f×", float64(a)/float64(b))
}

func fmtGrowTime(r Result) string {
	switch {
	case r.Policy == PolicyNaive:
		return "at once"
	case !r.Grown:
		return "not by the end"
	}
	return r.GrowTime.String()
}

// writeGrowTable writes the grow table in Markdown, each run's extra
// misses also as a ratio to the naive resize's.
func writeGrowTable(w io.Writer, rs []Result) {
	naive, hasNaive := find(rs, Grow, PolicyNaive)
	fmt.Fprintln(w, "| policy | slots | baseline hit rate | time to done | lowest hit rate (1 s) | lowest hit rate (1 min) | seconds below 90% | DB misses | extra DB misses | vs naive | DB overload (s) | speed-up |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rs {
		vs := "—"
		if hasNaive {
			vs = share(r.ExtraDBMisses, naive.ExtraDBMisses)
		}
		fmt.Fprintf(w, "| %s | %d → %d | %.2f%% | %s | %.2f%% | %.2f%% | %d | %d | %d | %s | %d | %.0f× |\n",
			r.Policy, r.Slots, 2*r.Slots, 100*r.Baseline, fmtGrowTime(r), 100*r.LowestSecondHitRate, 100*r.LowestHitRate,
			r.SecondsBelow90, r.DBMisses, r.ExtraDBMisses, vs, r.OverloadSeconds, r.SpeedUp())
	}
}

// growText describes the scenario in the report.
const growText = "At peak an operator doubles the slots (`mcrib resize --slots 2N`, 10% of the twins every 30 s, through mcrib's own Loop.StartResize): slot s + N begins as a twin of slot s, so no key moves, and each split step moves twins to spares; **mcrib** splits warm (--warm-for, 2m unless set: the clients read a warming slot's new holder, then on a miss slot s's holder, add what it had to the new one, and send their sets to both, as mcrib's Go client does), **mcrib-cold** splits cold (--warm-for 0s), and **naive** is the baseline: a resize without twins, the clients switched at once to a plain map of 2N slots whose slots s + N are spares, so the keys of those slots move cold all at once. Unless --slots says otherwise the pool has half its nodes in slots (a spare for every twin), and unless --keys says otherwise as many keys as the slot holders hold items, so the figures count what the moves cost rather than what the added memory gains. The run after the request is the same for every policy: the steps' time plus the warm run's warm-for plus a minute, in which the keys nobody read while their twin warmed miss. Time to done is from the request until every twin is split and no slot warms; the hit rates are of one second and of the trailing minute; DB misses are the queries the database was asked after the request, extra DB misses those beyond the same run without the growth (same seed), and vs naive their ratio to the naive resize's; the speed-up counts both runs."
