package e2e

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/mcrib/mcrib/internal/testenv"
)

// The soak's faults. Each is bounded in time and undone before it returns
// (healed, resumed, restarted); it reports which nodes' memcached it
// stopped (what the clients lost too) and which Consul agents need the
// server to join them again.

// soakHold is the --hold of the soak's pool: faults of the nodes last from
// well under it to well over it, so that real deaths cause replacements.
const soakHold = 5 * time.Second

// soakFault is one kind of fault.
type soakFault struct {
	name   string
	weight int
	inject func(s *soak) soakEffect
}

// soakEffect is what one injected fault did.
type soakEffect struct {
	what    string                 // e.g. "memcached-pause mc-03 for 2.1s"
	touched map[string]soakTouch   // nodes whose memcached the clients lost
	rejoin  []*testenv.ConsulAgent // agents the server must join again
}

// soakFaults is the menu, drawn by weight.
var soakFaults = []soakFault{
	{"agent-restart", 2, (*soak).agentRestart},
	{"memcached-kill", 2, (*soak).memcachedKill},
	{"memcached-pause", 2, (*soak).memcachedPause},
	{"mcrib-pause", 1, (*soak).mcribPause},
	{"cut-memcached-host", 1, (*soak).cutNodeHost},
	{"cut-replica-host", 1, (*soak).cutReplicaHost},
	{"blackhole", 1, (*soak).blackhole},
	{"drop", 1, (*soak).drop},
	{"consul-restart", 1, (*soak).consulRestart},
	{"leader-kill", 1, (*soak).leaderKill},
	{"operator-freeze", 1, (*soak).operatorFreeze},
}

// pick draws a fault by weight.
func pickFault(rng *rand.Rand) soakFault {
	total := 0
	for _, f := range soakFaults {
		total += f.weight
	}
	n := rng.IntN(total)
	for _, f := range soakFaults {
		if n < f.weight {
			return f
		}
		n -= f.weight
	}
	panic("unreachable")
}

// between returns a duration in [lo, hi), to the 100ms.
func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	d := lo + time.Duration(rng.Int64N(int64(hi-lo)))
	return d.Round(100 * time.Millisecond)
}

func (s *soak) node() *hostNode   { return s.p.nodes[s.rng.IntN(len(s.p.nodes))] }
func (s *soak) replica() *replica { return s.p.replicas[s.rng.IntN(len(s.p.replicas))] }

// stoppedNode is the effect of a fault that stopped n's memcached.
func stoppedNode(what string, n *hostNode, t soakTouch) soakEffect {
	t.stopped = true
	return soakEffect{what: what, touched: map[string]soakTouch{n.id: t}}
}

// agentRestart stops a client agent (of a memcached host or of a replica)
// and starts it again: its services leave the catalog meanwhile.
func (s *soak) agentRestart() soakEffect {
	a, on := s.replica().agent, ""
	if s.rng.IntN(2) == 0 {
		n := s.node()
		a, on = n.agent, n.id
	} else {
		on = "a replica's host"
	}
	d := between(s.rng, 500*time.Millisecond, 3*time.Second)
	a.Stop(s.t)
	time.Sleep(d)
	a.Start(s.t)
	return soakEffect{what: fmt.Sprintf("agent-restart %s (%s) down %v", a.NodeName, on, d), rejoin: []*testenv.ConsulAgent{a}}
}

// memcachedKill kills a memcached (-9) and starts it again, empty.
func (s *soak) memcachedKill() soakEffect {
	n := s.node()
	d := between(s.rng, time.Second, 2*soakHold)
	n.mc.Kill(s.t)
	time.Sleep(d)
	n.mc.Start(s.t)
	return stoppedNode(fmt.Sprintf("memcached-kill %s down %v", n.id, d), n, soakTouch{restarted: true, absent: true, down: d})
}

// memcachedPause stops a memcached (SIGSTOP) and resumes it.
func (s *soak) memcachedPause() soakEffect {
	n := s.node()
	d := between(s.rng, 500*time.Millisecond, 2*soakHold)
	n.mc.Pause(s.t)
	time.Sleep(d)
	n.mc.Resume(s.t)
	return stoppedNode(fmt.Sprintf("memcached-pause %s for %v", n.id, d), n, soakTouch{down: d})
}

// mcribPause stops a replica (SIGSTOP), as a VM migration would.
func (s *soak) mcribPause() soakEffect {
	r := s.replica()
	d := between(s.rng, time.Second, 2*soakHold)
	r.prog.Pause(s.t)
	time.Sleep(d)
	r.prog.Resume(s.t)
	return soakEffect{what: fmt.Sprintf("mcrib-pause %s for %v", r.name, d)}
}

