package controlloop

import (
	"fmt"
	"slices"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/slotplan"
)

// The resize's split steps (resize.go): when the next is due, the entry
// the pass writes with its map, and what the write records.

// splitDue returns the size of the split step due at now over prev for
// entry e (0: none): twins remain, the entry splits (not stopped), no zone
// is drained, its step interval has passed since its last step (placed on
// this clock by remote), and a probe interval since a due step that moved
// nothing.
func (rs *resizeState) splitDue(e *mcribapi.ResizeEntry, prev *cachenodes.SlotMap, drained bool, remote *remoteClock, now time.Time) int {
	if rs.untilSplit(e, prev, drained, remote, now) != 0 {
		return 0
	}
	return e.StepSize()
}

// untilSplit returns how long until the next split step of e over prev
// is due (0: now), or a negative duration when none is pending (drained:
// a zone is drained).
func (rs *resizeState) untilSplit(e *mcribapi.ResizeEntry, prev *cachenodes.SlotMap, drained bool, remote *remoteClock, now time.Time) time.Duration {
	if e == nil || rs.corrupt || prev == nil || prev.NumSlots() != e.To || prev.NumTwins() == 0 ||
		e.State == mcribapi.ResizeStopped || e.State == mcribapi.ResizeDone || drained {
		return -1
	}
	d := time.Duration(0)
	if last := remote.placeResizeStep(e.LastStepAt, now); last != nil {
		d = max(d, last.Add(e.Interval()).Sub(now))
	}
	if !rs.blockedAt.IsZero() {
		d = max(d, rs.blockedAt.Add(rs.probe).Sub(now))
	}
	return d
}

// next returns the resize document to store with next, built from d with
// the placements done, or nil when it does not change: the first write's
// or a split's time as last_step_at, the twins left and split, what
// stopped the step in this pass as blocked (drains is the drain document
// known, fault the fault of discovery, "" when none), done when no twin is
// left, and no entry once a done one has waited a step interval (its last
// step placed by remote) and its last split's warming ended. It returns
// the events of the written entry too.
func (rs *resizeState) next(d resizeDecision, plan slotplan.Plan, next *cachenodes.SlotMap, done []slotplan.Placement, drains *mcribapi.DrainDoc, fault string, remote *remoteClock, now time.Time) (*mcribapi.ResizeDoc, []mcribapi.Event) {
	e := d.entry
	if e == nil || rs.corrupt {
		return nil, nil
	}
	c := *e
	events := slices.Clone(d.events)
	if slices.ContainsFunc(done, func(p slotplan.Placement) bool { return p.Reason == mcribapi.EvictionSplit }) {
		t := now.UTC()
		c.LastStepAt = &t
	}
	c.Twins = c.From
	if next.NumSlots() == c.To {
		c.Twins = twinsLeft(next, c.Interval())
	}
	c.Split = c.From - c.Twins
	// Done once no twin is left in the map: a twin announced to split may
	// still be dropped (and split again later).
	if next.NumSlots() == c.To && next.NumTwins() == 0 && c.State != mcribapi.ResizeDone {
		c.State = mcribapi.ResizeDone
		events = append(events, mcribapi.Event{Kind: mcribapi.EventResizeOver,
			Reason: fmt.Sprintf("every twin of the resize from %d to %d slots is split: the pool has %d slots on their own nodes", c.From, c.To, c.To)})
	}
	switch {
	case c.State == mcribapi.ResizeDone || c.State == mcribapi.ResizeStopped:
		c.Blocked = ""
	case drains != nil && len(drains.Zones) > 0:
		c.Blocked = fmt.Sprintf("%s drained: the splits wait until it is undrained", zoneList(drains.Zones))
	case fault != "":
		c.Blocked = discoveryFaultSplits
	case plan.Split != nil:
		c.Blocked = plan.Split.Blocked
	}
	if c.State == mcribapi.ResizeDone && !d.changed && c.LastStepAt != nil {
		last := remote.placeResizeStep(c.LastStepAt, now)
		if !now.Before(last.Add(c.Interval())) && !splitWarming(next, c.From) {
			return &mcribapi.ResizeDoc{}, events
		}
	}
	if !d.changed && sameResizeEntry(&c, e) {
		return nil, events
	}
	return &mcribapi.ResizeDoc{Resize: &c}, events
}

// splitWarming reports whether a split slot of m still has its warming
// object from the holder of the slot it was a twin of, or a twin is still
// announced to split (from: the slot count before).
func splitWarming(m *cachenodes.SlotMap, from int) bool {
	if (!m.AnyWarming() && !m.AnyIncoming()) || m.ResizedFrom() != from {
		return false
	}
	for t := from; t < m.NumSlots(); t++ {
		if w := m.Warming(t); w != nil && m.SlotOf(w.NodeID) == t-from {
			return true
		}
		if ni := m.Incoming(t); ni != nil && m.IsTwin(t) && !ni.Equal(m.Incoming(t-from)) {
			return true
		}
	}
	return false
}

// sameResizeEntry reports whether a and b are the same entry.
func sameResizeEntry(a, b *mcribapi.ResizeEntry) bool {
	x, y := *a, *b
	sameStep := (x.LastStepAt == nil) == (y.LastStepAt == nil) && (x.LastStepAt == nil || x.LastStepAt.Equal(*y.LastStepAt))
	if !sameStep || !x.At.Equal(y.At) {
		return false
	}
	x.LastStepAt, y.LastStepAt, x.At, y.At = nil, nil, time.Time{}, time.Time{}
	return x == y
}

// wrote makes doc, written by the leader's pass at now, the resize known
// (its step placed on this clock by remote), and notes whether the split
// step due (tried: the plan's outcome, nil when none was due) moved
// nothing.
func (rs *resizeState) wrote(doc *mcribapi.ResizeDoc, tried *slotplan.StepOutcome, remote *remoteClock, now time.Time) {
	if doc != nil {
		old := rs.entry
		rs.entry = doc.Resize
		if e := doc.Resize; e != nil && e.LastStepAt != nil && e.LastStepAt.Equal(now.UTC()) && (old == nil || old.LastStepAt == nil || !old.LastStepAt.Equal(*e.LastStepAt)) {
			remote.resizeSteppedAt(now)
		}
	}
	switch {
	case tried == nil:
	case tried.Moved > 0:
		rs.blockedAt = time.Time{}
	default:
		rs.blockedAt = now
	}
}
