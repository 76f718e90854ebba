package hitrate

import (
	"math"
	"time"
)

// Smoothing of the hit rate (see Meter).
const (
	// hitRateWeight is the weight of one interval's hit rate in the
	// smoothed value, at the pool's usual traffic.
	hitRateWeight = 0.5
	// trafficWeight is the weight of one interval's request count in the
	// smoothed count the usual traffic is measured by.
	trafficWeight = 0.2
	// forgetAfter is how many observations in a row a node may be missing
	// before its last counters are dropped.
	forgetAfter = 10
	// settleMargin is how far below the other nodes' interval hit rate a
	// node a planned move touched may be and still count again (Meter's
	// LeavesOutPlanned); maxSettle is how long after its mark ended it is
	// left out at most.
	settleMargin = 0.02
	maxSettle    = 10 * time.Minute
)

// nodeCounters is the last reading of one node and when it was seen.
type nodeCounters struct {
	c    Counters
	seen uint64
	// settling is set while a meter that leaves planned moves out still
	// leaves the node out after its Planned mark ended, since the last
	// observation that marked it (settleFrom).
	settling   bool
	settleFrom time.Time
}

// Meter turns successive readings of the nodes' counters into the pool's
// smoothed hit rate. Each observation takes, per node, the increase of
// get_hits and get_misses since the node's previous reading (after a
// restart, the new counters themselves), sums them over the nodes, and
// folds the interval's hit rate into an exponentially weighted moving
// average. The weight of an interval is 0.5 at the pool's usual traffic and
// shrinks in proportion when the interval saw less traffic than usual (the
// usual traffic is itself a moving average of the requests per second,
// with weight 0.2), so a quiet interval barely moves the value; an
// interval without any traffic leaves it unchanged. The slots without a
// live holder count as all misses for their share of the gets (Slots),
// and their gets count in the interval's traffic.
//
// A node marked as a warm source (Counters.WarmSourceOf) is counted with
// the slot holder it warms as the one slot applications read: a get the
// warm source answered is a hit, and the warm source's own gets are not
// counted again (warmpair.go); one that holds a slot of its own (a
// split's source, Counters.HoldsSlot) counts its own gets too, less those
// forwarded to it.
//
// The zero value is ready to use and counts every node. A Meter is not
// safe for concurrent use.
type Meter struct {
	// LeavesOutPlanned makes the meter leave out the nodes marked Planned:
	// the boot limiter's input, so that no planned move cuts the limit by
	// itself while a fall of the other slots' hit rate still does. A node
	// stays left out after its mark ends (settling) until an interval's
	// own hit rate of it comes within 0.02 of the other nodes' of the same
	// interval, or for 10 minutes at most: a warm move fills the new
	// holder only with what was read while it warmed, so the slot's
	// colder keys miss for a while after, however long the mark lasted.
	LeavesOutPlanned bool

	nodes   map[string]nodeCounters
	round   uint64
	rate    float64
	traffic float64
	have    bool
	// last observation's figures
	lastRequests uint64
	lastSlots    Slots
	lastAt       time.Time
	lastSample   float64 // the last interval's own hit rate, unsmoothed
	haveSample   bool    // the last observation had traffic, or no slot served
}

