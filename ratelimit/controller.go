package ratelimit

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// The controller's waits, as multiples of ControllerConfig.Interval (the
// --stats-interval). The package comment explains each.
const (
	// CutCooldownIntervals is the least time between two cuts.
	CutCooldownIntervals = 2
	// RaiseWaitIntervals is the least time between any change of the
	// limit and the next raise.
	RaiseWaitIntervals = 3
	// RelapseWindowIntervals is how long after a raise a hit rate below
	// --hit-rate-low counts as a relapse caused by that raise.
	RelapseWindowIntervals = 6
	// CollapseWindowIntervals is the span within which a fall of the hit
	// rate by half the gap between --hit-rate-low and --hit-rate-target is
	// a collapse.
	CollapseWindowIntervals = 2
)

// The controller's factors (see the package comment).
const (
	cutFactor           = 0.5  // a cut halves the limit
	raiseFactor         = 2.0  // a raise at most doubles the limit
	relapseFactor       = 0.9  // a relapse also goes below 0.9 x the pre-raise level
	initialStepFraction = 0.10 // the first raise step is a tenth of the ceiling
	minStepFraction     = 0.01 // steps never shrink below a hundredth of the ceiling (or 1)
)

// ErrInvalidConfig is wrapped by the errors ControllerConfig.Validate
// returns.
var ErrInvalidConfig = errors.New("ratelimit: invalid controller configuration")

// ControllerConfig is the controller's configuration, taken from the flags
// of mcrib serve. The zero value is not valid.
type ControllerConfig struct {
	// Floor is the lowest limit in auto mode (--boot-limit-min), boots/s.
	Floor float64
	// Ceiling is the highest limit in auto mode (--boot-limit-max), boots/s.
	Ceiling float64
	// Low is the hit rate below which the limit is cut (--hit-rate-low).
	Low float64
	// Target is the hit rate at and above which the limit may rise
	// (--hit-rate-target).
	Target float64
	// Interval is how often the hit rate is measured (--stats-interval);
	// every wait of the controller is a multiple of it.
	Interval time.Duration
}

// Validate reports whether c is usable, with an error wrapping
// ErrInvalidConfig that names the field when it is not.
func (c ControllerConfig) Validate() error {
	switch {
	case !finite(c.Floor) || c.Floor < 0:
		return fmt.Errorf("%w: the floor must be a finite number of boots per second, at least 0", ErrInvalidConfig)
	case !finite(c.Ceiling) || c.Ceiling <= 0:
		return fmt.Errorf("%w: the ceiling must be a finite number of boots per second above 0", ErrInvalidConfig)
	case c.Floor > c.Ceiling:
		return fmt.Errorf("%w: the floor %s is above the ceiling %s", ErrInvalidConfig, fmtLimit(c.Floor), fmtLimit(c.Ceiling))
	case !(c.Low >= 0 && c.Low <= 1):
		return fmt.Errorf("%w: the low hit rate must be between 0 and 1", ErrInvalidConfig)
	case !(c.Target >= 0 && c.Target <= 1):
		return fmt.Errorf("%w: the target hit rate must be between 0 and 1", ErrInvalidConfig)
	case c.Low > c.Target:
		return fmt.Errorf("%w: the low hit rate %v is above the target %v", ErrInvalidConfig, c.Low, c.Target)
	case c.Interval <= 0:
		return fmt.Errorf("%w: the stats interval must be above 0", ErrInvalidConfig)
	}
	return nil
}

// CutCooldown returns the least time between two cuts.
func (c ControllerConfig) CutCooldown() time.Duration { return CutCooldownIntervals * c.Interval }

// RaiseWait returns the least time between a change of the limit and the
// next raise.
func (c ControllerConfig) RaiseWait() time.Duration { return RaiseWaitIntervals * c.Interval }

// RelapseWindow returns how long after a raise a hit rate below Low is
// blamed on that raise.
func (c ControllerConfig) RelapseWindow() time.Duration { return RelapseWindowIntervals * c.Interval }

// CollapseWindow returns the span within which a fall of the hit rate by
// CollapseFall or more is a collapse.
func (c ControllerConfig) CollapseWindow() time.Duration {
	return CollapseWindowIntervals * c.Interval
}

