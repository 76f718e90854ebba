package sim

import (
	"math"
	"time"
)

// window is the span of the hit rate the report speaks of: one minute,
// trailing.
const window = 60

// measure collects the figures of a run, second by second.
type measure struct {
	t0, end  time.Duration
	capacity float64

	// the trailing window of hits and reads
	hits, reads       [window]uint64
	sumHits, sumReads uint64
	pos               int

	baseHits, baseReads uint64
	baseline            float64

	lowest      float64
	overload    int
	lastBad     time.Duration // last second after t0 not yet recovered
	everBad     bool
	stillBad    bool
	dbSum       float64
	dbN         int
	series      []Point
	flushesAt0  int
	replAt0     int
	refusedAt0  int
	targetRatio float64
}

func newMeasure(cfg Config, t0, end time.Duration) *measure {
	return &measure{t0: t0, end: end, capacity: cfg.DBCapacity, lowest: math.Inf(1), targetRatio: 0.95}
}

// second records the second that ends at at.
func (m *measure) second(at time.Duration, wl *workload, limit float64) {
	m.sumHits += wl.hits - m.hits[m.pos]
	m.sumReads += wl.reads - m.reads[m.pos]
	m.hits[m.pos], m.reads[m.pos] = wl.hits, wl.reads
	m.pos = (m.pos + 1) % window
	hr := math.NaN()
	if m.sumReads > 0 {
		hr = float64(m.sumHits) / float64(m.sumReads)
	}
	if at <= m.t0 && at > m.t0/2 {
		m.baseHits += wl.hits
		m.baseReads += wl.reads
	}
	if at == m.t0 && m.baseReads > 0 {
		m.baseline = float64(m.baseHits) / float64(m.baseReads)
	}
	m.dbSum += wl.dbDemand
	m.dbN++
	if at > m.t0 {
		if wl.dbDemand > m.capacity {
			m.overload++
		}
		if !(hr >= m.lowest) { // NaN (nobody reads) counts as 0
			m.lowest = hr
			if math.IsNaN(hr) {
				m.lowest = 0
			}
		}
		bad := wl.pending > 0 || !(hr >= m.targetRatio*m.baseline)
		if bad {
			m.lastBad, m.everBad = at-m.t0, true
		}
		m.stillBad = bad
	}
	if at >= m.t0-2*time.Minute && at%sampleEvery == 0 {
		m.series = append(m.series, Point{
			T: (at - m.t0).Seconds(), HitRate: hr, DBLoad: m.dbSum / float64(m.dbN), BootLimit: limit,
		})
		m.dbSum, m.dbN = 0, 0
	} else if at%sampleEvery == 0 {
		m.dbSum, m.dbN = 0, 0
	}
}

// result returns the run's figures.
func (m *measure) result(cfg Config) Result {
	r := Result{
		Scenario: cfg.Scenario, Policy: cfg.Policy.Name, Nodes: cfg.Nodes, Slots: cfg.Slots,
		Baseline: m.baseline, LowestHitRate: m.lowest, OverloadSeconds: m.overload,
		Recovered: !m.stillBad, Simulated: m.end, Series: m.series,
	}
	if math.IsInf(r.LowestHitRate, 1) {
		r.LowestHitRate = m.baseline
	}
	if m.everBad {
		r.Recovery = m.lastBad + time.Second
	}
	return r
}
