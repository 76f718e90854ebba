package flapdamp

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"time"
)

// Defaults of DampingConfig. Penalty, Suppress and Reuse are RFC 2439's and
// FRR's. The half-life is much shorter than BGP's 15 min because a cache
// node is judged against a hold of about a minute and probes every couple of
// seconds: with 2 min, three flaps within a minute or so suppress a node and
// a quiet node is usable again a few minutes later.
const (
	DefaultPenalty     = 1000.0
	DefaultHalfLife    = 2 * time.Minute
	DefaultSuppress    = 2000.0
	DefaultReuse       = 750.0
	DefaultBurstWindow = 2 * time.Second // mcrib serve --probe-interval default

	// DefaultMaxSuppressHalfLives is MaxSuppress in half-lives when unset,
	// as in FRR (max-suppress-time defaults to four half-lives).
	DefaultMaxSuppressHalfLives = 4
)

// ErrInvalidConfig is wrapped by DampingConfig.Validate.
var ErrInvalidConfig = errors.New("flapdamp: invalid damping config")

// DampingConfig sets the route-flap damping of RFC 2439 for cache nodes.
// Each counted flap adds Penalty; the penalty halves every HalfLife; a node
// becomes suppressed when its penalty reaches Suppress and stays suppressed
// until the penalty falls below Reuse or MaxSuppress has passed since the
// suppression began.
//
// The zero value means all defaults; WithDefaults fills in zero fields. A
// DampingConfig is a value and safe for concurrent use.
type DampingConfig struct {
	// Penalty is added per counted flap (default 1000).
	Penalty float64
	// HalfLife is the time in which the penalty halves (default 2 min).
	HalfLife time.Duration
	// Suppress is the penalty at or above which a node becomes suppressed
	// (default 2000).
	Suppress float64
	// Reuse is the penalty below which a suppressed node is released
	// (default 750).
	Reuse float64
	// MaxSuppress is the longest a node stays suppressed in one go (default
	// 4 × HalfLife). It also sets the penalty ceiling, as in RFC 2439: see
	// Ceiling.
	MaxSuppress time.Duration
	// BurstWindow collapses bursts: a flap less than BurstWindow after the
	// previous counted flap is part of the same failure and is not counted
	// (RFC 7196: one failure makes several events). Use the probe interval;
	// default 2 s.
	BurstWindow time.Duration
}

// WithDefaults returns c with every zero field replaced by its default.
// MaxSuppress defaults to DefaultMaxSuppressHalfLives × the (completed)
// HalfLife.
func (c DampingConfig) WithDefaults() DampingConfig {
	c.Penalty = cmp.Or(c.Penalty, DefaultPenalty)
	c.HalfLife = cmp.Or(c.HalfLife, DefaultHalfLife)
	c.Suppress = cmp.Or(c.Suppress, DefaultSuppress)
	c.Reuse = cmp.Or(c.Reuse, DefaultReuse)
	c.MaxSuppress = cmp.Or(c.MaxSuppress, DefaultMaxSuppressHalfLives*c.HalfLife)
	c.BurstWindow = cmp.Or(c.BurstWindow, DefaultBurstWindow)
	return c
}

// Ceiling returns the highest penalty a node can carry, derived as in
// RFC 2439 so that a node at the ceiling decays to Reuse in exactly
// MaxSuppress: Reuse × 2^(MaxSuppress/HalfLife). With the defaults it is
// 750 × 2^4 = 12000. Zero fields take their defaults.
func (c DampingConfig) Ceiling() float64 {
	c = c.WithDefaults()
	return c.Reuse * math.Exp2(float64(c.MaxSuppress)/float64(c.HalfLife))
}

// Validate reports whether c, with its zero fields defaulted, can damp at
// all: every field positive and finite, Reuse below Suppress, and the
// ceiling at or above Suppress (else no node could ever be suppressed). The
// error wraps ErrInvalidConfig.
func (c DampingConfig) Validate() error {
	c = c.WithDefaults()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"penalty", c.Penalty}, {"suppress", c.Suppress}, {"reuse", c.Reuse}} {
		if !(f.v > 0) || math.IsInf(f.v, 0) {
			return bad("%s %v is not a positive finite number", f.name, f.v)
		}
	}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"half-life", c.HalfLife}, {"max suppress", c.MaxSuppress}, {"burst window", c.BurstWindow}} {
		if f.d < 0 {
			return bad("%s %v is negative", f.name, f.d)
		}
	}
	if c.Reuse >= c.Suppress {
		return bad("reuse %v is not below suppress %v", c.Reuse, c.Suppress)
	}
	if ceil := c.Ceiling(); ceil < c.Suppress {
		return bad("the penalty ceiling %v (reuse × 2^(max suppress / half-life)) is below suppress %v: no node could be suppressed", ceil, c.Suppress)
	}
	return nil
}

