package sim

import (
	"context"
	"math"
	"time"

	"github.com/mcrib/mcrib/controlloop"
	"github.com/mcrib/mcrib/ratelimit"
)

// bootLimiter is the boot limit of a policy: mcrib serve's own pipeline,
// a ratelimit.Limiter. For the adaptive policies its controller decides on
// the hit counters of the loop's probes (Loop.HitCounters) every stats
// interval, as mcrib serve's leader does; a static limit is an operator's
// manual limit, which nothing moves and no slow start applies to. A nil lim
// admits every boot (the 2022 behaviour).
type bootLimiter struct {
	lim *ratelimit.Limiter
	// loop is where an adaptive limiter reads its hit counters; nil for a
	// fixed limit.
	loop *controlloop.Loop
	// refused counts the refused admissions.
	refused int
}

func newBootLimiter(cfg Config, loop *controlloop.Loop, now time.Time) *bootLimiter {
	cc := ratelimit.ControllerConfig{
		Floor: cfg.BootLimitMin, Ceiling: cfg.BootLimitMax,
		Low: cfg.HitRateLow, Target: cfg.HitRateTarget, Interval: cfg.StatsInterval,
	}
	switch {
	case cfg.Policy.Immediate:
		return &bootLimiter{}
	case cfg.Policy.Static > 0:
		static := ratelimit.Document{Mode: ratelimit.ModeManual, Limit: cfg.Policy.Static, Burst: ratelimit.DefaultBurst(cfg.Policy.Static)}
		return &bootLimiter{lim: ratelimit.NewLimiter(cc, static)}
	}
	lim := ratelimit.NewLimiter(cc, ratelimit.InitialDocument(cc, now))
	lim.Lead() // the sim's one process leads the pool
	return &bootLimiter{lim: lim, loop: loop}
}

// observe gives the limiter one stats reading; it does nothing for a fixed
// limit.
func (b *bootLimiter) observe(ctx context.Context, now time.Time) {
	if b.loop == nil {
		return
	}
	nodes, slots := b.loop.HitCounters(ctx)
	b.lim.Observe(now, nodes, slots)
}

// admit asks for the boots of waiting clients, each once in the second
// that starts at now, spread over it, and returns how many were admitted.
func (b *bootLimiter) admit(now time.Time, waiting int) int {
	if b.lim == nil {
		return waiting
	}
	n := 0
	for i := range waiting {
		t := now.Add(time.Duration(i) * time.Second / time.Duration(waiting))
		if ok, _ := b.lim.Admit(t); ok {
			n++
		} else {
			b.refused++
		}
	}
	return n
}

// limit returns the limit enforced at now (the slow start's allowance
// during a boot surge), NaN without one.
func (b *bootLimiter) limit(now time.Time) float64 {
	if b.lim == nil {
		return math.NaN()
	}
	return b.lim.Limit(now)
}