// Observe records one reading of the served slots' counters, taken at now,
// and returns the smoothed hit rate; ok says whether this observation is a
// reading: false when it counted no gets (no requests, every node new or
// unreadable: an interval without traffic tells nothing of the cache), and
// while none has been counted yet. The smoothed value is then returned
// unchanged, and HitRate keeps it, but it is no reading to act on (the
// boot limiter's controller holds). A node seen for the first time gives
// only a baseline.
//
// slots says what the reading knows of the slots (see Slots): with u of n
// slots unserved and the counted hits and gets, the interval's hit rate is
// hits ÷ (gets × n ÷ (n − u)), the unserved slots' share of the gets all
// misses, as the database behind the pool sees it. When no slot is served
// every get misses: the interval is a reading of 0 at the usual traffic,
// counters or not. The served slots whose holders could not be read are
// left out (see Unreadable). The zero Slots counts the gets as they are.
func (m *Meter) Observe(now time.Time, nodes map[string]Counters, slots Slots) (rate float64, ok bool) {
	if m.nodes == nil {
		m.nodes = make(map[string]nodeCounters, len(nodes))
	}
	m.round++
	// Sums in float64: counters near 2^64 (a bogus reply, a node whose
	// counters wrapped) must not overflow into a small total.
	var hits, misses float64
	deltas := make(map[string]pairDelta, len(nodes))
	for id, c := range nodes {
		prev, seen := m.nodes[id]
		if seen {
			h, ms := delta(prev.c, c)
			deltas[id] = pairDelta{hits: h, misses: ms}
		}
		n := nodeCounters{c: c, seen: m.round, settling: prev.settling, settleFrom: prev.settleFrom}
		if m.LeavesOutPlanned && c.Planned {
			n.settling, n.settleFrom = true, now
		}
		m.nodes[id] = n
	}
	var sources map[string]pairDelta // warm sources' increases, by the holder they warm
	var splits map[string]bool       // the holders whose warm source holds a slot of its own
	for id, c := range nodes {
		if c.WarmSourceOf == "" {
			continue
		}
		if d, ok := deltas[id]; ok {
			if sources == nil {
				sources = make(map[string]pairDelta)
			}
			sources[c.WarmSourceOf] = d
			if c.HoldsSlot {
				if splits == nil {
					splits = make(map[string]bool)
				}
				splits[c.WarmSourceOf] = true
			}
		}
	}
	var settling map[string]pairDelta // the settling nodes' increases, judged below
	for id, c := range nodes {
		d, ok := deltas[id]
		if !ok || c.WarmSourceOf != "" {
			continue // a baseline, or counted with its holder
		}
		switch src, warms := sources[id]; {
		case warms && splits[id]:
			d.hits, d.misses = splitView(d, src)
		case warms:
			d.hits, d.misses = applicationView(d, src)
		}
		if m.nodes[id].settling {
			if !c.Planned {
				if settling == nil {
					settling = make(map[string]pairDelta)
				}
				settling[id] = d
			}
			continue // left out
		}
		hits += float64(d.hits)
		misses += float64(d.misses)
	}
	m.settle(settling, hits, misses, now)
	for id, n := range m.nodes {
		if m.round-n.seen >= forgetAfter {
			delete(m.nodes, id)
		}
	}
	elapsed := now.Sub(m.lastAt)
	first := m.lastAt.IsZero()
	m.lastAt = now
	m.lastSlots = slots
	n := hits + misses
	m.lastRequests = uint64(min(n, math.MaxUint64))
	m.haveSample = false
	share := slots.servedShare()
	if share <= 0 {
		// No slot is served: every get misses, however many there are
		// (the counters of no holder show them). The interval weighs as
		// much as the usual traffic.
		m.lastSample, m.haveSample = 0, true
		if !m.have {
			m.rate, m.have = 0, true
			return m.rate, true
		}
		m.rate = min(max(m.rate-hitRateWeight*m.rate, 0), 1)
		return m.rate, true
	}
	if n == 0 {
		return m.rate, false
	}
	// The unserved slots' share of the gets: all misses.
	n /= share
	sample := min(max(hits/n, 0), 1)
	m.lastSample, m.haveSample = sample, true
	// Traffic is compared per second, so a late or early tick does not
	// look like a change of traffic.
	volume := n
	if !first && elapsed > 0 {
		volume = n / elapsed.Seconds()
	}
	if !m.have || m.traffic <= 0 {
		// The first reading with gets (or the first after readings of a
		// pool with no slot served, which measured no traffic).
		if !m.have {
			m.rate = sample
		} else {
			m.rate = min(max(m.rate+hitRateWeight*(sample-m.rate), 0), 1)
		}
		m.traffic, m.have = volume, true
		return m.rate, true
	}
	w := hitRateWeight * math.Min(1, volume/m.traffic)
	m.rate = min(max(m.rate+w*(sample-m.rate), 0), 1)
	m.traffic += trafficWeight * (volume - m.traffic)
	return m.rate, true
}

// settle counts again, from the next observation, each settling node
// whose own hit rate of this interval (d) came within settleMargin of the
// counted nodes' (hits and misses), or whose mark ended maxSettle ago.
// An interval without gets of the node, or of the others, tells nothing.
func (m *Meter) settle(settling map[string]pairDelta, hits, misses float64, now time.Time) {
	for id, d := range settling {
		n := m.nodes[id]
		own := float64(d.hits) + float64(d.misses)
		switch {
		case now.Sub(n.settleFrom) >= maxSettle:
		case own == 0 || hits+misses == 0:
			continue
		case float64(d.hits)/own < hits/(hits+misses)-settleMargin:
			continue
		}
		n.settling = false
		m.nodes[id] = n
	}
}

// Settling returns how many nodes a meter that leaves planned moves out
// still leaves out although their Planned mark ended: their hit rate has
// not yet come back to the others'.
func (m *Meter) Settling() int {
	n := 0
	for _, c := range m.nodes {
		if c.settling && !c.c.Planned {
			n++
		}
	}
	return n
}

// HitRate returns the smoothed hit rate; ok is false until an interval with
// traffic has been observed. Unlike Observe's, it stays true through an
// interval without gets, which leaves the value as it was.
func (m *Meter) HitRate() (rate float64, ok bool) { return m.rate, m.have }

// Interval returns the last observation's own hit rate, not smoothed
// (hits / (hits + misses) of that interval alone); ok is false when that
// observation had no traffic. The boot limiter's slow start
// (ratelimit.SlowStart) judges a boot surge by it: the smoothed rate
// barely moves in an interval with less traffic than usual, which is what
// a cold start whose clients are all waiting to boot looks like.
func (m *Meter) Interval() (rate float64, ok bool) { return m.lastSample, m.haveSample }

// Slots returns what the last observation knew of the slots: how many,
// how many unserved (their gets counted as misses), how many unreadable
// (left out).
func (m *Meter) Slots() Slots { return m.lastSlots }

// Requests returns the number of gets (hits plus misses) the last
// observation read from the counters, without the unserved slots' share.
func (m *Meter) Requests() uint64 { return m.lastRequests }

// Reset forgets every node and the smoothed value, so the next observation
// is a fresh baseline.
func (m *Meter) Reset() { *m = Meter{} }