// Penalty is one node's flap history: an RFC 2439 figure of merit that grows
// by DampingConfig.Penalty with every counted flap and decays exponentially,
// plus the suppression state derived from it. The caller reports each down
// transition with Flap (bursts collapse into one flap) and asks Suppressed
// whenever it decides.
//
// Every method takes the current time and the config; pass the same config
// each time. The answers are pure functions of the recorded flaps and now:
// asking Value or Suppressed changes nothing, so polling often or rarely
// gives the same answers. A now earlier than the last counted flap, from a
// clock that went backwards, counts as the time of that flap.
//
// When a node is released because MaxSuppress has passed, its penalty is
// reset to Reuse at that instant (as FRR's bgp_damp.c does), so that a node
// that keeps flapping gets a real chance instead of being suppressed again
// by its next flap.
//
// The zero value is a node that never flapped. A Penalty is not safe for
// concurrent use.
type Penalty struct {
	value      float64   // penalty right after the last counted flap
	at         time.Time // time of the last counted flap
	flaps      int       // counted flaps
	suppressed bool      // suppressed right after the last counted flap
	since      time.Time // when that suppression began
}

// Flap records a down transition of the node at now. A flap less than
// BurstWindow after the previous counted flap (or before it) is part of the
// same burst and changes nothing. A counted flap adds Penalty to the decayed
// penalty, capped at the ceiling, and suppresses the node when the result
// reaches Suppress; a node already suppressed stays suppressed from the
// original start.
func (p *Penalty) Flap(now time.Time, c DampingConfig) {
	c = c.WithDefaults()
	now = p.clamp(now)
	if p.flaps > 0 && now.Sub(p.at) < c.BurstWindow {
		return
	}
	v, wasSuppressed := p.state(now, c)
	v = min(v+c.Penalty, c.Ceiling())
	switch {
	case wasSuppressed:
		// The suppression goes on; its start, and so its end by
		// MaxSuppress, stays.
	case v >= c.Suppress:
		p.suppressed, p.since = true, now
	default:
		p.suppressed, p.since = false, time.Time{}
	}
	p.value, p.at = v, now
	p.flaps++
}

// Value returns the node's penalty at now: the penalty after the last counted
// flap times 2^(-elapsed/HalfLife), or Reuse decayed from the moment a
// MaxSuppress release reset it. It is 0 for a node that never flapped.
func (p *Penalty) Value(now time.Time, c DampingConfig) float64 {
	v, _ := p.state(now, c.WithDefaults())
	return v
}

// Suppressed reports whether the node is suppressed at now. It becomes
// suppressed at the flap that brings the penalty to Suppress or above and
// stays suppressed while the penalty is at least Reuse, but no longer than
// MaxSuppress from when the suppression began.
func (p *Penalty) Suppressed(now time.Time, c DampingConfig) bool {
	_, s := p.state(now, c.WithDefaults())
	return s
}

// Flaps returns the number of counted flaps since the zero value, bursts
// collapsed (the status document's "flaps").
func (p *Penalty) Flaps() int { return p.flaps }

// state computes the penalty and the suppression at now from the stored
// fields alone. c must have its defaults filled in.
func (p *Penalty) state(now time.Time, c DampingConfig) (float64, bool) {
	if p.flaps == 0 {
		return 0, false
	}
	now = p.clamp(now)
	v := p.value * decay(now.Sub(p.at), c.HalfLife)
	if !p.suppressed {
		return v, false
	}
	// While suppressed the penalty decides until MaxSuppress runs out;
	// p.since <= p.at, and a suppression still on at the last flap ends
	// after it, so release >= p.at when it matters.
	release := p.since.Add(c.MaxSuppress)
	if now.Before(release) {
		return v, v >= c.Reuse
	}
	if atRelease := p.value * decay(release.Sub(p.at), c.HalfLife); atRelease >= c.Reuse {
		// Still suppressed when MaxSuppress ran out: released with the
		// penalty reset to Reuse, as FRR's bgp_damp_scan does.
		v = c.Reuse * decay(now.Sub(release), c.HalfLife)
	}
	return v, false
}

// clamp returns now, or the time of the last counted flap when now is
// earlier.
func (p *Penalty) clamp(now time.Time) time.Time {
	if p.flaps > 0 && now.Before(p.at) {
		return p.at
	}
	return now
}

// decay returns 2^(-elapsed/halfLife), the factor by which a penalty shrinks
// in elapsed (1 for elapsed <= 0).
func decay(elapsed, halfLife time.Duration) float64 {
	if elapsed <= 0 {
		return 1
	}
	return math.Exp2(-float64(elapsed) / float64(halfLife))
}
