package dst

import (
	"fmt"
	"time"
)

// What the seed varies besides the faults themselves: the number of
// replicas, the fault mix and its pace, memcached run in containers
// (whose restarts keep the pid), and faults that chain on one node.

// drawReplicas draws the number of mcrib serve processes, 1 to 5.
func (w *world) drawReplicas() int { return 1 + w.rng.IntN(5) }

// varyMix scales each weight of m by a factor the seed draws (0 to 3: a
// kind may be left out, or come three times as often) and its pace by
// half to one and a half, so that the seeds between them try mixes the
// default does not.
func (w *world) varyMix(m Mix) Mix {
	out := Mix{Every: m.Every/2 + time.Duration(w.rng.Int64N(int64(m.Every))), Interleave: m.Interleave, Weights: map[string]int{}}
	for _, k := range sortedKeys(m.Weights) {
		out.Weights[k] = m.Weights[k] * []int{0, 1, 1, 2, 3}[w.rng.IntN(5)]
	}
	return out
}

// drawContainers chooses the memcached hosts that run memcached in a
// container, as pid 1: a restart there keeps the pid, and only the
// uptime going back tells it (none on half the seeds).
func (w *world) drawContainers() {
	if w.rng.IntN(2) == 0 {
		return
	}
	w.containers = map[string]bool{}
	for i := range w.cfg.NodeHosts {
		if w.rng.IntN(2) == 0 {
			w.containers[hostName(i)] = true
		}
	}
}

// hostName is the name of the i-th memcached host.
func hostName(i int) string { return fmt.Sprintf("m%d", i+1) }

// newPID returns the pid of a new memcached process of n: a new one, or
// in a container the one it always has.
func (w *world) newPID(n *mcNode) int64 {
	if w.containers[n.host.name] && n.pid != 0 {
		return n.pid
	}
	w.pids++
	return w.pids
}

// chainOnNode strikes n again now and then soon after a fault of it
// ended (a restart, a resume): a process that restarts and pauses again,
// or pauses twice, within one episode of the pool's.
func (w *world) chainOnNode(n *mcNode) {
	if w.rng.IntN(3) != 0 {
		return
	}
	after := w.between(500*time.Millisecond, 4*time.Second)
	restart := w.rng.IntN(2) == 0
	d := w.pauseLength()
	w.after(after, "chained fault "+n.id, func() {
		if n.proc != running || n.gone || n.host.down {
			return
		}
		if restart {
			down := min(d, 8*time.Second)
			w.fault("memcached %s restarts again (down %v)", n.id, down)
			n.set(dead)
			w.after(down, "memcached back "+n.id, func() {
				if !n.host.down && n.proc == dead {
					n.restart()
				}
			})
			return
		}
		w.fault("memcached %s paused again for %v", n.id, d)
		n.set(paused)
		w.after(d, "memcached resumes "+n.id, func() {
			if n.proc == paused {
				n.set(running)
			}
		})
	})
}
