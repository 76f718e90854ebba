package sim

import (
	"math/rand/v2"
	"time"
)

// The scenarios' shapes (see the package comment).
const (
	rolloutShare    = 0.25             // agent-rollout: share of the nodes whose agent restarts
	rolloutStagger  = 10 * time.Second // one restart begins every this long
	rolloutMinAway  = 20 * time.Second
	rolloutMaxAway  = 90 * time.Second
	consulDetect    = 10 * time.Second // a dead or cut-off node's check turns critical
	failureGap      = time.Minute      // node-failure: between two deaths
	partitionShare  = 0.40
	partitionLength = 30 * time.Second
	blipLength      = 3 * time.Second
	lossLength      = time.Hour
	checkInterval   = 10 * time.Second // packet-loss: Consul's check of each node
	tail            = 10 * time.Minute // simulated after the scenario's last event
)

// scenarioLength returns how long cfg's scenario runs by default.
func scenarioLength(cfg Config) time.Duration {
	switch cfg.Scenario {
	case AgentRollout:
		return time.Duration(rolloutCount(cfg.Nodes))*rolloutStagger + rolloutMaxAway + tail
	case NodeFailure:
		return time.Duration(failureCount(cfg.Nodes))*failureGap + cfg.Hold + tail
	case PacketLoss:
		return lossLength + tail
	case Grow:
		// The same for every policy, as make bench-grow's window: the
		// steps' time plus the warm run's warm-for plus a minute in which
		// the keys nobody read while their twin warmed miss.
		return growBound(cfg.Slots, cfg.WarmFor) + growTail
	case whatIfScenario:
		return cfg.action.longest(cfg)
	}
	return tail
}

func rolloutCount(n int) int { return max(1, int(float64(n)*rolloutShare)) }
func failureCount(n int) int { return max(1, n/50) }

// pick returns k distinct node indexes in a seeded random order.
func pick(rng *rand.Rand, n, k int) []int {
	return rng.Perm(n)[:min(k, n)]
}

// schedule puts the scenario's events on the queue.
func (s *sim) schedule(rng *rand.Rand) {
	w, t0 := s.w, s.t0
	switch s.cfg.Scenario {
	case AgentRollout:
		for k, i := range pick(rng, len(w.nodes), rolloutCount(len(w.nodes))) {
			start := t0 + time.Duration(k)*rolloutStagger
			away := rolloutMinAway + time.Duration(rng.Int64N(int64(rolloutMaxAway-rolloutMinAway)))
			s.q.at(start, func() { w.nodes[i].consulUp = false; s.consul() })
			s.q.at(start+away, func() { w.nodes[i].consulUp = true; s.consul() })
		}
	case NodeFailure:
		for k, i := range pick(rng, len(w.nodes), failureCount(len(w.nodes))) {
			at := t0 + time.Duration(k)*failureGap
			s.q.at(at, func() { w.nodes[i].alive = false })
			s.q.at(at+consulDetect, func() { w.nodes[i].consulUp = false; s.consul() })
		}
	case Partition:
		cut := pick(rng, len(w.nodes), int(float64(len(w.nodes))*partitionShare))
		s.q.at(t0, func() {
			for _, i := range cut {
				w.nodes[i].cutOff = true
			}
		})
		s.q.at(t0+consulDetect, func() {
			for _, i := range cut {
				w.nodes[i].consulUp = false
			}
			s.consul()
		})
		s.q.at(t0+partitionLength, func() {
			for _, i := range cut {
				w.nodes[i].cutOff, w.nodes[i].consulUp = false, true
			}
			s.consul()
		})
	case ObserverBlip:
		s.q.at(t0, func() { w.observerCut = true; s.consul() })
		s.q.at(t0+blipLength, func() { w.observerCut = false; s.consul() })
	case PacketLoss:
		s.q.at(t0, func() { w.probeLoss = s.cfg.LossRate })
		s.q.at(t0+lossLength, func() { w.probeLoss = 0 })
		// Consul's checks lose packets too: a lost check turns the node
		// critical until the next one.
		s.q.every(t0+checkInterval, checkInterval, 1, func() {
			if s.clk.Now().Sub(epoch) > t0+lossLength {
				return
			}
			for i, nd := range w.nodes {
				if rng.Float64() < s.cfg.LossRate {
					nd.consulUp = false
					s.consul()
					s.q.at(s.clk.Now().Sub(epoch)+checkInterval, func() { w.nodes[i].consulUp = true; s.consul() })
				}
			}
		})
	case ZoneDrain:
		s.q.at(t0, s.startDrain)
	case Grow:
		s.q.at(t0, s.startGrow)
	case whatIfScenario:
		s.q.at(t0, s.startAction)
	case ColdStart:
		s.q.at(t0, func() {
			for _, nd := range w.nodes {
				nd.cache.reset()
			}
			s.wl.restartAll()
		})
	case Deploy:
		s.q.at(t0, s.wl.restartAll)
	}
}