// CollapseFall returns the fall of the hit rate within CollapseWindow that
// is a collapse: half the gap between Low and Target.
func (c ControllerConfig) CollapseFall() float64 { return (c.Target - c.Low) / 2 }

// InitialStep returns the first raise step: a tenth of the ceiling.
func (c ControllerConfig) InitialStep() float64 {
	return max(roundLimit(c.Ceiling*initialStepFraction), 0.01)
}

// MinStep returns the smallest raise step: a hundredth of the ceiling, at
// least 1 boot/s, never more than InitialStep.
func (c ControllerConfig) MinStep() float64 {
	return min(max(roundLimit(c.Ceiling*minStepFraction), 1), c.InitialStep())
}

// Decision is what one observation of the controller concluded; a plain
// value.
type Decision struct {
	// Limit and Burst are the limit to enforce after the observation. In
	// manual mode they are the operator's and never move.
	Limit float64
	Burst int
	// AutoLimit is the controller's own limit; it equals Limit in auto
	// mode.
	AutoLimit float64
	// Changed reports that the document changed (the limit, the controller's
	// own limit in manual mode, or the floor and ceiling it records) and
	// must be written.
	Changed bool
	// Reason is one sentence: why the controller's limit changed, or why it
	// held. In manual mode it speaks of what the controller would do.
	Reason string
	// HeldSurge is the level a boot surge is held at after the
	// observation (SurgeHeld), boots/s, below Limit; 0 when none is held.
	HeldSurge float64
}

// Controller is the adaptive boot limiter's decision maker: a pure state
// machine fed with the smoothed hit rate and the time, one observation per
// stats interval. It never reads a clock. The algorithm is described in the
// package comment.
//
// The zero value is not usable; build a Controller with NewController. A
// Controller is not safe for concurrent use. Its only pointer, its
// document's hit rate, is replaced and never written through, so a copy
// of a Controller is an independent controller in the same state (Service
// tries decisions on a copy and keeps it only once written).
type Controller struct {
	cfg  ControllerConfig
	doc  Document
	auto float64 // the controller's own limit (doc.Limit in auto mode)
	step float64

	lastChange time.Time // last change of auto or of the held surge, or adoption of a document
	lastCut    time.Time // last cut of auto, or the hold of a boot surge (the fall it answered)

	// held is the level a boot surge is held at (SurgeHeld), 0 when none:
	// the controller's limit stays, and the raises move held instead.
	held float64

	raised     bool // the last change was a raise, still inside its relapse window
	raisedFrom float64
	raisedTo   float64
	raisedAt   time.Time

	// recent holds the usable hit rates observed within the collapse
	// window, oldest first; nRecent of them are set. An array, so that a
	// copy of the Controller stays independent.
	recent  [maxRecent]sample
	nRecent int

	// fell is set by decide when the hit rate it was given is a fall: a
	// relapse, a collapse or a rate below Low, whether or not the limit
	// could move (ObserveSurge).
	fell bool
	// surge is set while ObserveSurge judges a boot surge: a collapse
	// between Low and the target then holds at the slow-start level
	// instead of going to the floor.
	surge bool
}

// rateSlack absorbs the rounding of hit rates in comparisons: 0.97 - 0.92
// is a fall of 0.05.
const rateSlack = 1e-9

// maxRecent bounds the hit rates the controller remembers: enough for the
// collapse window at one observation per stats interval, with room for
// early ticks.
const maxRecent = 4 * CollapseWindowIntervals

// sample is one usable hit rate and when it was observed.
type sample struct {
	at time.Time
	h  float64
}

// NewController returns a controller that starts from the document start.
// Because start may have changed just before (by another leader),
// start.UpdatedAt counts as the time of the last cut and of the last change:
// the cooldown and the raise wait run from it.
func NewController(cfg ControllerConfig, start Document) *Controller {
	c := &Controller{
		cfg:        cfg,
		doc:        start,
		step:       cfg.InitialStep(),
		lastChange: start.UpdatedAt,
		lastCut:    start.UpdatedAt,
	}
	c.auto = start.Limit
	if start.Mode == ModeManual {
		c.auto = start.AutoLimit
	}
	return c
}

// Document returns the controller's view of the boot-limit document after
// its last observation or adoption.
func (c *Controller) Document() Document { return c.doc }

