package sim

import (
	"context"
	"math"
	"time"

	"github.com/mcrib/mcrib/controlloop"
	"github.com/mcrib/mcrib/ratelimit"
)

// bootLimiter is the boot limit of a policy, enforced by ratelimit's own
// Admitter and, for the adaptive policies, moved by ratelimit's Controller
// on the hit rate its HitRateMeter measures from the loop's probes
// (Loop.HitCounters), as mcrib serve does. A nil adm admits every boot
// (the 2022 behaviour).
type bootLimiter struct {
	adm   *ratelimit.Admitter
	ctrl  *ratelimit.Controller
	meter ratelimit.HitRateMeter
	loop  *controlloop.Loop
	// refused counts the refused admissions.
	refused int
}

func newBootLimiter(cfg Config, loop *controlloop.Loop, now time.Time) *bootLimiter {
	switch {
	case cfg.Policy.Immediate:
		return &bootLimiter{}
	case cfg.Policy.Static > 0:
		return &bootLimiter{adm: ratelimit.NewAdmitter(cfg.Policy.Static, ratelimit.DefaultBurst(cfg.Policy.Static))}
	}
	cc := ratelimit.ControllerConfig{
		Floor: cfg.BootLimitMin, Ceiling: cfg.BootLimitMax,
		Low: cfg.HitRateLow, Target: cfg.HitRateTarget, Interval: cfg.StatsInterval,
	}
	doc := ratelimit.InitialDocument(cc, now)
	return &bootLimiter{
		adm:  ratelimit.NewAdmitter(doc.Limit, doc.Burst),
		ctrl: ratelimit.NewController(cc, doc),
		loop: loop,
	}
}

// observe reads the hit counters and lets the controller move the limit;
// it does nothing for a fixed limit.
func (b *bootLimiter) observe(ctx context.Context, now time.Time) {
	if b.ctrl == nil {
		return
	}
	nodes, unreadable := b.loop.HitCounters(ctx)
	h, ok := b.meter.Observe(now, nodes, unreadable)
	if !ok {
		return
	}
	if d := b.ctrl.Observe(now, h); d.Changed {
		b.adm.Set(d.Limit, d.Burst, now)
	}
}

// admit asks for the boots of waiting clients, each once in the second
// that starts at now, spread over it, and returns how many were admitted.
func (b *bootLimiter) admit(now time.Time, waiting int) int {
	if b.adm == nil {
		return waiting
	}
	n := 0
	for i := range waiting {
		if b.adm.Allow(now.Add(time.Duration(i) * time.Second / time.Duration(waiting))) {
			n++
		} else {
			b.refused++
		}
	}
	return n
}

// limit returns the limit enforced now, NaN without one.
func (b *bootLimiter) limit() float64 {
	if b.adm == nil {
		return math.NaN()
	}
	l, _ := b.adm.Limit()
	return l
}
