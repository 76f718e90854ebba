package dst

import (
	"math"
	"time"
)

// The kinds of faults a seed draws (Mix.Weights).
const (
	faultReplicaCrash   = "replica-crash"
	faultRollingRestart = "rolling-restart"
	faultReplicaCut     = "replica-cut-from-consul"
	faultLinkCut        = "link-cut"
	faultLinkLoss       = "link-loss"
	faultLinkSlow       = "link-slow"
	faultAgentRestart   = "agent-restart"
	faultZoneAgents     = "zone-agent-rollout"
	faultMemRestart     = "memcached-restart"
	faultMemPause       = "memcached-pause"
	faultMemDeath       = "memcached-death"
	faultHostDeath      = "host-death"
	faultJoin           = "node-joins"
	faultFreeze         = "operator-freeze"
	faultDrain          = "zone-drain"
	faultReplace        = "operator-replace"
	faultMaintenance    = "maintenance"
	faultResize         = "operator-resize"
	faultClockStep      = "clock-step"
	faultConsulErrors   = "consul-errors"
	faultConsulDown     = "consul-down"
	faultObserverBlip   = "observer-blip"
	// faultReregister registers a memcached again under a second service
	// ID (a redeploy that renamed it, the old registration left behind),
	// most often a warm source's.
	faultReregister = "reregister"
	// faultConsulLag has the agents of one replica's host, or of every
	// replica's, read from a Consul server that lags behind the leader
	// (consullag.go).
	faultConsulLag = "consul-lag"
)

// nextFault injects one fault drawn from the mix and schedules the next.
func (w *world) nextFault() {
	if w.mix.total > 0 {
		x := w.rng.IntN(w.mix.total)
		for i, k := range w.mix.kinds {
			if x < w.mix.weights[i] {
				w.chk.faults++
				w.inject(k)
				break
			}
			x -= w.mix.weights[i]
		}
	}
	// Exponential gaps, in whole milliseconds.
	gap := time.Duration(-math.Log(1-w.rng.Float64())*float64(w.mix.every/time.Millisecond)) * time.Millisecond
	w.after(max(gap, 100*time.Millisecond), "fault", w.nextFault)
}

// between draws a whole number of milliseconds in [lo, hi].
func (w *world) between(lo, hi time.Duration) time.Duration {
	span := int64((hi - lo) / time.Millisecond)
	return lo + time.Duration(w.rng.Int64N(span+1))*time.Millisecond
}

// fault records a fault in the trace.
func (w *world) fault(format string, args ...any) {
	w.tr.add(w.now, "FAULT "+format, args...)
}

func (w *world) randomNode() *mcNode { return w.nodes[w.rng.IntN(len(w.nodes))] }

func (w *world) randomReplica() *replica { return w.replicas[w.rng.IntN(len(w.replicas))] }

func (w *world) randomClient() *appClient { return w.clients[w.rng.IntN(len(w.clients))] }

func (w *world) randomNodeHost() *host { return w.randomNode().host }

func (w *world) randomZone() string { return zones[w.rng.IntN(len(zones))] }

// leaderReplica returns the replica whose process leads, or nil.
func (w *world) leaderReplica() *replica {
	for _, r := range w.replicas {
		if r.proc != nil && r.proc.lead.leading {
			return r
		}
	}
	return nil
}

// randomHolder returns a node that holds a slot in the stored map, or a
// random node.
func (w *world) randomHolder() *mcNode {
	m := w.chk.kvMap
	if m != nil {
		var held []*mcNode
		for _, s := range m.Slots() {
			if n := w.nodeByID[s.ID]; n != nil {
				held = append(held, n)
			}
		}
		if len(held) > 0 {
			return held[w.rng.IntN(len(held))]
		}
	}
	return w.randomNode()
}

