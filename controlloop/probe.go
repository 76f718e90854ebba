package controlloop

import (
	"context"
	"hash/fnv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/hitrate"
)

// Prober asks one memcached directly; *cachenodes.Prober implements it.
type Prober interface {
	Stats(ctx context.Context, addr string) (cachenodes.Stats, error)
	Flush(ctx context.Context, addr string) error
}

var _ Prober = (*cachenodes.Prober)(nil)

// maxProbesInFlight bounds the probes running at once. A probe that gets no
// answer holds its place for at most the prober's timeout, so this many
// silent nodes can hang at once before a healthy node's probe waits.
const maxProbesInFlight = 1024

// probeLoop probes every tracked node once at the start, then each node on
// its own schedule, every probe interval of the loop's clock, until ctx
// ends. Probes are scheduled per node, not as one batch that waits for its
// slowest: a node that does not answer never delays the verdict on another.
// The second probe of a node comes a little later than one interval after
// the first (by up to a quarter interval, fixed per node), so the probes of
// a large pool spread over the interval instead of bursting together.
func (l *Loop) probeLoop(ctx context.Context) {
	l.probeRound(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	sem := make(chan struct{}, maxProbesInFlight)
	sched := make(map[string]*probeSlot)
	timer := l.clock.NewTimer(l.opts.ProbeInterval)
	defer timer.Stop()
	for {
		due, wait := l.dueProbes(sched, l.clock.Now())
		for _, p := range due {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			wg.Go(func() {
				defer func() { <-sem }()
				defer p.inflight.Store(false)
				st, err := l.opts.Prober.Stats(ctx, p.addr)
				if ctx.Err() == nil {
					l.observeProbe(p.id, p.addr, st, err)
				}
			})
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-timer.C():
		case <-l.probeWake:
		}
	}
}

// probeSlot is the schedule of one node's probes.
type probeSlot struct {
	id, addr string
	due      time.Time
	started  bool
	inflight atomic.Bool
}

// dueProbes brings sched in line with the tracked nodes (a new node, or one
// whose address changed, is due at once; a forgotten one leaves), marks the
// probes due at now as in flight and moves them one interval on, and
// returns them with the wait until the next one is due.
func (l *Loop) dueProbes(sched map[string]*probeSlot, now time.Time) ([]*probeSlot, time.Duration) {
	every := l.opts.ProbeInterval
	l.mu.Lock()
	for id := range sched {
		if _, ok := l.tr.nodes[id]; !ok {
			delete(sched, id)
		}
	}
	for id, s := range l.tr.nodes {
		if p, ok := sched[id]; !ok || p.addr != s.node.Addr {
			sched[id] = &probeSlot{id: id, addr: s.node.Addr, due: now}
		}
	}
	l.mu.Unlock()
	var due []*probeSlot
	next := now.Add(every)
	for _, p := range sched {
		if !p.due.After(now) && !p.inflight.Load() {
			p.inflight.Store(true)
			due = append(due, p)
			step := every
			if !p.started {
				step += spread(p.id, every/4)
				p.started = true
			}
			p.due = p.due.Add(step)
			if !p.due.After(now) {
				p.due = now.Add(every) // fell behind: no burst to catch up
			}
		}
		if p.due.Before(next) {
			next = p.due
		}
	}
	return due, max(next.Sub(now), time.Millisecond)
}

// spread returns a fixed offset in [0, d) for id.
func spread(id string, d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	return time.Duration(h.Sum64() % uint64(d))
}

// wakeProbes asks the probe loop to look for new nodes now.
func (l *Loop) wakeProbes() {
	select {
	case l.probeWake <- struct{}{}:
	default:
	}
}

// observeProbe hands one probe result to the tracker (unless the node is
// gone or moved meanwhile), tells the node transitions it caused, and asks
// for a pass when it changed anything.
func (l *Loop) observeProbe(id, addr string, st cachenodes.Stats, err error) {
	now := l.clock.Now()
	l.mu.Lock()
	s, ok := l.tr.nodes[id]
	if !ok || s.node.Addr != addr {
		l.mu.Unlock()
		return
	}
	holds := l.current != nil && l.current.SlotOf(id) >= 0
	l.tr.observeProbe(id, st, err, holds, now)
	evs := l.tr.drain()
	changed := len(evs) > 0 || l.tr.localChanged
	var r report
	l.nodeEventsLocked(&r, evs)
	l.mu.Unlock()
	l.publish(context.Background(), &r)
	if changed {
		l.Kick()
	}
}

// probeRound probes every tracked node once now and waits for all of them;
// each result is taken as it comes. The probe loop starts with one, so the
// first pass decides with every node probed.
func (l *Loop) probeRound(ctx context.Context) {
	l.mu.Lock()
	targets := make([]cachenodes.Node, 0, len(l.tr.nodes))
	for _, s := range l.tr.nodes {
		targets = append(targets, s.node)
	}
	l.mu.Unlock()
	if len(targets) == 0 {
		return
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxProbesInFlight)
	for _, n := range targets {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			st, err := l.opts.Prober.Stats(ctx, n.Addr)
			if ctx.Err() == nil {
				l.observeProbe(n.ID, n.Addr, st, err)
			}
		})
	}
	wg.Wait()
	l.Kick()
}

