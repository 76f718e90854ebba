package sim

import (
	"fmt"
	"math"
	"time"

	"github.com/mcrib/mcrib/controlloop"
	"github.com/mcrib/mcrib/mcribapi"
)

// The zone-drain scenario (the zone-drain benchmark of make bench-zones, at scale): at peak, an
// operator drains zone b completely, 10% of its slots every 3 s, through
// mcrib's own Loop.Drain; the moves are warm under mcrib (--warm-for 2m)
// and cold under mcrib-cold (--warm-for 0s).
const (
	drainZone         = "b"
	drainPercent      = 100
	drainStepPercent  = 10
	drainStepInterval = 3 * time.Second
	// drainBound is the target: the drain finishes within its steps'
	// time (100 ÷ 10 steps) plus one interval.
	drainBound = (100/drainStepPercent)*drainStepInterval + drainStepInterval
	// lowHitRate is the hit rate whose seconds below are counted.
	lowHitRate = 0.90
	// warmDropPoints and warmExtraShare are the targets of warm moves:
	// the lowest hit rate within 5 points of the baseline, the extra
	// database misses at most a quarter of the cold drain's.
	warmDropPoints = 5.0
	warmExtraShare = 0.25
)

// Applies reports whether scenario can run under p: zone-drain and grow
// need mcrib's loop (the 2022 behaviour had no drain nor resize to
// compare), and naive is a way to grow only.
func Applies(scenario string, p Policy) bool {
	switch {
	case p.Naive:
		return scenario == Grow
	case scenario == ZoneDrain, scenario == Grow:
		return !p.Immediate
	}
	return true
}

// zoneDrain is a drain the scenario asked for: the zone, when it was
// asked and when GET /v1/drain first said drained (zero: not yet).
type zoneDrain struct {
	zone           string
	asked, drained time.Time
	err            error
}

// check records when the zone is first drained (at its target).
func (d *zoneDrain) check(loop *controlloop.Loop, now time.Time) {
	if d.zone == "" || !d.drained.IsZero() {
		return
	}
	if e := loop.Drains().Zones[d.zone]; e != nil && e.State == mcribapi.DrainDrained {
		d.drained = now
	}
}

// startDrain asks mcrib's loop to drain drainZone, as PUT /v1/drain/b
// does, and runs the pass the request kicks. The twin run (noDrain) asks
// nothing.
func (s *sim) startDrain() {
	p, ok := s.policy.(*mcribPolicy)
	if !ok || s.cfg.noDrain {
		return
	}
	p.drain = zoneDrain{zone: drainZone, asked: s.clk.Now()}
	req := mcribapi.Drain{
		Reason: "zone-drain: zone b is bad", Percent: drainPercent,
		StepPercent: drainStepPercent, StepInterval: drainStepInterval,
	}
	if _, err := p.loop.Drain(s.ctx, drainZone, req, "sim"); err != nil {
		p.drain.err = fmt.Errorf("draining zone %s: %w", drainZone, err)
		return
	}
	p.pass(s.ctx) // Drain kicks a pass, which Run would run at once
}

// drainErr returns the error of the scenario's drain request, if any.
func (s *sim) drainErr() error {
	if p, ok := s.policy.(*mcribPolicy); ok {
		return p.drain.err
	}
	return nil
}

// drainMeasure collects, after the scenario's start, the figures the
// zone-drain table adds: the lowest hit rate of one second, the seconds
// below 90%, and the queries the database was asked.
type drainMeasure struct {
	t0       time.Duration
	lowest   float64
	below    int
	dbMisses float64
}

func newDrainMeasure(t0 time.Duration) *drainMeasure {
	return &drainMeasure{t0: t0, lowest: math.Inf(1)}
}

// second records the second that ends at at.
func (m *drainMeasure) second(at time.Duration, wl *workload) {
	if at <= m.t0 {
		return
	}
	hr := wl.hitRate()
	if math.IsNaN(hr) {
		hr = 0 // nobody reads: counts as 0, as for the one-minute rate
	}
	m.lowest = min(m.lowest, hr)
	if hr < lowHitRate {
		m.below++
	}
	m.dbMisses += wl.dbDemand
}