// Step returns the size of the next raise, boots/s.
func (c *Controller) Step() float64 { return c.step }

// Adopt takes over doc, a document the controller did not produce (an
// operator's setting, another leader's write, a reload), observed at now. A
// change of mode or of the controller's limit restarts the raise wait and
// ends any relapse watch; the controller's limit becomes doc.Limit in auto
// mode and doc.AutoLimit in manual mode. Adopting the document the
// controller itself produced changes nothing.
func (c *Controller) Adopt(doc Document, now time.Time) {
	auto := doc.Limit
	if doc.Mode == ModeManual {
		auto = doc.AutoLimit
	}
	if doc.Mode != c.doc.Mode || auto != c.auto {
		c.auto = auto
		c.lastChange = now
		c.raised = false
		c.held = 0 // the new limit is admitted as it is
	}
	c.doc = doc
}

// Observe feeds the controller the smoothed hit rate h (0..1) measured at
// now and returns its decision. In auto mode a change moves the enforced
// limit and its burst (DefaultBurst) and sets the document's reason; in
// manual mode it moves only AutoLimit and AutoReason. A hit rate that is
// not a number between 0 and 1 holds everything.
//
// While a boot surge is held (SurgeHeld), a rate at or above the target
// moves the held level as the rules would move a limit (the raises, their
// wait and steps) and leaves the limit alone; the surge is over once the
// level reaches the limit. The first rate below the target hands over:
// the limit starts from the held level, and the rules apply from there.
func (c *Controller) Observe(now time.Time, h float64) Decision {
	manual := c.doc.Mode == ModeManual
	boundsChanged := c.doc.Floor != c.cfg.Floor || c.doc.Ceiling != c.cfg.Ceiling
	usable := h >= 0 && h <= 1
	if c.held > 0 && (manual || c.auto > c.cfg.Ceiling || c.auto < c.cfg.Floor) {
		c.held = 0 // no surge is held in manual mode, nor outside the bounds
	}
	var next float64
	var reason string
	var changed bool
	switch {
	case c.held > 0 && usable && h >= c.cfg.Target:
		return c.raiseHeld(now, h, boundsChanged)
	case c.held > 0 && usable:
		// Below the target, the limit may be cut: it starts from the held
		// level, a cut from the limit in force.
		held := c.held
		c.held, c.auto = 0, min(c.auto, held)
		next, reason, changed = c.decide(now, h, manual)
		if !changed {
			next, changed = c.auto, true
		}
		reason = fmt.Sprintf("hit rate %s fell below target %s while a boot surge was held at %s boots/s: the limit starts from there: %s",
			fmtRate(h, c.cfg.Target), fmtThreshold(c.cfg.Target), fmtLimit(held), reason)
	default:
		next, reason, changed = c.decide(now, h, manual)
	}
	if changed {
		c.auto = next
		if manual {
			c.doc.AutoLimit = next
			c.doc.AutoReason = reason
		} else {
			c.doc.Limit = next
			c.doc.Burst = autoBurst(c.doc, next)
			c.doc.Reason = reason
			c.doc.AutoLimit = next
			c.doc.AutoReason = ""
		}
	}
	if changed || boundsChanged {
		c.stampBounds(now, h)
	}
	return Decision{
		Limit:     c.doc.Limit,
		Burst:     c.doc.Burst,
		AutoLimit: c.auto,
		Changed:   changed || boundsChanged,
		Reason:    reason,
		HeldSurge: c.held,
	}
}

// stampBounds records in the document the bounds of the configuration,
// the time now and the hit rate h (when usable): the document is to be
// written.
func (c *Controller) stampBounds(now time.Time, h float64) {
	c.doc.Floor, c.doc.Ceiling = c.cfg.Floor, c.cfg.Ceiling
	c.doc.UpdatedAt = stamp(now)
	if h >= 0 && h <= 1 {
		c.doc.HitRate = RateOf(h)
	}
}

