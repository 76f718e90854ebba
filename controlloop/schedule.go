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

// placeSteps places the last step of every drained zone on this clock
// (remote) at its first read (remoteclock.go), so that a follower that
// takes over keeps the stored pace from when it first saw each step.
func (d *drainState) placeSteps(remote *remoteClock, now time.Time) {
	if d.doc == nil {
		return
	}
	for zone, e := range d.doc.Zones {
		remote.placeStep(zone, e.LastStepAt, now)
	}
}

// dueSteps returns the drain and return steps due at now over the map
// prev (its announces placed in their nodes' zones by tr): a zone's first
// step at once, each next one at least its step interval after the
// previous (its last_step_at placed on this clock by remote,
// remoteclock.go); a zone at its target has none, and a zone whose due
// step last moved nothing (blocked) waits a probe interval before it is
// tried again.
func (d *drainState) dueSteps(tr *tracker, remote *remoteClock, prev *cachenodes.SlotMap, now time.Time) map[string]slotplan.ZoneStep {
	if d.corrupt || d.doc == nil || len(d.doc.Zones) == 0 {
		return nil
	}
	held := tr.zoneSlotsAnnounced(prev)
	var out map[string]slotplan.ZoneStep
	for zone, e := range d.doc.Zones {
		if held[zone] == e.Target() {
			continue
		}
		if wait := d.untilStep(remote, zone, e, now); wait == 0 {
			if out == nil {
				out = make(map[string]slotplan.ZoneStep, len(d.doc.Zones))
			}
			out[zone] = slotplan.ZoneStep{Target: e.Target(), Size: e.StepSize(), Moved: e.MovedSlots}
		}
	}
	return out
}

// untilStep returns how long until zone's next step is due (0: due now):
// its step interval after its last step (placed on this clock by remote),
// and a probe interval after a due step that moved nothing.
func (d *drainState) untilStep(remote *remoteClock, zone string, e *mcribapi.DrainEntry, now time.Time) time.Duration {
	wait := time.Duration(0)
	if last := remote.placeStep(zone, e.LastStepAt, now); last != nil {
		wait = max(wait, last.Add(e.Interval()).Sub(now))
	}
	if at, blocked := d.blockedAt[zone]; blocked {
		wait = max(wait, at.Add(d.probe).Sub(now))
	}
	return wait
}

// untilNextStep returns how long until the next drain or return step over
// m is due (0: now), or a negative duration when none is pending (no
// drain, a corrupt document, every zone at its target).
func (d *drainState) untilNextStep(tr *tracker, remote *remoteClock, m *cachenodes.SlotMap, now time.Time) time.Duration {
	next := time.Duration(-1)
	if d.corrupt || d.doc == nil {
		return next
	}
	held := tr.zoneSlotsAnnounced(m)
	for zone, e := range d.doc.Zones {
		if held[zone] == e.Target() {
			continue
		}
		if wait := d.untilStep(remote, zone, e, now); next < 0 || wait < next {
			next = wait
		}
	}
	return next
}

// noteBlocked records, for each zone whose step was due in this pass
// (due), tried, and moved nothing (outcome), that it is blocked since now;
// a zone whose step moved is not.
func (d *drainState) noteBlocked(due map[string]slotplan.ZoneStep, outcome map[string]slotplan.StepOutcome, now time.Time) {
	for zone := range d.blockedAt {
		if _, ok := due[zone]; !ok {
			if d.doc == nil || d.doc.Zones[zone] == nil {
				delete(d.blockedAt, zone)
			}
		}
	}
	for zone := range due {
		o, tried := outcome[zone]
		switch {
		case !tried:
			continue // held back (an operator freeze): not tried
		case o.Moved > 0:
			delete(d.blockedAt, zone)
			continue
		}
		if d.blockedAt == nil {
			d.blockedAt = make(map[string]time.Time)
		}
		d.blockedAt[zone] = now
	}
}

// untilNextStepLocked returns how long until the leader's next step is
// due: an announce that may serve or a warming object to remove, a split
// step of the resize, a drain or return step (0: now), or a negative
// duration when none is pending (no map, or an operator freeze holding the
// steps). A step that moved nothing (blocked) waits a probe interval.
// l.mu must be held.
func (l *Loop) untilNextStepLocked(now time.Time) time.Duration {
	if l.current == nil {
		return -1
	}
	next := l.announces.until(&l.remote, now)
	if l.freeze.doc != nil {
		return next
	}
	if d := l.resizes.untilSplit(l.resizes.entry, l.current, len(l.drains.drained()) > 0, &l.remote, now); d >= 0 && (next < 0 || d < next) {
		next = d
	}
	if d := l.drains.untilNextStep(l.tr, &l.remote, l.current, now); d >= 0 && (next < 0 || d < next) {
		next = d
	}
	return next
}

// NextStepIn returns how long until the next drain or return step is due,
// and false when none is pending (no drain, every zone at its target, an
// operator freeze holding them, or this process does not lead: only the
// leader steps). A caller that drives passes itself (the simulator)
// schedules a pass then.
func (l *Loop) NextStepIn() (time.Duration, bool) {
	now := l.clock.Now()
	if _, leading := l.lead.Lease(); !leading {
		return -1, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	d := l.untilNextStepLocked(now)
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
