package controlloop

import (
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/slotplan"
)

// Announce, then serve (docs/api.md, "Announce, then serve"). The state of
// an announce lives in the slot map (the slot's incoming node, its
// serves_at and until), so whichever process leads carries it on; slotplan
// decides when it serves and when it is dropped. What this file keeps is
// what a process knows beyond the map: why it announced (a new leader
// infers it from the pool), when its own announce may serve on its clock
// (AnnounceLead after its write completed, at the earliest), where an
// announce another leader wrote is placed on this clock (its serves_at
// placed as remoteclock.go places a map's instants, plus ClockSkew), and
// whether this process has its own verdict on the nodes since it first saw
// it. It also marks, for every incoming node and every warming's new
// holder, how many restarts of its memcached this process had seen when it
// flushed the node or first saw it so (tracker's restarts): one more since
// and the node lost the tombstones the clients left in it. And it keeps
// the warmings whose ended_at write took longer than ClockSkew, to write
// ended_at again.

// announceState is what this process knows of the announces and ended
// warmings beyond the map. Its zero value knows none; it is not safe for
// concurrent use (the Loop's mutex guards it).
type announceState struct {
	// own are the announces this process wrote, by slot.
	own map[int]ownAnnounce
	// seen are the announces of other leaders, by slot, as first seen.
	seen map[int]seenAnnounce
	// marks are the restarts each incoming node or warming holder had
	// when this process flushed it or first saw it so, by node ID.
	marks map[string]uint64
	// rewrite are the slots whose ended_at is written again, with the
	// ended_at written (a later write of another one clears it).
	rewrite map[int]time.Time
}

// ownAnnounce is an announce this process wrote.
type ownAnnounce struct {
	node   string
	raw    time.Time // serves_at as written
	serves time.Time // when it may serve on this clock
	reason mcribapi.EvictionReason
}

// seenAnnounce is an announce another leader wrote, as this process first
// saw it.
type seenAnnounce struct {
	node   string
	raw    time.Time     // serves_at as written
	serves time.Time     // placed on this clock, plus ClockSkew
	shift  time.Duration // the shift that placed it
	at     time.Time     // when this process first saw it
}

// views returns what this process knows of the announces of m, whose
// instants shift places on this clock, at now, with the verdicts of tr:
// one entry per slot (nil when none is announced). It forgets the
// announces m no longer has and marks the restarts of the incoming nodes
// and warming holders it sees for the first time.
func (a *announceState) views(tr *tracker, m *cachenodes.SlotMap, shift time.Duration, now time.Time) []slotplan.IncomingView {
	a.markRestarts(tr, m)
	if m == nil || !m.AnyIncoming() {
		a.own, a.seen = nil, nil
		return nil
	}
	out := make([]slotplan.IncomingView, m.NumSlots())
	keep := map[int]bool{}
	for i := range m.NumSlots() {
		ni := m.Incoming(i)
		if ni == nil {
			continue
		}
		keep[i] = true
		if o, ok := a.own[i]; ok && o.node == ni.NodeID && o.raw.Equal(ni.ServesAt) {
			out[i] = slotplan.IncomingView{ServesAt: o.serves, Judged: true, Own: true, Reason: o.reason}
			continue
		}
		s, ok := a.seen[i]
		if !ok || s.node != ni.NodeID || !s.raw.Equal(ni.ServesAt) {
			s = seenAnnounce{node: ni.NodeID, raw: ni.ServesAt, serves: ni.ServesAt.Add(shift + cachenodes.ClockSkew), shift: shift, at: now}
			if a.seen == nil {
				a.seen = make(map[int]seenAnnounce)
			}
			a.seen[i] = s
		}
		holder := m.Slot(i)
		out[i] = slotplan.IncomingView{ServesAt: s.serves, Judged: tr.haveAnswer && tr.judgedSince(ni.NodeID, s.at) && (holder.IsZero() || tr.judgedSince(holder.ID, s.at))}
	}
	for i := range a.own {
		if !keep[i] {
			delete(a.own, i)
		}
	}
	for i := range a.seen {
		if !keep[i] {
			delete(a.seen, i)
		}
	}
	return out
}

// judgedSince reports whether this process probed node id since at (a
// reading, or a failure): its own verdict, not one inherited.
func (t *tracker) judgedSince(id string, at time.Time) bool {
	s, ok := t.nodes[id]
	if !ok || !s.probed {
		return false
	}
	return !s.statsAt.Before(at) || !s.lastFailed.Before(at)
}