// decide runs one step of the algorithm on the controller's own limit and
// returns the next value, the sentence saying why and whether it changed.
// It updates the timers, the step and the relapse watch.
func (c *Controller) decide(now time.Time, h float64, manual bool) (next float64, reason string, changed bool) {
	cfg := c.cfg
	cur := c.auto
	would := ""
	if manual {
		would = "would have "
	}
	verb := func(past string) string { return would + past }
	c.fell = false

	// The bounds first: they may have changed since the limit was set.
	if cur > cfg.Ceiling {
		c.lastChange = now
		c.raised = false
		return cfg.Ceiling, fmt.Sprintf("the ceiling is %s boots/s: %s from %s to %s",
			fmtLimit(cfg.Ceiling), verb("lowered"), fmtLimit(cur), fmtLimit(cfg.Ceiling)), true
	}
	if cur < cfg.Floor {
		c.lastChange = now
		c.raised = false
		return cfg.Floor, fmt.Sprintf("the floor is %s boots/s: %s from %s to %s",
			fmtLimit(cfg.Floor), verb("raised"), fmtLimit(cur), fmtLimit(cfg.Floor)), true
	}
	if !(h >= 0 && h <= 1) {
		return cur, fmt.Sprintf("no usable hit rate: holding at %s", fmtLimit(cur)), false
	}
	from := c.remember(now, h)

	if c.raised && now.Sub(c.raisedAt) > cfg.RelapseWindow() {
		c.raised = false
	}
	low, target := fmtThreshold(cfg.Low), fmtThreshold(cfg.Target)
	switch {
	case h < cfg.Low && c.raised:
		c.fell = true
		// A relapse: the last raise went too far. Go below the level it
		// started from and take smaller steps from now on.
		next = c.clamp(min(cur*cutFactor, c.raisedFrom*relapseFactor))
		c.step = max(cfg.MinStep(), roundLimit(c.step/2))
		c.raised = false
		c.lastCut, c.lastChange = now, now
		return next, fmt.Sprintf("hit rate %s fell below %s after raising from %s to %s: %s to %s, next steps %s",
			fmtRate(h, cfg.Low), low, fmtLimit(c.raisedFrom), fmtLimit(c.raisedTo),
			verb("cut"), fmtLimit(next), fmtLimit(c.step)), next != cur

	case c.surge && h >= cfg.Low && c.collapsed(from, h):
		// A collapse seen by a boot surge's slow start: the waiting
		// clients are already held at cur, the level the reading judged,
		// and the rate is between Low and the target: hold there; the raises resume
		// after the raise wait. (Below Low, the cut below halves cur.)
		// Holding counts as the cut from the ceiling that it is: the
		// fall it answered is not counted again.
		c.fell = true
		c.raised = false
		c.lastCut, c.lastChange = now, now
		return cur, fmt.Sprintf("hit rate fell from %s to %s within %s: %s at the slow-start level of %s",
			fmtRate(from, cfg.Target), fmtRate(h, cfg.Target), cfg.CollapseWindow(), verb("holding"), fmtLimit(cur)), false

	case !c.surge && c.collapsed(from, h):
		// A collapse: the cache went cold (a flush, a restart of the
		// tier, a partition) and every waiting client is about to boot
		// into it; the rate is below the target. Straight to the floor, no cooldown; the raises start
		// again from there with full steps, each at most doubling.
		c.fell = true
		fell := fmt.Sprintf("hit rate fell from %s to %s within %s", fmtRate(from, cfg.Target), fmtRate(h, cfg.Target), cfg.CollapseWindow())
		if cur <= cfg.Floor {
			return cur, fmt.Sprintf("%s: already at the floor of %s", fell, fmtLimit(cfg.Floor)), false
		}
		c.step = cfg.InitialStep()
		c.raised = false
		c.lastCut, c.lastChange = now, now
		next = cfg.Floor
		return next, fmt.Sprintf("%s: %s from %s to the floor of %s", fell, verb("cut"), fmtLimit(cur), fmtLimit(next)), true

	case h < cfg.Low:
		c.fell = true
		if cur <= cfg.Floor {
			return cur, fmt.Sprintf("hit rate %s below %s: already at the floor of %s", fmtRate(h, cfg.Low), low, fmtLimit(cfg.Floor)), false
		}
		if !c.lastCut.IsZero() && now.Sub(c.lastCut) < cfg.CutCooldown() {
			return cur, fmt.Sprintf("hit rate %s below %s: holding at %s until %s after the last cut",
				fmtRate(h, cfg.Low), low, fmtLimit(cur), cfg.CutCooldown()), false
		}
		next = c.clamp(cur * cutFactor)
		c.lastCut, c.lastChange = now, now
		return next, fmt.Sprintf("hit rate %s below %s: %s from %s to %s",
			fmtRate(h, cfg.Low), low, verb("cut"), fmtLimit(cur), fmtLimit(next)), true

	case h < cfg.Target:
		return cur, fmt.Sprintf("hit rate %s between %s and %s: holding at %s",
			fmtRate(h, cfg.Target), low, target, fmtLimit(cur)), false

	default:
		if cur >= cfg.Ceiling {
			return cur, fmt.Sprintf("hit rate %s at or above target %s: at the ceiling of %s",
				fmtRate(h, cfg.Target), target, fmtLimit(cfg.Ceiling)), false
		}
		if !c.lastChange.IsZero() && now.Sub(c.lastChange) < cfg.RaiseWait() {
			return cur, fmt.Sprintf("hit rate %s at or above target %s: holding at %s until %s after the last change",
				fmtRate(h, cfg.Target), target, fmtLimit(cur), cfg.RaiseWait()), false
		}
		next = c.clamp(min(cur+c.step, cur*raiseFactor))
		c.raised, c.raisedFrom, c.raisedTo, c.raisedAt = true, cur, next, now
		c.lastChange = now
		if next >= cfg.Ceiling {
			// Back at the ceiling: the cache is healthy again, and the
			// next recovery starts with full steps.
			c.step = cfg.InitialStep()
		}
		return next, fmt.Sprintf("hit rate %s at or above target %s: %s from %s to %s",
			fmtRate(h, cfg.Target), target, verb("raised"), fmtLimit(cur), fmtLimit(next)), true
	}
}

