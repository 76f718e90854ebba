package controlloop

import (
	"context"
	"sync"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/ratelimit"
)

// Prober asks one memcached directly; *cachenodes.Prober implements it.
type Prober interface {
	Stats(ctx context.Context, addr string) (cachenodes.Stats, error)
	Flush(ctx context.Context, addr string) error
}

var _ Prober = (*cachenodes.Prober)(nil)

// maxProbesInFlight bounds the probes of one round that run at once.
const maxProbesInFlight = 64

// probeLoop probes every tracked node at once and then each probe interval
// of the loop's clock, until ctx ends.
func (l *Loop) probeLoop(ctx context.Context) {
	tick := l.clock.NewTicker(l.opts.ProbeInterval)
	defer tick.Stop()
	for {
		l.probeRound(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
		}
	}
}

type probeTarget struct {
	id, addr  string
	holdsSlot bool
	stats     cachenodes.Stats
	err       error
}

// probeRound reads the stats of every tracked node, one connection each,
// and hands the results to the tracker, which keeps each node's latest
// stats (for the hit rate, see HitCounters).
func (l *Loop) probeRound(ctx context.Context) {
	l.mu.Lock()
	targets := make([]probeTarget, 0, len(l.tr.nodes))
	for id, s := range l.tr.nodes {
		targets = append(targets, probeTarget{id: id, addr: s.node.Addr, holdsSlot: l.current != nil && l.current.SlotOf(id) >= 0})
	}
	l.mu.Unlock()
	if len(targets) == 0 {
		return
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxProbesInFlight)
	for i := range targets {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			t := &targets[i]
			t.stats, t.err = l.opts.Prober.Stats(ctx, t.addr)
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	now := l.clock.Now()
	l.mu.Lock()
	for _, t := range targets {
		l.tr.observeProbe(t.id, t.stats, t.err, t.holdsSlot, now)
	}
	evs := l.tr.drain()
	l.mu.Unlock()
	l.logEvents(evs)
	l.Kick()
}

// HitCounters returns the hit counters of every node that holds a slot, as
// its latest probe read them, and how many slot holders the latest probes
// could not read (unreachable, or not probed yet). It has the shape of
// ratelimit.StatsFunc, so the boot limiter measures the hit rate from the
// loop's own probes instead of a second round of reads; the counters are
// at most one probe interval old. It does no I/O.
func (l *Loop) HitCounters(context.Context) (map[string]ratelimit.Counters, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.current == nil {
		return map[string]ratelimit.Counters{}, 0
	}
	out := make(map[string]ratelimit.Counters, l.current.NumSlots())
	unreadable := 0
	for _, n := range l.current.Slots() {
		if n.IsZero() {
			continue
		}
		s, ok := l.tr.nodes[n.ID]
		if !ok || !s.probed || !s.failingSince.IsZero() || !s.haveStats {
			unreadable++
			continue
		}
		out[n.ID] = ratelimit.Counters{Hits: s.stats.GetHits, Misses: s.stats.GetMisses, PID: s.stats.PID, Uptime: s.stats.Uptime}
	}
	return out, unreadable
}