// markRestarts marks the restarts (as tr counts them) of each incoming
// node and warming holder of m not marked yet, and forgets the marks of
// nodes that are neither any more.
func (a *announceState) markRestarts(tr *tracker, m *cachenodes.SlotMap) {
	keep := map[string]bool{}
	if m != nil && (m.AnyIncoming() || m.AnyWarming()) {
		for i := range m.NumSlots() {
			if ni := m.Incoming(i); ni != nil {
				keep[ni.NodeID] = true
			}
			if m.Warming(i) != nil {
				keep[m.Slot(i).ID] = true
			}
		}
	}
	for id := range a.marks {
		if !keep[id] {
			delete(a.marks, id)
		}
	}
	for id := range keep {
		if _, ok := a.marks[id]; ok {
			continue
		}
		if s := tr.nodes[id]; s != nil {
			if a.marks == nil {
				a.marks = make(map[string]uint64)
			}
			a.marks[id] = s.restarts
		}
	}
}

// restarted reports whether node id's memcached restarted (as tr counts
// its restarts) since this process marked it (its flush, or its first
// sight as an incoming node or a warming holder).
func (a *announceState) restarted(tr *tracker, id string) bool {
	mark, ok := a.marks[id]
	s := tr.nodes[id]
	return ok && s != nil && s.restarts > mark
}

// announcing marks, before the flushes of the announces in plan, the
// restarts their nodes have had (as tr counts them): a restart after the
// flush is one more.
func (a *announceState) announcing(tr *tracker, plan slotplan.Plan) {
	if plan.FirstFill {
		return
	}
	for _, p := range plan.Placements {
		if s := tr.nodes[p.Node.ID]; s != nil {
			if a.marks == nil {
				a.marks = make(map[string]uint64)
			}
			a.marks[p.Node.ID] = s.restarts
		}
	}
}

// wrote records what a written map next holds of this process's pass:
// the announces done, serving no earlier than AnnounceLead after the write
// completed (done at wroteAt, on this clock), and the ended warmings whose
// write took longer than ClockSkew (from start), to write again.
func (a *announceState) wrote(plan slotplan.Plan, done []slotplan.Placement, next *cachenodes.SlotMap, start, wroteAt time.Time) {
	if !plan.FirstFill {
		for _, p := range done {
			ni := next.Incoming(p.Slot)
			if ni == nil || ni.NodeID != p.Node.ID {
				continue
			}
			if a.own == nil {
				a.own = make(map[int]ownAnnounce)
			}
			serves := ni.ServesAt
			if late := wroteAt.Add(cachenodes.AnnounceLead); late.After(serves) {
				serves = late
			}
			a.own[p.Slot] = ownAnnounce{node: p.Node.ID, raw: ni.ServesAt, serves: serves, reason: p.Reason}
		}
	}
	for i := range a.rewrite {
		if w := next.Warming(i); w == nil || !w.EndedAt.Equal(a.rewrite[i]) {
			delete(a.rewrite, i)
		}
	}
	if wroteAt.Sub(start) <= cachenodes.ClockSkew {
		for _, e := range plan.EndWarming {
			delete(a.rewrite, e.Slot)
		}
		return
	}
	ended := make([]int, 0, len(plan.EndWarming)+len(a.rewrite))
	for _, e := range plan.EndWarming {
		ended = append(ended, e.Slot)
	}
	for i := range a.rewrite {
		ended = append(ended, i)
	}
	for _, i := range ended {
		if w := next.Warming(i); w != nil && w.Ended() {
			if a.rewrite == nil {
				a.rewrite = make(map[int]time.Time)
			}
			a.rewrite[i] = w.EndedAt
		}
	}
}

// rewriteSlots returns the slots whose ended_at the next write writes
// again (nil when none).
func (a *announceState) rewriteSlots() map[int]bool {
	if len(a.rewrite) == 0 {
		return nil
	}
	out := make(map[int]bool, len(a.rewrite))
	for i := range a.rewrite {
		out[i] = true
	}
	return out
}

// givenBack returns the replacement times the drops of plan give back, as
// the ceiling holds them: an own announce counted at its write (serves_at
// − AnnounceLead on this clock), another leader's at that instant placed
// as its map placed it.
func (a *announceState) givenBack(plan slotplan.Plan) []time.Time {
	var out []time.Time
	for _, d := range plan.Drops {
		if !d.GiveBack {
			continue
		}
		at := d.ServesAt.Add(-cachenodes.AnnounceLead)
		if s, ok := a.seen[d.Slot]; ok && s.raw.Equal(d.ServesAt) {
			at = at.Add(s.shift)
		}
		out = append(out, at)
	}
	return out
}

// until returns how long until the earliest announce of the current map
// may serve, or a warming object of it placed by remote is removed (0:
// now), or a negative duration when neither is pending: the leader's pass
// is due then.
func (a *announceState) until(remote *remoteClock, now time.Time) time.Duration {
	next := time.Duration(-1)
	at := func(t time.Time) {
		if d := max(t.Sub(now), 0); next < 0 || d < next {
			next = d
		}
	}
	for _, o := range a.own {
		at(o.serves)
	}
	for _, s := range a.seen {
		at(s.serves)
	}
	for _, w := range remote.warms {
		at(w.local.Add(cachenodes.WarmWriteGrace))
	}
	return next
}
