package controlloop

import (
	"time"

	"github.com/mcrib/mcrib/cachenodes"
)

// Instants written by other hosts. The replicas' clocks may disagree by
// any amount (a host whose clock is an hour behind is a misconfiguration,
// not an impossibility), so no instant another host wrote is ever compared
// with this process's clock. What crosses hosts are durations, each
// measured on one host's clock, and an anchor: the moment this process
// first read the document that carries them, which comes after the
// writer wrote it. So each remote instant is placed on this clock at
//
//	first read − (the writer's own anchor − the instant)
//
// where the writer's anchor is written in the same document by the same
// clock: a vote's at for its sinces, a slot map's updated_at for its
// warmings' until and for the replacement times stored with it. A drain
// entry's last_step_at is its own anchor (the step was made when the
// document was written). The placed instant is never earlier than the
// real one; it is later by the delay between the write and this process's
// first read (up to a pass when the process was reading all along). So
// the error always lies on the safe side: a hold is never shorter, a
// warming never ends early, a drain step never comes before its interval,
// the replacement ceiling never forgets a replacement early; the flush
// decision comes at most that delay late. A placed instant is kept while
// the raw value the writer wrote stays the same, so that rewriting a
// document (a vote republished, the map rewritten) never moves it again.
// An instant this process wrote itself is its own clock's.
//
// A warming's until is the one exception to "written anew by this clock":
// whoever rewrites the map keeps it as first written, because clients
// compare it with their own clocks (section 7's client guarantee). So a
// warming is placed once, from the map in which this process first saw
// it, and keeps that place for as long as the slot warms from the same
// node until the same raw instant, whoever wrote the map since.
//
// A vote without at (an older mcrib) is read as written when first read:
// its nodes are placed as unreachable from that moment.

// remoteClock holds what a process learned of the documents other hosts
// wrote, to place their instants. It is guarded by the Loop's mutex.
type remoteClock struct {
	// votes are the sightings of the replicas' votes, by replica ID.
	votes map[string]*voteSighting
	// mapIndex is the version of the slot map last read, mapShift the
	// duration that places its instants here (first read − updated_at);
	// wrote is the map this process wrote last, at its own updated_at.
	mapIndex uint64
	mapShift time.Duration
	wrote    *cachenodes.SlotMap
	// steps places each zone's last_step_at, by zone.
	steps map[string]placed
	// resizeStep places the resize entry's last_step_at.
	resizeStep *placed
	// warms places each warming's until, by slot.
	warms map[int]placedWarm
}

// placedWarm is one warming's end of reads (ended_at, or until) as
// written (by the warm source it belongs to) and as placed on this clock.
type placedWarm struct {
	node string
	placed
}

// placeWarmings returns when clients stop reading each warming of m
// (its ended_at, or its until: ReadsUntil) on this clock, one entry per
// slot (zero for a slot that does not warm), for a map whose instants
// shift places here: a warming seen before keeps its place while that
// instant stays as written, a new one (or a new ended_at) is placed at it
// + shift. It forgets the warmings m no longer has. Nil when nothing
// warms. The warming object is removed WarmWriteGrace after it.
func (r *remoteClock) placeWarmings(m *cachenodes.SlotMap, shift time.Duration) []time.Time {
	if m == nil || !m.AnyWarming() {
		r.warms = nil
		return nil
	}
	if r.warms == nil {
		r.warms = make(map[int]placedWarm)
	}
	ends := make([]time.Time, m.NumSlots())
	for i := range ends {
		ws := m.Warming(i)
		if ws == nil {
			delete(r.warms, i)
			continue
		}
		p, ok := r.warms[i]
		if reads := ws.ReadsUntil(); !ok || p.node != ws.NodeID || !p.raw.Equal(reads) {
			p = placedWarm{node: ws.NodeID, placed: placed{raw: reads, local: reads.Add(shift)}}
			r.warms[i] = p
		}
		ends[i] = p.local
	}
	for i := range r.warms {
		if i >= m.NumSlots() {
			delete(r.warms, i)
		}
	}
	return ends
}

// voteSighting is what a process saw of one replica's vote.
type voteSighting struct {
	session string
	at      time.Time // the vote's at, as written
	seen    time.Time // when this version was first read, on this clock
	nodes   map[string]placed
}

