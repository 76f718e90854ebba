package controlloop

import (
	"time"

	"github.com/mcrib/mcrib/hitrate"
	"github.com/mcrib/mcrib/mcribapi"
)

// The status document carries what the simulator needs to simulate this
// pool as it runs (docs/simulation.md, "What-if"): its gets a second and
// the flags of mcrib serve that shape its moves.

// getRate is the pool's gets a second, measured at each stats read
// (HitCounters) from the counters of the nodes whose gets are the
// applications' (the slot holders, a split's source; not a warm source,
// whose gets are its new holder's misses). Its zero value knows no rate;
// the loop's mutex guards it.
type getRate struct {
	last  map[string]getReading
	rate  float64
	known bool
}

// getReading is one node's gets as a stats read found them.
type getReading struct {
	gets uint64
	pid  int64
	at   time.Time
}

// read takes one stats read: counters are the nodes' counters as
// HitCounters hands them to the boot limiter, at is when each was read.
// A node read for the first time, restarted, or not read again since
// adds nothing; the rate is unknown when no node added.
func (g *getRate) read(counters map[string]hitrate.Counters, at func(id string) time.Time) {
	next := make(map[string]getReading, len(counters))
	sum, any := 0.0, false
	for id, c := range counters {
		if c.WarmSourceOf != "" && !c.HoldsSlot {
			continue
		}
		cur := getReading{gets: c.Hits + c.Misses, pid: c.PID, at: at(id)}
		next[id] = cur
		prev, ok := g.last[id]
		if !ok || prev.pid != cur.pid || cur.gets < prev.gets || !cur.at.After(prev.at) {
			continue
		}
		sum += float64(cur.gets-prev.gets) / cur.at.Sub(prev.at).Seconds()
		any = true
	}
	g.last = next
	if any {
		g.rate, g.known = sum, true
	}
}

// perSecond returns the rate, nil while unknown.
func (g *getRate) perSecond() *float64 {
	if !g.known {
		return nil
	}
	r := g.rate
	return &r
}

// poolFlags returns the flags of mcrib serve the status document carries.
func (l *Loop) poolFlags() *mcribapi.PoolFlags {
	f := &mcribapi.PoolFlags{
		Hold: l.opts.Hold.String(), ProbeInterval: l.opts.ProbeInterval.String(),
		FlushAfterUnreachable: l.opts.FlushAfterUnreachable.String(),
		MaxAbsentFraction:     l.opts.MaxAbsentFraction, MaxReplacementsPerMinute: l.opts.MaxReplacementsPerMinute,
		WarmFor: l.opts.WarmFor.String(), WarmCopyRate: l.opts.WarmCopyRate,
	}
	if r := l.opts.Converge; r != nil {
		f.WarmMin, f.StatsInterval = r.WarmMin.String(), r.StatsInterval.String()
	}
	return f
}
