package controlloop

import (
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/slotplan"
)

// When the leader's next pass is due by the passing of time alone: a drain
// or return step, or a resize's split step (resize.go), at its interval (its last step placed on this clock,
// remoteclock.go), a step that moved nothing a probe interval later, a
// slot holder's owed flush when its verdict has held longer than
// --flush-after-unreachable, an announce's serves_at and a warming
// object's removal (announce.go). Run arms a timer for the earliest of them
// that comes before the next probe tick; a caller that drives passes
// itself (the simulator) asks NextDecisionIn. Followers decide nothing and
// arm nothing.

// placeStepsLocked places the last step of every drained zone on this
// clock at its first read (remoteclock.go), so that a follower that takes
// over keeps the stored pace from when it first saw each step. l.mu must
// be held.
func (l *Loop) placeStepsLocked(now time.Time) {
	if l.drains.doc == nil {
		return
	}
	for zone, e := range l.drains.doc.Zones {
		l.remote.placeStep(zone, e.LastStepAt, now)
	}
}

// dueStepsLocked returns the drain and return steps due at now over the
// map prev: a zone's first step at once, each next one at least its step
// interval after the previous (its last_step_at placed on this clock,
// remoteclock.go); a zone at its target has none, and a zone whose due
// step last moved nothing (blocked) waits a probe interval before it is
// tried again. l.mu must be held.
func (l *Loop) dueStepsLocked(prev *cachenodes.SlotMap, now time.Time) map[string]slotplan.ZoneStep {
	if l.drains.corrupt || l.drains.doc == nil || len(l.drains.doc.Zones) == 0 {
		return nil
	}
	held := l.zoneSlotsAnnouncedLocked(prev)
	var out map[string]slotplan.ZoneStep
	for zone, e := range l.drains.doc.Zones {
		if held[zone] == e.Target() {
			continue
		}
		if d := l.untilStepLocked(zone, e, now); d == 0 {
			if out == nil {
				out = make(map[string]slotplan.ZoneStep, len(l.drains.doc.Zones))
			}
			out[zone] = slotplan.ZoneStep{Target: e.Target(), Size: e.StepSize(), Moved: e.MovedSlots}
		}
	}
	return out
}

// untilStepLocked returns how long until zone's next step is due (0: due
// now): its step interval after its last step, and a probe interval after
// a due step that moved nothing. l.mu must be held.
func (l *Loop) untilStepLocked(zone string, e *mcribapi.DrainEntry, now time.Time) time.Duration {
	d := time.Duration(0)
	if last := l.remote.placeStep(zone, e.LastStepAt, now); last != nil {
		d = max(d, last.Add(e.Interval()).Sub(now))
	}
	if at, blocked := l.drains.blockedAt[zone]; blocked {
		d = max(d, at.Add(l.opts.ProbeInterval).Sub(now))
	}
	return d
}

// noteBlockedStepsLocked records, for each zone whose step was due in
// this pass (due), tried, and moved nothing (outcome), that it is blocked
// since now; a zone whose step moved is not. l.mu must be held.
func (l *Loop) noteBlockedStepsLocked(due map[string]slotplan.ZoneStep, outcome map[string]slotplan.StepOutcome, now time.Time) {
	for zone := range l.drains.blockedAt {
		if _, ok := due[zone]; !ok {
			if l.drains.doc == nil || l.drains.doc.Zones[zone] == nil {
				delete(l.drains.blockedAt, zone)
			}
		}
	}
	for zone := range due {
		o, tried := outcome[zone]
		switch {
		case !tried:
			continue // held back (an operator freeze): not tried
		case o.Moved > 0:
			delete(l.drains.blockedAt, zone)
			continue
		}
		if l.drains.blockedAt == nil {
			l.drains.blockedAt = make(map[string]time.Time)
		}
		l.drains.blockedAt[zone] = now
	}
}

// untilNextStep returns how long until the next drain or return step is
// due, or a negative duration when none is pending (no drain, every zone
// at its target, an operator freeze holding them, or this process does not
// lead: only the leader steps). A step that moved nothing (blocked) waits
// a probe interval.
func (l *Loop) untilNextStep() time.Duration {
	now := l.clock.Now()
	if _, leading := l.lead.Lease(); !leading {
		return -1
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.untilNextStepLocked(now)
}

func (l *Loop) untilNextStepLocked(now time.Time) time.Duration {
	if l.current == nil {
		return -1
	}
	next := l.announces.until(&l.remote, now)
	if l.freeze.doc != nil {
		return next
	}
	if d := l.untilSplitLocked(l.resizes.entry, l.current, now); d >= 0 && (next < 0 || d < next) {
		next = d
	}
	if l.drains.corrupt || l.drains.doc == nil {
		return next
	}
	held := l.zoneSlotsAnnouncedLocked(l.current)
	for zone, e := range l.drains.doc.Zones {
		if held[zone] == e.Target() {
			continue
		}
		if d := l.untilStepLocked(zone, e, now); next < 0 || d < next {
			next = d
		}
	}
	return next
}

// NextStepIn returns how long until the next drain or return step is due,
// and false when none is pending (or this process does not lead). A caller
// that drives passes itself (the simulator) schedules a pass then.
func (l *Loop) NextStepIn() (time.Duration, bool) {
	d := l.untilNextStep()
	return d, d >= 0
}

// NextDecisionIn returns how long until the leader's next decision that
// the passing of time alone brings is due: a drain or return step, or a
// slot holder's owed flush (its verdict holding longer than
// --flush-after-unreachable); false when none is pending or this process
// does not lead. Run wakes itself for it; a caller that drives passes
// itself schedules a pass then.
func (l *Loop) NextDecisionIn() (time.Duration, bool) {
	now := l.clock.Now()
	if _, leading := l.lead.Lease(); !leading {
		return -1, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	d := l.untilNextStepLocked(now)
	if f := l.owed.untilDecision(l.tr, now); f >= 0 && (d < 0 || f < d) {
		d = f
	}
	return d, d >= 0
}

// stepTimer wakes Run for a decision due between two probe ticks (a drain
// step, an owed flush), so it comes at its time rather than at the first
// tick after it.
type stepTimer struct{ t clock.Timer }

// arm sets the timer to fire after d when a step is pending (d ≥ 0) and
// due before the next tick; otherwise it stops it.
func (s *stepTimer) arm(c clock.Clock, d, tick time.Duration) {
	if d < 0 || d >= tick {
		s.stop()
		return
	}
	if s.t == nil {
		s.t = c.NewTimer(d)
		return
	}
	s.t.Stop()
	s.t.Reset(d)
}

func (s *stepTimer) stop() {
	if s.t != nil {
		s.t.Stop()
		s.t = nil
	}
}

// c returns the timer's channel; nil (never ready) when it is not armed.
func (s *stepTimer) c() <-chan time.Time {
	if s.t == nil {
		return nil
	}
	return s.t.C()
}
