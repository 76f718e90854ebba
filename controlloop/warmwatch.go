package controlloop

import (
	"slices"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/hitrate"
	"github.com/mcrib/mcrib/slotplan"
)

// A warming ends when its new holder is warm (docs/api.md, "Converged").
// The loop reads, at every stats read (HitCounters), the counters of each
// warming slot's warm source A and new holder B, as their latest probes
// read them (A's less the leader's copy's gets, warmcopies.go), and keeps
// one interval per read; the leader hands them to slotplan.Decide, whose
// slotplan.WarmRule judges them. Every replica keeps them, so that a new
// leader judges from what it read itself.

// warmWatch holds what the loop read of each warming slot of its map, by
// slot. Its zero value is ready to use; the loop's mutex guards it.
type warmWatch struct {
	slots map[int]*watchedWarming
}

// watchedWarming is one warming slot: its two nodes, what was read of
// them, and its last reading (the baseline of the next interval).
type watchedWarming struct {
	source, holder string
	history        slotplan.WarmHistory
	last           warmReading
	haveLast       bool
}

// warmReading is one stats read of a warming slot's two nodes.
type warmReading struct {
	// at is when B's stats were read (the probe's time).
	at             time.Time
	source, holder hitrate.Counters
}

// keepIntervals bounds the intervals kept per slot: the longest window
// of the rule holds this many and more would never be judged.
func keepIntervals(rule slotplan.WarmRule) int {
	if rule.StatsInterval <= 0 {
		return 64
	}
	return int(rule.Window()/rule.StatsInterval) + 2
}

// track brings w in line with the warmings of m, at now: a new warming
// (or one whose nodes changed) starts a history at now, one that left m
// is forgotten. A twin carries slot s's warming and is not tracked.
func (w *warmWatch) track(m *cachenodes.SlotMap, now time.Time) {
	if m == nil || !m.AnyWarming() {
		w.slots = nil
		return
	}
	if w.slots == nil {
		w.slots = make(map[int]*watchedWarming)
	}
	for i := range m.NumSlots() {
		ws := m.Warming(i)
		if ws == nil || m.IsTwin(i) {
			delete(w.slots, i)
			continue
		}
		holder := m.Slot(i).ID
		if s, ok := w.slots[i]; ok && s.source == ws.NodeID && s.holder == holder {
			continue
		}
		w.slots[i] = &watchedWarming{source: ws.NodeID, holder: holder,
			history: slotplan.WarmHistory{Start: now, Split: m.SlotOf(ws.NodeID) >= 0}}
	}
	for i := range w.slots {
		if i >= m.NumSlots() {
			delete(w.slots, i)
		}
	}
}

// read takes one stats read: for each tracked slot whose two nodes read
// (counters returns a node's counters, less the copy's, and when they
// were read), the interval since its last reading, kept up to the rule's
// window. A node that restarted in between (another pid, counters gone
// back) or that did not read gives no interval: the next one starts
// afresh. It reports whether a warming not ended yet converged with this
// read, for the loop to ask for a pass.
func (w *warmWatch) read(m *cachenodes.SlotMap, rule *slotplan.WarmRule, counters func(id string) (hitrate.Counters, time.Time, bool)) (converged bool) {
	for i, s := range w.slots {
		src, _, okA := counters(s.source)
		hold, at, okB := counters(s.holder)
		if !okA || !okB {
			s.haveLast = false
			continue
		}
		cur := warmReading{at: at, source: src, holder: hold}
		if s.haveLast && !at.After(s.last.at) {
			continue // B was not probed again since: no interval yet
		}
		if s.haveLast {
			if iv, ok := interval(s.last, cur); ok {
				s.history.Intervals = append(s.history.Intervals, iv)
				if n := len(s.history.Intervals) - keepIntervals(ruleOr(rule)); n > 0 {
					s.history.Intervals = slices.Delete(s.history.Intervals, 0, n)
				}
				if ws := m.Warming(i); rule != nil && ws != nil && !ws.Ended() && rule.Judge(&s.history).Converged {
					converged = true
				}
			}
		}
		s.last, s.haveLast = cur, true
	}
	return converged
}

func ruleOr(r *slotplan.WarmRule) slotplan.WarmRule {
	if r == nil {
		return slotplan.WarmRule{}
	}
	return *r
}

// interval returns the increase from prev to cur as one interval; false
// when a node restarted or its counters went back in between.
func interval(prev, cur warmReading) (slotplan.WarmInterval, bool) {
	grew := func(a, b hitrate.Counters) bool {
		return (a.PID == 0 || b.PID == 0 || a.PID == b.PID) && b.Hits >= a.Hits && b.Misses >= a.Misses && b.Uptime >= a.Uptime
	}
	if !grew(prev.source, cur.source) || !grew(prev.holder, cur.holder) {
		return slotplan.WarmInterval{}, false
	}
	hh, hm := cur.holder.Hits-prev.holder.Hits, cur.holder.Misses-prev.holder.Misses
	sh, sm := cur.source.Hits-prev.source.Hits, cur.source.Misses-prev.source.Misses
	return slotplan.WarmInterval{Start: prev.at, End: cur.at,
		HolderGets: hh + hm, HolderHits: hh, SourceGets: sh + sm, SourceHits: sh}, true
}

// histories returns a copy of what was read of each tracked slot, for
// slotplan.Input.Warmth (nil when none is tracked).
func (w *warmWatch) histories() map[int]*slotplan.WarmHistory {
	if len(w.slots) == 0 {
		return nil
	}
	out := make(map[int]*slotplan.WarmHistory, len(w.slots))
	for i, s := range w.slots {
		h := s.history
		h.Intervals = slices.Clone(h.Intervals)
		out[i] = &h
	}
	return out
}

// holderRate returns the hit rate of slot i's new holder over its last
// interval, and false when unknown (not tracked, no interval yet, no get).
func (w *warmWatch) holderRate(i int) (float64, bool) {
	s, ok := w.slots[i]
	if !ok {
		return 0, false
	}
	return s.history.LastHolderRate()
}

// warmCountersLocked returns node id's counters for the warm watch: as
// its latest probe read them, less the gets of the leader's copies from
// it, with when they were read. l.mu must be held.
func (l *Loop) warmCountersLocked(id string) (hitrate.Counters, time.Time, bool) {
	c, ok := l.countersLocked(id)
	if !ok {
		return hitrate.Counters{}, time.Time{}, false
	}
	return c, l.tr.nodes[id].statsAt, true
}

// readWarmingsLocked takes one stats read of the warming slots of the
// current map and asks for a pass when a warming converged with it (it
// ends at that pass). l.mu must be held.
func (l *Loop) readWarmingsLocked() {
	l.warmth.track(l.current, l.clock.Now())
	if l.warmth.read(l.current, l.opts.Converge, l.warmCountersLocked) {
		l.Kick()
	}
}
