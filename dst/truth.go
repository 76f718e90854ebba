package dst

import (
	"time"
)

// interval is a span of simulated time; end 0 while it lasts.
type interval struct{ from, to time.Duration }

// nodeTruth is what the checker knows of one memcached, from the
// simulation's ground truth and the pool's documents.
type nodeTruth struct {
	n *mcNode
	// cleanStep and cleanAt are the step and time of its last flush or
	// restart (it was empty then); cleans are the times of the recent ones.
	cleanStep uint64
	cleanAt   time.Duration
	cleans    []time.Duration
	// oweEnded is when an owed flush last ended by a flush or a restart: a
	// flush right after it is the leader retrying one whose answer it lost.
	oweEnded time.Duration
	// servedStep is the last step at which the stored map had it hold a
	// slot or warm one.
	servedStep uint64
	// disturbed lists the spans during which it may have failed to answer
	// some live replica (not running, or a link impaired); absent the
	// spans during which Consul did not list it present.
	disturbed, absent []interval
	// owe: the pool decided that it owes a flush, since oweSince, by
	// oweBy; forgotSince is when the leader last began to show it not
	// pending while it owes.
	owe         bool
	oweSince    time.Duration
	oweBy       string
	oweProc     *replicaProc
	oweFrozen   bool
	forgotSince time.Duration
	// flushFailedStep is the last step in which a flush of it got no
	// answer.
	flushFailedStep uint64
	// maintEnded is when its last maintenance ended.
	maintEnded time.Duration
	// replacedAt is when an operator's replace of it was carried out.
	replacedAt time.Duration
	replaced   bool
	// known is, for each process, its last flush of the node whose answer
	// it got (needless.go).
	known map[*replicaProc]ownClean
}

// clean records that t's memcached is empty now (flushed or restarted).
func (t *nodeTruth) clean(w *world) {
	t.cleanStep, t.cleanAt = w.step, w.now
	t.cleans = append(t.cleans, w.now)
	if len(t.cleans) > 8 {
		t.cleans = t.cleans[1:]
	}
	if t.owe {
		t.oweEnded = w.now
	}
	t.owe, t.forgotSince = false, 0
}

// settledClean returns the last time t was clean that lies at least
// settle before now: a flush or restart more recent than that the pool
// may not have seen yet (its next probe reads the new counters).
func (t *nodeTruth) settledClean(now, settle time.Duration) time.Duration {
	for i := len(t.cleans) - 1; i >= 0; i-- {
		if t.cleans[i] <= now-settle {
			return t.cleans[i]
		}
	}
	if len(t.cleans) > 0 {
		return t.cleans[0]
	}
	return 0
}

// longestIn returns the longest span of spans (merging those less than gap
// apart) that overlaps [from, to].
func longestIn(spans []interval, from, to, gap time.Duration) time.Duration {
	var best, curFrom, curTo time.Duration
	have := false
	flush := func() {
		if have && curTo >= from && curFrom <= to {
			best = max(best, curTo-curFrom)
		}
	}
	for _, s := range spans {
		end := s.to
		if end == 0 {
			end = to
		}
		if have && s.from-curTo < gap {
			curTo = max(curTo, end)
			continue
		}
		flush()
		curFrom, curTo, have = s.from, end, true
	}
	flush()
	return best
}

// groundTruth records, for every node, whether it may fail to answer a
// live replica now and whether Consul lists it present.
func (c *checker) groundTruth() {
	w := c.w
	if w.truth == c.truthSeen {
		return
	}
	c.truthSeen = w.truth
	for _, t := range c.order {
		id := t.n.id
		disturbed := t.n.proc != running
		for _, r := range w.replicas {
			if r.proc != nil && !disturbed {
				disturbed = w.net.impaired(r.host.name, t.n.host.name)
			}
		}
		t.disturbed = track(t.disturbed, disturbed, w.now)
		s := w.consul.services[id]
		a := w.consul.agents[t.n.host.name]
		present := s != nil && s.listed && s.passing && !s.maintenance && a != nil && a.serfOK
		t.absent = track(t.absent, !present, w.now)
	}
}

// track opens or closes the last span of spans.
func track(spans []interval, on bool, now time.Duration) []interval {
	open := len(spans) > 0 && spans[len(spans)-1].to == 0
	switch {
	case on && !open:
		spans = append(spans, interval{from: now})
	case !on && open:
		spans[len(spans)-1].to = max(now, spans[len(spans)-1].from+time.Millisecond)
	}
	return spans
}

// lastSpanStart returns when the last span of spans began, merging spans
// less than gap apart; 0 when there is none.
func lastSpanStart(spans []interval, gap time.Duration) time.Duration {
	if len(spans) == 0 {
		return 0
	}
	from := spans[len(spans)-1].from
	for i := len(spans) - 2; i >= 0 && from-spans[i].to < gap; i-- {
		from = spans[i].from
	}
	return from
}
