package sim

import (
	"context"
	"math"
	"time"

	"github.com/mcrib/mcrib/controlloop"
	"github.com/mcrib/mcrib/hitrate"
	"github.com/mcrib/mcrib/ratelimit"
)

// bootLimiter is the boot limit of a policy, enforced by ratelimit's own
// Admitter and, for the adaptive policies, moved by ratelimit's Controller
// on the hit rate a hitrate.Meter measures from the loop's probes
// (Loop.HitCounters), as mcrib serve does. A nil adm admits every boot
// (the 2022 behaviour).
type bootLimiter struct {
	adm  *ratelimit.Admitter
	ctrl *ratelimit.Controller
	// slow is the boot-surge slow start of the adaptive policies, in
	// front of adm as in mcrib serve's POST /v1/boot; nil for a fixed limit.
	slow  *ratelimit.SlowStart
	meter hitrate.Meter
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
	slow := ratelimit.NewSlowStart(cc)
	slow.SetLimit(doc.Limit, false)
	return &bootLimiter{
		adm:  ratelimit.NewAdmitter(doc.Limit, doc.Burst),
		ctrl: ratelimit.NewController(cc, doc),
		slow: slow,
		// The boot limiter's input, as mcrib serve's: planned moves left out.
		meter: hitrate.Meter{LeavesOutPlanned: true},
		loop:  loop,
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
	raw, have := b.meter.Interval()
	level, judge := b.slow.Reading(now, ok && have) // as Service.tick does
	if !ok {
		return
	}
	var d ratelimit.Decision
	if judge {
		d, _ = b.ctrl.ObserveSurge(now, h, raw, level)
	} else {
		d = b.ctrl.Observe(now, h)
	}
	if d.Changed {
		b.adm.Set(d.Limit, d.Burst, now)
		b.slow.SetLimit(d.Limit, false)
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
		t := now.Add(time.Duration(i) * time.Second / time.Duration(waiting))
		if b.slow != nil {
			if ok, _ := b.slow.Allow(t); !ok {
				b.refused++
				continue
			}
		}
		if b.adm.Allow(t) {
			n++
			if b.slow != nil {
				b.slow.Admitted()
			}
		} else {
			b.refused++
		}
	}
	return n
}

// limit returns the limit enforced at now (the slow start's allowance
// during a boot surge), NaN without one.
func (b *bootLimiter) limit(now time.Time) float64 {
	if b.adm == nil {
		return math.NaN()
	}
	l, _ := b.adm.Limit()
	if b.slow != nil {
		if a, on := b.slow.State(now); on {
			l = min(l, a)
		}
	}
	return l
}