// kept reports whether the hit rate s, seen before now, still counts for
// a collapse at now: inside the collapse window, and not before the last
// cut (a fall a cut answered is not counted again).
func (c *Controller) kept(s sample, now time.Time) bool {
	d := now.Sub(s.at)
	return d > 0 && d <= c.cfg.CollapseWindow() && !s.at.Before(c.lastCut)
}

// peak returns the highest hit rate kept before now, h itself when there
// is none higher. It changes nothing.
func (c *Controller) peak(now time.Time, h float64) float64 {
	from := h
	for _, s := range c.recent[:c.nRecent] {
		if c.kept(s, now) {
			from = max(from, s.h)
		}
	}
	return from
}

// fellFast reports whether h, measured at now, is a fall by CollapseFall or
// more from the highest hit rate kept, whether or not it stays at or above
// the target.
func (c *Controller) fellFast(now time.Time, h float64) bool {
	return c.cfg.CollapseFall() > 0 && c.peak(now, h)-h >= c.cfg.CollapseFall()-rateSlack
}

// collapsed reports whether a fall from the hit rate from to h is a
// collapse: by CollapseFall or more within the collapse window (from is
// the highest rate kept), to a rate below the target. A rate at or above
// the target is never cut, however fast it fell.
func (c *Controller) collapsed(from, h float64) bool {
	return h < c.cfg.Target && c.cfg.CollapseFall() > 0 && from-h >= c.cfg.CollapseFall()-rateSlack
}

// remember records the hit rate h observed at now, forgets the ones no
// longer kept (kept), and returns the highest hit rate kept before now (h
// itself when there is none).
func (c *Controller) remember(now time.Time, h float64) (from float64) {
	kept := 0
	for _, s := range c.recent[:c.nRecent] {
		if c.kept(s, now) {
			c.recent[kept] = s
			kept++
		}
	}
	from = h
	for _, s := range c.recent[:kept] {
		from = max(from, s.h)
	}
	if kept == len(c.recent) {
		copy(c.recent[:], c.recent[1:])
		kept--
	}
	c.recent[kept] = sample{at: now, h: h}
	c.nRecent = kept + 1
	return from
}

// clamp rounds v to hundredths and holds it inside the floor and the
// ceiling.
func (c *Controller) clamp(v float64) float64 {
	return min(max(roundLimit(v), c.cfg.Floor), c.cfg.Ceiling)
}

// roundLimit rounds a limit to hundredths of a boot per second, so reasons
// and documents show 62.5 rather than 62.49999.
func roundLimit(v float64) float64 { return math.Round(v*100) / 100 }