// placed is a remote instant as written (raw) and as placed on this clock.
type placed struct {
	raw, local time.Time
}

// placeVotes returns the peers' votes (every vote but self's) with their
// instants placed on this clock at now, and forgets the replicas that no
// longer vote.
func (r *remoteClock) placeVotes(votes map[string]Vote, self string, now time.Time) map[string]map[string]time.Time {
	if r.votes == nil {
		r.votes = make(map[string]*voteSighting)
	}
	out := make(map[string]map[string]time.Time, len(votes))
	for id, v := range votes {
		if id == self {
			continue
		}
		vs := r.votes[id]
		if vs == nil || vs.session != v.Session {
			vs = &voteSighting{session: v.Session, at: v.At, seen: now, nodes: map[string]placed{}}
			r.votes[id] = vs
		} else if !vs.at.Equal(v.At) {
			vs.at, vs.seen = v.At, now
		}
		peer := make(map[string]time.Time, len(v.Unreachable))
		for node, since := range v.Unreachable {
			p, ok := vs.nodes[node]
			if !ok || !p.raw.Equal(since) {
				local := vs.seen
				if !v.At.IsZero() {
					local = vs.seen.Add(-max(v.At.Sub(since), 0))
				}
				p = placed{raw: since, local: local}
				vs.nodes[node] = p
			}
			peer[node] = p.local
		}
		for node := range vs.nodes {
			if _, ok := v.Unreachable[node]; !ok {
				delete(vs.nodes, node)
			}
		}
		out[id] = peer
	}
	for id := range r.votes {
		if _, ok := votes[id]; !ok || id == self {
			delete(r.votes, id)
		}
	}
	return out
}

// shiftOf returns the duration that places the instants of m, the slot
// map read at version index, on this clock (read at now): zero for the map
// this process wrote itself, else its first read less its updated_at.
func (r *remoteClock) shiftOf(m *cachenodes.SlotMap, index uint64, now time.Time) time.Duration {
	if m == nil {
		return 0
	}
	if index != r.mapIndex || index == 0 {
		r.mapIndex = index
		if w := r.wrote; w != nil && m.Equal(w) && m.UpdatedAt().Equal(w.UpdatedAt()) {
			r.mapShift = 0
		} else {
			r.mapShift = now.Sub(m.UpdatedAt())
		}
	}
	return r.mapShift
}

// wroteMap records that this process wrote m: its instants are this
// clock's.
func (r *remoteClock) wroteMap(m *cachenodes.SlotMap) { r.wrote = m }

// placeStep returns zone's last step, raw as the drain entry has it,
// placed on this clock (first read at now); nil when no step was made.
func (r *remoteClock) placeStep(zone string, raw *time.Time, now time.Time) *time.Time {
	if raw == nil {
		return nil
	}
	if r.steps == nil {
		r.steps = make(map[string]placed)
	}
	p, ok := r.steps[zone]
	if !ok || !p.raw.Equal(*raw) {
		p = placed{raw: *raw, local: now}
		r.steps[zone] = p
	}
	local := p.local
	return &local
}

// steppedAt records a step this process made for zone at now (written as
// now): its own clock's.
func (r *remoteClock) steppedAt(zone string, now time.Time) {
	if r.steps == nil {
		r.steps = make(map[string]placed)
	}
	r.steps[zone] = placed{raw: now.UTC(), local: now}
}

// shifted returns times moved by d.
func shifted(times []time.Time, d time.Duration) []time.Time {
	if d == 0 || len(times) == 0 {
		return times
	}
	out := make([]time.Time, len(times))
	for i, t := range times {
		out[i] = t.Add(d)
	}
	return out
}

// placeResizeStep returns the resize entry's last step, raw as stored,
// placed on this clock (first read at now), as placeStep does a zone's.
func (r *remoteClock) placeResizeStep(raw *time.Time, now time.Time) *time.Time {
	if raw == nil {
		return nil
	}
	if r.resizeStep == nil || !r.resizeStep.raw.Equal(*raw) {
		r.resizeStep = &placed{raw: *raw, local: now}
	}
	local := r.resizeStep.local
	return &local
}

// resizeSteppedAt records a split step (or the first write) this process
// made at now.
func (r *remoteClock) resizeSteppedAt(now time.Time) {
	r.resizeStep = &placed{raw: now.UTC(), local: now}
}