// fill puts the figures of m and of the drain into r.
func (s *sim) fillDrain(r *Result, m *drainMeasure) {
	r.LowestSecondHitRate, r.SecondsBelow90, r.DBMisses = m.lowest, m.below, int64(math.Round(m.dbMisses))
	if math.IsInf(r.LowestSecondHitRate, 1) {
		r.LowestSecondHitRate = r.Baseline
	}
	if p, ok := s.policy.(*mcribPolicy); ok && !p.drain.drained.IsZero() {
		r.Drained, r.DrainTime = true, p.drain.drained.Sub(p.drain.asked)
	}
}

// zoneDrainChecks evaluates the zone drain's targets (docs/performance.md) on the zone-drain runs in
// rs: each drain done within its steps' time plus one interval; under
// mcrib (warm moves) the lowest hit rate within 5 points of the baseline
// and the extra database misses at most a quarter of mcrib-cold's.
func zoneDrainChecks(rs []Result) []Check {
	var out []Check
	for _, pol := range []string{PolicyMCrib, PolicyMCribCold} {
		r, ok := find(rs, ZoneDrain, pol)
		if !ok {
			continue
		}
		out = append(out, Check{
			Target: fmt.Sprintf("zone-drain under %s: zone %s drained within 10 steps' time plus one interval (%s)", pol, drainZone, drainBound),
			OK:     r.Drained && r.DrainTime <= drainBound,
			Detail: "drained in " + fmtDrainTime(r),
		})
	}
	warm, ok := find(rs, ZoneDrain, PolicyMCrib)
	if !ok {
		return out
	}
	drop := 100 * (warm.Baseline - warm.LowestSecondHitRate)
	out = append(out, Check{
		Target: fmt.Sprintf("zone-drain under mcrib (warm moves): lowest hit rate (1 s) within %g points of the baseline", warmDropPoints),
		OK:     drop <= warmDropPoints,
		Detail: fmt.Sprintf("baseline %.2f%%, lowest %.2f%%, %.2f points below", 100*warm.Baseline, 100*warm.LowestSecondHitRate, drop),
	})
	if cold, ok := find(rs, ZoneDrain, PolicyMCribCold); ok {
		out = append(out, Check{
			Target: "zone-drain: the warm drain's extra database misses at most a quarter of the cold drain's",
			OK:     float64(warm.ExtraDBMisses) <= warmExtraShare*float64(cold.ExtraDBMisses),
			Detail: fmt.Sprintf("warm %d, cold %d (a quarter: %.0f)", warm.ExtraDBMisses, cold.ExtraDBMisses, warmExtraShare*float64(cold.ExtraDBMisses)),
		})
	}
	return out
}

func fmtDrainTime(r Result) string {
	if !r.Drained {
		return "not by the end"
	}
	return r.DrainTime.String()
}

// writeZoneDrainTable writes the zone-drain table in Markdown.
func writeZoneDrainTable(w interface{ Write([]byte) (int, error) }, rs []Result) {
	fmt.Fprintln(w, "| policy | baseline hit rate | time to drained | lowest hit rate (1 s) | lowest hit rate (1 min) | seconds below 90% | DB misses | extra DB misses | DB overload (s) | flushes | speed-up |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rs {
		fmt.Fprintf(w, "| %s | %.2f%% | %s | %.2f%% | %.2f%% | %d | %d | %d | %d | %d | %.0f× |\n",
			r.Policy, 100*r.Baseline, fmtDrainTime(r), 100*r.LowestSecondHitRate, 100*r.LowestHitRate,
			r.SecondsBelow90, r.DBMisses, r.ExtraDBMisses, r.OverloadSeconds, r.Flushes, r.SpeedUp())
	}
}

// zoneDrainText describes the scenario in the report.
const zoneDrainText = "The nodes are spread round-robin over zones a, b and c. At peak an operator drains zone b completely (`mcrib drain b --step 10 --every 3s`, through mcrib's own Loop.Drain): **mcrib** moves the slots warm (--warm-for, 2m unless set: the clients read a warming slot's new holder, then on a miss its old holder, add what it had to the new one, and send their sets to both, as mcrib's Go client does), **mcrib-cold** moves them cold (--warm-for 0s); the 2022 behaviour had no drain and is not run. Time to drained is from the request until GET /v1/drain says `drained`; the hit rates are of one second and of the trailing minute; seconds below 90% count one-second hit rates; DB misses are the queries the database was asked after the request, and extra DB misses those beyond the same run without the drain (same seed); the speed-up counts both runs."