// inject carries out one fault of kind k.
func (w *world) inject(k string) {
	if w.operatorFault(k) {
		return
	}
	switch k {
	case faultReplicaCrash:
		r := w.randomReplica()
		if l := w.leaderReplica(); l != nil && w.rng.IntN(2) == 0 {
			r = l
		}
		if r.proc == nil {
			return
		}
		down := w.between(time.Second, 20*time.Second)
		w.fault("%s crashes, restarts in %v", r.host.name, down)
		r.crash("fault")
		w.after(down, "restart "+r.host.name, func() {
			if r.proc == nil && !r.host.down {
				r.start()
			}
		})
	case faultRollingRestart:
		gap := w.between(3*time.Second, 10*time.Second)
		w.fault("rolling restart of every replica, %v apart", gap)
		for i, r := range w.replicas {
			w.after(time.Duration(i)*gap, "roll "+r.host.name, func() {
				if r.proc != nil {
					r.crash("rolling restart")
				}
				w.after(w.between(500*time.Millisecond, 2*time.Second), "restart "+r.host.name, func() {
					if r.proc == nil && !r.host.down {
						r.start()
					}
				})
			})
		}
	case faultReplicaCut:
		r := w.randomReplica()
		d := w.between(5*time.Second, 40*time.Second)
		switch w.rng.IntN(4) {
		case 0:
			// Its requests arrive and are carried out; their answers are
			// lost.
			w.fault("%s loses consul's answers for %v", r.host.name, d)
			w.timed(d, w.net.impair(consulHost, r.host.name, impairment{cut: true}))
		default:
			w.fault("%s cut off from consul for %v", r.host.name, d)
			w.timed(d, w.net.impair(r.host.name, consulHost, impairment{cut: true}), w.net.impair(consulHost, r.host.name, impairment{cut: true}))
		}
	case faultLinkCut, faultLinkLoss, faultLinkSlow:
		a, b := w.randomPair()
		d := w.between(2*time.Second, 30*time.Second)
		im := impairment{cut: true}
		switch k {
		case faultLinkLoss:
			im = impairment{loss: 0.2 + 0.8*w.rng.Float64()}
		case faultLinkSlow:
			im = impairment{slow: 0.2 + 0.8*w.rng.Float64()}
		}
		switch w.rng.IntN(3) {
		case 0:
			w.fault("%s %s→%s for %v", k, a, b, d)
			w.timed(d, w.net.impair(a, b, im))
		case 1:
			w.fault("%s %s→%s for %v", k, b, a, d)
			w.timed(d, w.net.impair(b, a, im))
		default:
			w.fault("%s %s↔%s for %v", k, a, b, d)
			w.timed(d, w.net.impair(a, b, im), w.net.impair(b, a, im))
		}
	case faultZoneAgents:
		zone := w.randomZone()
		d := w.between(3*time.Second, 20*time.Second)
		w.fault("the consul agents of zone %s restart together (a rollout), away %v", zone, d)
		for _, name := range sortedKeys(w.hosts) {
			if h := w.hosts[name]; name[0] == 'm' && h.zone == zone {
				w.after(w.between(0, 2*time.Second), "agent restart "+name, func() { w.agentRestart(h, d) })
			}
		}
	case faultAgentRestart:
		h := w.randomNodeHost()
		d := w.between(2*time.Second, 30*time.Second)
		w.fault("consul agent on %s restarts, away %v", h.name, d)
		w.agentRestart(h, d)
	case faultMemRestart:
		n := w.randomHolder()
		d := w.between(0, 8*time.Second)
		w.fault("memcached %s restarts (down %v)", n.id, d)
		n.set(dead)
		w.after(d, "memcached back "+n.id, func() {
			if !n.host.down {
				n.restart()
				w.chainOnNode(n)
			}
		})
	case faultMemPause:
		n := w.randomHolder()
		if w.rng.IntN(4) == 0 {
			n = w.randomNode() // a spare too, which a placement may take right after
		}
		d := w.pauseLength()
		w.fault("memcached %s paused for %v", n.id, d)
		if n.proc == running {
			n.set(paused)
			w.after(d, "memcached resumes "+n.id, func() {
				if n.proc == paused {
					n.set(running)
					w.chainOnNode(n)
				}
			})
		}
	case faultMemDeath:
		n := w.randomHolder()
		d := w.between(30*time.Second, 3*time.Minute)
		w.fault("memcached %s dies, replaced by a new process in %v", n.id, d)
		n.set(dead)
		w.after(d, "memcached repaired "+n.id, func() {
			if !n.host.down && n.proc == dead {
				n.restart()
			}
		})
	case faultHostDeath:
		h := w.randomNodeHost()
		d := w.between(20*time.Second, 2*time.Minute)
		w.fault("host %s loses power for %v", h.name, d)
		w.hostDown(h, d)
	case faultJoin:
		h := w.randomNodeHost()
		if len(w.nodes) >= w.cfg.Slots*2 {
			return
		}
		n := w.addNode(h)
		w.fault("new node %s joins on %s", n.id, h.name)
	case faultClockStep:
		names := sortedKeys(w.hosts)
		h := w.hosts[names[w.rng.IntN(len(names))]]
		if h.name == consulHost {
			return
		}
		old := h.skew
		h.skew = w.randomSkew()
		w.fault("the clock of %s steps by %v", h.name, h.skew-old)
	case faultConsulErrors:
		d := w.between(5*time.Second, 20*time.Second)
		errRate, lostRate := 0.3*w.rng.Float64(), 0.3*w.rng.Float64()
		w.fault("consul answers errors (%.2f) and loses answers after committing (%.2f) for %v", errRate, lostRate, d)
		w.consul.errRate, w.consul.lostRate = errRate, lostRate
		w.after(d, "consul errors over", func() { w.consul.errRate, w.consul.lostRate = 0, 0 })
	case faultConsulLag:
		var hosts []string
		if w.rng.IntN(2) == 0 {
			hosts = []string{w.randomReplica().host.name}
		} else {
			for _, r := range w.replicas {
				hosts = append(hosts, r.host.name)
			}
		}
		lag, d := w.between(500*time.Millisecond, 4*time.Second), w.between(5*time.Second, 30*time.Second)
		w.fault("the consul reads of %v lag %v behind the leader for %v", hosts, lag, d)
		w.consulLag(hosts, lag, d)
	case faultConsulDown:
		d := w.between(2*time.Second, 10*time.Second)
		w.fault("consul servers lose their leader for %v", d)
		w.consul.unavailable++
		w.after(d, "consul leader back", func() { w.consul.unavailable-- })
	case faultReregister:
		n := w.randomNode()
		if m := w.chk.kvMap; m != nil && m.AnyWarming() {
			for i := range m.NumSlots() {
				if ws := m.Warming(i); ws != nil && w.rng.IntN(2) == 0 {
					n = w.nodeByID[ws.NodeID]
				}
			}
		}
		alias := n.id + "b"
		if w.nodeByID[alias] != nil || len(n.aliases) > 0 {
			return
		}
		d := w.between(30*time.Second, 3*time.Minute)
		w.fault("memcached %s is registered again as %s for %v", n.id, alias, d)
		n.aliases = append(n.aliases, alias)
		w.nodeByID[alias] = n
		w.chk.nodes[alias] = w.chk.nodes[n.id]
		w.consul.services[alias] = &service{id: alias, host: n.host.name, port: n.port, zone: n.host.zone, listed: true, passing: n.proc == running}
		w.consul.touchHealth()
		for _, r := range w.replicas {
			if r.proc != nil {
				r.proc.scheduleProbes(n, alias)
			}
		}
		w.after(d, "deregister "+alias, func() {
			delete(w.consul.services, alias)
			w.consul.touchHealth()
		})
	case faultObserverBlip:
		r := w.randomReplica()
		d := w.between(time.Second, 12*time.Second)
		w.fault("%s loses every memcached host for %v", r.host.name, d)
		var undo []func()
		for _, name := range sortedKeys(w.hosts) {
			if name[0] == 'm' {
				undo = append(undo, w.net.impair(r.host.name, name, impairment{cut: true}))
			}
		}
		w.timed(d, undo...)
	}
}

// randomPair draws two hosts a fault between which matters: a replica or
// a client and a memcached host, a client and a replica, or two replicas
// (a forward between them).
func (w *world) randomPair() (string, string) {
	switch w.rng.IntN(5) {
	case 4:
		if a, b := w.randomReplica(), w.randomReplica(); a != b {
			return a.host.name, b.host.name
		}
		fallthrough
	case 0, 1:
		return w.randomClient().host.name, w.randomNodeHost().name
	case 2:
		return w.randomReplica().host.name, w.randomNodeHost().name
	}
	return w.randomClient().host.name, w.randomReplica().host.name
}

// timed undoes the impairments after d.
func (w *world) timed(d time.Duration, undo ...func()) {
	w.after(d, "heal", func() {
		for _, u := range undo {
			u()
		}
		w.tr.add(w.now, "heal")
	})
}
