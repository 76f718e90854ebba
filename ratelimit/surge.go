package ratelimit

import (
	"fmt"
	"time"
)

// SurgeVerdict is what the reading that judges a boot surge concluded
// (Controller.ObserveSurge).
type SurgeVerdict int

const (
	// SurgeReleased: the hit rate did not fall; admissions go up to the
	// controller's limit.
	SurgeReleased SurgeVerdict = iota
	// SurgeFell: the hit rate fell below the target (a collapse, a
	// relapse or a rate below Low); the controller's limit starts from
	// the slow-start level.
	SurgeFell
	// SurgeHeld: the hit rate fell fast but stays at or above the target;
	// the limit is not cut, and the surge stays held at the slow-start
	// level, which rises as the controller's limit would after a cut,
	// until it reaches the limit or the hit rate falls below the target
	// (Controller.HeldSurge).
	SurgeHeld
)

// ObserveSurge is Observe at the reading that judges a boot surge
// (SlowStart.Reading): admissions were capped at level, and raw is the
// reading's own interval hit rate (hitrate.Meter.Interval), not smoothed,
// because the smoothed rate barely moves in an interval with less traffic
// than usual, as a cold start whose clients all wait to boot is. In auto
// mode it judges raw from min(the controller's limit, level):
//
//   - a fall of raw by CollapseFall or more within the collapse window
//     (from the highest rate since the last cut) that stays at or above
//     the target holds the surge at level (SurgeHeld): the limit is never
//     cut at or above the target, and the held level rises on the raise
//     schedule (Observe);
//   - a fall below the target (a collapse, a relapse or a rate below Low)
//     applies from the slow-start level, not from the ceiling (SurgeFell):
//     the limit becomes that level, halved below Low;
//   - otherwise the surge was taken (SurgeReleased) and the reading is an
//     ordinary Observe of the smoothed h.
//
// In manual mode it is Observe(now, h), and so it is while a surge is
// held already.
func (c *Controller) ObserveSurge(now time.Time, h, raw, level float64) (d Decision, v SurgeVerdict) {
	if c.held > 0 {
		d = c.Observe(now, h)
		if d.HeldSurge > 0 {
			return d, SurgeHeld
		}
		return d, SurgeReleased
	}
	if c.doc.Mode == ModeManual || !(raw >= 0 && raw <= 1) {
		return c.Observe(now, h), SurgeReleased
	}
	if level = c.clamp(level); raw >= c.cfg.Target && level < c.auto && c.auto <= c.cfg.Ceiling && c.fellFast(now, raw) {
		return c.holdSurge(now, raw, level), SurgeHeld
	}
	trial := *c
	if level < trial.auto {
		trial.auto = level
	}
	trial.surge = true
	d = trial.Observe(now, raw)
	trial.surge = false
	if !trial.fell {
		return c.Observe(now, h), SurgeReleased
	}
	prefix := fmt.Sprintf("boot surge slowed to %s boots/s: ", fmtLimit(level))
	if trial.doc.Limit != trial.auto {
		// The fall held the limit (at the floor, or inside the cut
		// cooldown): it holds at the slow-start level.
		trial.doc.Limit = trial.auto
		trial.doc.Burst = autoBurst(trial.doc, trial.auto)
		trial.doc.AutoLimit = trial.auto
		trial.doc.AutoReason = ""
		trial.stampBounds(now, raw)
		trial.lastChange = now
		d = Decision{Limit: trial.doc.Limit, Burst: trial.doc.Burst, AutoLimit: trial.auto, Changed: true, Reason: d.Reason}
	}
	d.Reason = prefix + d.Reason
	if d.Changed {
		trial.doc.Reason = d.Reason
	}
	*c = trial
	return d, SurgeFell
}

// holdSurge holds a boot surge at level on a fast fall of the hit rate
// to raw, at or above the target: the limit stays; the fall the hold
// answers is not counted again, and the held level rises after the raise
// wait, as a limit would after a cut.
func (c *Controller) holdSurge(now time.Time, raw, level float64) Decision {
	from := c.peak(now, raw)
	c.remember(now, raw)
	c.held = level
	c.raised = false
	c.lastCut, c.lastChange = now, now
	reason := fmt.Sprintf("boot surge held at %s boots/s: hit rate fell from %s to %s within %s, at or above target %s: the limit stays at %s",
		fmtLimit(level), fmtRate(from, c.cfg.Target), fmtRate(raw, c.cfg.Target), c.cfg.CollapseWindow(), fmtThreshold(c.cfg.Target), fmtLimit(c.auto))
	boundsChanged := c.doc.Floor != c.cfg.Floor || c.doc.Ceiling != c.cfg.Ceiling
	if boundsChanged {
		c.stampBounds(now, raw)
	}
	return Decision{
		Limit:     c.doc.Limit,
		Burst:     c.doc.Burst,
		AutoLimit: c.auto,
		Changed:   boundsChanged,
		Reason:    reason,
		HeldSurge: level,
	}
}

// raiseHeld steps the held surge on a hit rate h at or above the target:
// the rules run on the held level as they would on a limit (at or above
// the target they only raise, after the raise wait), the limit stays, and
// a level that reaches the limit ends the surge.
func (c *Controller) raiseHeld(now time.Time, h float64, boundsChanged bool) Decision {
	limit := c.auto
	c.auto = c.held
	next, reason, changed := c.decide(now, h, false)
	c.auto = limit
	if changed {
		c.held = next
	}
	reason = fmt.Sprintf("boot surge held at %s boots/s, the limit staying at %s: %s", fmtLimit(min(c.held, limit)), fmtLimit(limit), reason)
	if c.held >= limit {
		c.held = 0
		reason += ": the boot surge is over"
	}
	if boundsChanged {
		c.stampBounds(now, h)
	}
	return Decision{
		Limit:     c.doc.Limit,
		Burst:     c.doc.Burst,
		AutoLimit: c.auto,
		Changed:   boundsChanged,
		Reason:    reason,
		HeldSurge: c.held,
	}
}

// HeldSurge returns the level a boot surge is held at (SurgeHeld),
// boots/s; 0 when none is held.
func (c *Controller) HeldSurge() float64 { return c.held }