// HitCounters returns the hit counters of every node that holds a served
// slot, and of every warm source of one (marked
// hitrate.Counters.WarmSourceOf with the holder it warms), as their latest
// probes read them, and what it knows of the slots (hitrate.Slots): how
// many, how many have no live holder (vacant, or the holder unreachable by
// the pool's verdict, the slots the status's slots_unserved counts; their
// holders' counters are left out, and the meters count their share of the
// gets as misses), and how many served slots' holders the latest probes
// could not read (unreachable from this process, or not probed yet). The
// nodes of the slots planned moves touch are marked Planned
// (plannedmoves.go). It has the shape of ratelimit.StatsFunc, so the boot
// limiter measures the hit rate from the loop's own probes instead of a
// second round of reads; the counters are at most one probe interval old.
// It does no I/O. Each call is one stats reading: it also feeds the
// per-zone hit-rate meters (zones.go) with the counters of each zone's
// slots, a warming slot's warm source in its holder's zone, so a zone's
// hit rate is as current as the pool's, and the warm watch
// (warmwatch.go) with the counters of each warming slot. A twin of a resize counts as a
// slot of its holder's zone, served or not as its holder is; its gets are
// read at its holder.
func (l *Loop) HitCounters(context.Context) (map[string]hitrate.Counters, hitrate.Slots) {
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.current == nil {
		return map[string]hitrate.Counters{}, hitrate.Slots{}
	}
	out := make(map[string]hitrate.Counters, l.current.NumSlots())
	slots := hitrate.Slots{Total: l.current.NumSlots()}
	zones := map[string]*zoneReading{}
	for i, n := range l.current.Slots() {
		if n.IsZero() {
			slots.Unserved++ // vacant: in no zone
			continue
		}
		z := zones[n.AZ]
		if z == nil {
			z = &zoneReading{nodes: map[string]hitrate.Counters{}}
			zones[n.AZ] = z
		}
		z.slots.Total++
		if l.tr.unserved(n) {
			slots.Unserved++
			z.slots.Unserved++
			continue
		}
		if l.current.IsTwin(i) {
			continue // a twin's holder is slot s's, read there
		}
		c, ok := l.countersLocked(n.ID)
		if !ok {
			slots.Unreadable++
			z.slots.Unreadable++
			continue
		}
		c.Planned = l.moves.planned(l.current, i, now)
		out[n.ID] = c
		z.nodes[n.ID] = c
		w := l.current.Warming(i)
		if w == nil {
			continue
		}
		wc, ok := l.countersLocked(w.NodeID)
		if !ok {
			continue
		}
		if s := l.current.SlotOf(w.NodeID); s >= 0 {
			// A split's source holds slot s (read above: s < i): its gets
			// are slot s's and those forwarded to it
			// (hitrate.Counters.HoldsSlot). The pair counts as one in the
			// pool, and in the zone when both are in it; a twin split to
			// another zone counts its forwarded gets as hits of slot s's
			// zone and misses of its own (the spread takes slot s's zone
			// first).
			if sc, seen := out[w.NodeID]; seen {
				wc.Planned = sc.Planned
			}
			wc.WarmSourceOf, wc.HoldsSlot, wc.Planned = n.ID, true, wc.Planned || c.Planned
			out[w.NodeID] = wc
			if zs := l.current.Slot(s).AZ; zs == n.AZ {
				z.nodes[w.NodeID] = wc
			}
			continue
		}
		wc.WarmSourceOf, wc.Planned = n.ID, true
		out[w.NodeID] = wc
		z.nodes[w.NodeID] = wc
	}
	l.zones.observe(now, zones)
	l.readWarmingsLocked()
	l.gets.read(out, func(id string) time.Time { return l.tr.nodes[id].statsAt })
	return out, slots
}

// countersLocked returns node id's counters as its latest probe read
// them, less the gets of the leader's copies from it (warmcopies.go); ok
// is false when it could not be read (unreachable, or not probed
// yet). l.mu must be held.
func (l *Loop) countersLocked(id string) (hitrate.Counters, bool) {
	s, ok := l.tr.nodes[id]
	if !ok || !s.probed || !s.failingSince.IsZero() || !s.haveStats {
		return hitrate.Counters{}, false
	}
	c := hitrate.Counters{Hits: s.stats.GetHits, Misses: s.stats.GetMisses, PID: s.stats.PID, Uptime: s.stats.Uptime}
	return l.copies.discount(id, c), true // the copy's gets are no application's
}
