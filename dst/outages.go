package dst

import (
	"time"
)

// pauseLength draws a pause: most around --flush-after-unreachable (the
// blips each replica measures differently), some long.
func (w *world) pauseLength() time.Duration {
	switch w.rng.IntN(3) {
	case 0:
		return w.between(time.Second, 6*time.Second)
	case 1:
		f := max(w.flushAfter, 4*time.Second)
		return w.between(f-3*time.Second, f+3*time.Second)
	}
	return w.between(10*time.Second, 40*time.Second)
}

// grayZone makes the nodes of zone pause now and then for d: a zone that
// half-fails.
func (w *world) grayZone(zone string, d time.Duration) {
	end := w.now + d
	var next func()
	next = func() {
		if w.now >= end {
			return
		}
		var in []*mcNode
		for _, n := range w.nodes {
			if n.host.zone == zone && n.proc == running {
				in = append(in, n)
			}
		}
		if len(in) > 0 {
			n := in[w.rng.IntN(len(in))]
			p := w.pauseLength()
			w.fault("zone %s half-fails: memcached %s paused for %v", zone, n.id, p)
			n.set(paused)
			w.after(p, "memcached resumes "+n.id, func() {
				if n.proc == paused {
					n.set(running)
				}
			})
		}
		w.after(w.between(2*time.Second, 8*time.Second), "gray "+zone, next)
	}
	w.after(w.between(0, 3*time.Second), "gray "+zone, next)
}

// agentRestart takes h's agent away for d: its node's serfHealth turns
// critical; when it comes back it registers its services again, their
// checks critical until its next round of checks.
func (w *world) agentRestart(h *host, d time.Duration) {
	a := w.consul.agents[h.name]
	if a == nil || !a.up {
		return
	}
	a.up = false
	w.after(d, "agent back "+h.name, func() {
		if h.down {
			return
		}
		a.up = true
		for _, id := range sortedKeys(w.consul.services) {
			if s := w.consul.services[id]; s.host == h.name {
				s.listed, s.passing = false, false
			}
		}
		w.consul.touchHealth()
		w.after(w.between(500*time.Millisecond, 3*time.Second), "agent registers "+h.name, func() {
			for _, id := range sortedKeys(w.consul.services) {
				if s := w.consul.services[id]; s.host == h.name {
					s.listed = true
				}
			}
			w.consul.touchHealth()
		})
	})
}

// hostDown powers h off for d: its memcached die (they come back as new
// processes), its agent goes away.
func (w *world) hostDown(h *host, d time.Duration) {
	if h.down {
		return
	}
	h.down = true
	for _, n := range w.nodes {
		if n.host == h {
			n.set(dead)
		}
	}
	a := w.consul.agents[h.name]
	a.up = false
	w.after(d, "power back "+h.name, func() {
		h.down = false
		for _, n := range w.nodes {
			if n.host == h {
				n.restart()
			}
		}
		a.up = true
		w.agentRestart(h, 0)
	})
}