// cutNodeHost cuts a memcached host's link: memcached and its agent are
// lost to everyone.
func (s *soak) cutNodeHost() soakEffect {
	n := s.node()
	d := between(s.rng, time.Second, 2*soakHold)
	n.host.Cut(s.t)
	time.Sleep(d)
	n.host.Heal(s.t)
	e := stoppedNode(fmt.Sprintf("cut-memcached-host %s for %v", n.id, d), n, soakTouch{absent: true, down: d})
	e.rejoin = []*testenv.ConsulAgent{n.agent}
	return e
}

// cutReplicaHost cuts a replica's host off: a fault of the observer.
func (s *soak) cutReplicaHost() soakEffect {
	r := s.replica()
	d := between(s.rng, time.Second, 8*time.Second)
	r.host.Cut(s.t)
	time.Sleep(d)
	r.host.Heal(s.t)
	return soakEffect{what: fmt.Sprintf("cut-replica-host %s for %v", r.name, d), rejoin: []*testenv.ConsulAgent{r.agent}}
}

// blackhole either has one replica's host lose a memcached host (the other
// replicas still reach it: the vote says it answers), or has a memcached
// host lose the Consul server (its agent drops out: the node is absent from
// Consul while it answers).
func (s *soak) blackhole() soakEffect {
	d := between(s.rng, 2*time.Second, 2*soakHold)
	n := s.node()
	if s.rng.IntN(2) == 0 {
		r := s.replica()
		r.host.Blackhole(s.t, n.host.Addr)
		time.Sleep(d)
		r.host.Unblackhole(s.t, n.host.Addr)
		return soakEffect{what: fmt.Sprintf("blackhole %s → %s for %v", r.name, n.id, d),
			rejoin: []*testenv.ConsulAgent{r.agent, n.agent}}
	}
	n.host.Blackhole(s.t, s.p.consulAt.Addr)
	time.Sleep(d)
	n.host.Unblackhole(s.t, s.p.consulAt.Addr)
	return soakEffect{what: fmt.Sprintf("blackhole %s → the Consul server for %v", n.id, d), rejoin: []*testenv.ConsulAgent{n.agent}}
}

// drop has one replica's host lose a memcached host silently.
func (s *soak) drop() soakEffect {
	d := between(s.rng, 2*time.Second, 2*soakHold)
	n, r := s.node(), s.replica()
	r.host.Drop(s.t, n.host.Addr)
	time.Sleep(d)
	r.host.Undrop(s.t, n.host.Addr)
	return soakEffect{what: fmt.Sprintf("drop %s → %s for %v", r.name, n.id, d), rejoin: []*testenv.ConsulAgent{r.agent, n.agent}}
}

// consulRestart stops the Consul server and starts it again (a dev
// server: it returns with an empty KV, and mcrib writes its map back).
func (s *soak) consulRestart() soakEffect {
	d := between(s.rng, time.Second, 5*time.Second)
	s.p.consul.Stop(s.t)
	time.Sleep(d)
	s.p.consul.Start(s.t)
	return soakEffect{what: fmt.Sprintf("consul-restart down %v", d)}
}

// leaderKill kills the leader (-9) and starts it again.
func (s *soak) leaderKill() soakEffect {
	r := s.p.leader(30 * time.Second)
	d := between(s.rng, 500*time.Millisecond, 2*soakHold)
	r.prog.Kill(s.t)
	time.Sleep(d)
	r.prog.Start(s.t)
	r.prog.WaitReady(s.t, 30*time.Second, func() bool { return r.ready() == http.StatusOK })
	return soakEffect{what: fmt.Sprintf("leader-kill %s down %v", r.name, d)}
}

// operatorFreeze freezes the pool through a replica's API with the token,
// kills a slot holder's memcached for longer than --hold meanwhile (no slot
// may change hands under the freeze), starts it again and thaws.
func (s *soak) operatorFreeze() soakEffect {
	r := s.p.leader(30 * time.Second)
	if code, body := r.call("PUT", "/v1/freeze", `{"reason":"soak"}`, token); code != http.StatusOK {
		s.t.Fatalf("PUT /v1/freeze on %s: %d %s", r.name, code, body)
	}
	time.Sleep(time.Second) // a pass under way when the freeze landed
	s.mon.freeze(s.p.slotMap())
	var holders []*hostNode
	for _, h := range s.p.slotMap().Slots() {
		if !h.IsZero() {
			holders = append(holders, s.p.byID[h.ID])
		}
	}
	n := holders[s.rng.IntN(len(holders))]
	d := between(s.rng, soakHold+2*time.Second, 2*soakHold+2*time.Second)
	n.mc.Kill(s.t)
	time.Sleep(d)
	n.mc.Start(s.t)
	time.Sleep(2 * hostsProbeInterval)
	s.mon.freeze(nil)
	r = s.p.leader(30 * time.Second)
	if code, body := r.call("DELETE", "/v1/freeze", "", token); code != http.StatusOK {
		s.t.Fatalf("DELETE /v1/freeze on %s: %d %s", r.name, code, body)
	}
	return stoppedNode(fmt.Sprintf("operator-freeze with %s killed for %v", n.id, d), n, soakTouch{restarted: true, absent: true, down: d})
}
