package e2e

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/mcrib/mcrib/internal/testenv"
)

// The soak's faults. Each is applied, lasts a time drawn from its range and
// is undone (healed, resumed, restarted) before the step ends; a step is
// one fault, or a fault of a node with a fault of the observer side nested
// inside it. A fault reports which node's memcached it stopped (what the
// clients lost too) and which Consul agents the server must join again.

// soakHold is the --hold of the soak's pool: faults of the nodes last from
// well under it to well over it, so that real deaths cause replacements.
const soakHold = 5 * time.Second

// soakFault is one kind of fault.
type soakFault struct {
	name   string
	weight int
	side   string // "node": it stops a memcached; "observer": mcrib, Consul or a link of theirs; "" alone
	lo, hi time.Duration
	apply  func(s *soak) soakApplied
}

// soakApplied is one fault in force.
type soakApplied struct {
	what   string                 // e.g. "memcached-pause mc-03"
	node   *hostNode              // whose memcached it stopped, or nil
	touch  soakTouch              // what it did to that memcached
	rejoin []*testenv.ConsulAgent // agents the server must join again
	undo   func()
}

// soakFaults is the menu, drawn by weight.
var soakFaults = []soakFault{
	{"memcached-kill", 3, "node", time.Second, 2 * soakHold, (*soak).memcachedKill},
	{"memcached-pause", 3, "node", 500 * time.Millisecond, 2 * soakHold, (*soak).memcachedPause},
	{"cut-memcached-host", 2, "node", time.Second, 2 * soakHold, (*soak).cutNodeHost},
	{"agent-restart", 2, "observer", 500 * time.Millisecond, 3 * time.Second, (*soak).agentRestart},
	{"mcrib-pause", 2, "observer", time.Second, 2 * soakHold, (*soak).mcribPause},
	{"cut-replica-host", 1, "observer", time.Second, 8 * time.Second, (*soak).cutReplicaHost},
	{"blackhole", 1, "observer", 2 * time.Second, 2 * soakHold, (*soak).blackhole},
	{"drop", 1, "observer", 2 * time.Second, 2 * soakHold, (*soak).drop},
	{"consul-restart", 1, "observer", time.Second, 5 * time.Second, (*soak).consulRestart},
	{"leader-kill", 2, "observer", 500 * time.Millisecond, 2 * soakHold, (*soak).leaderKill},
	{"operator-freeze", 1, "", soakHold + 2*time.Second, 2*soakHold + 2*time.Second, (*soak).operatorFreeze},
}

// pickFault draws a fault by weight among those ok accepts.
func pickFault(rng *rand.Rand, ok func(soakFault) bool) soakFault {
	var menu []soakFault
	total := 0
	for _, f := range soakFaults {
		if ok(f) {
			menu, total = append(menu, f), total+f.weight
		}
	}
	n := rng.IntN(total)
	for _, f := range menu {
		if n < f.weight {
			return f
		}
		n -= f.weight
	}
	panic("unreachable")
}

// nests reports whether observer fault o can be nested inside node fault
// n: a host cut off can neither take part in a Consul restart nor restart
// its agent, so only mcrib's own faults go inside a cut.
func nests(n, o soakFault) bool {
	if o.side != "observer" {
		return false
	}
	if n.name == "cut-memcached-host" {
		return o.name == "mcrib-pause" || o.name == "leader-kill" || o.name == "cut-replica-host"
	}
	return true
}

// between returns a duration in [lo, hi), to the 100ms.
func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return (lo + time.Duration(rng.Int64N(int64(hi-lo)))).Round(100 * time.Millisecond)
}

// step draws and runs one step: a fault, with a second one nested inside a
// node's fault one time in three. It returns what the step did.
func (s *soak) step() soakEffect {
	outer := pickFault(s.rng, func(soakFault) bool { return true })
	var inner *soakFault
	if outer.side == "node" && s.rng.IntN(3) == 0 {
		f := pickFault(s.rng, func(f soakFault) bool { return nests(outer, f) })
		inner = &f
	}
	d := between(s.rng, outer.lo, outer.hi)
	s.faults[outer.name]++
	a := outer.apply(s)
	start := time.Now()
	e := soakEffect{what: a.what, touched: map[string]soakTouch{}, rejoin: a.rejoin}
	if inner != nil {
		time.Sleep(between(s.rng, 0, d/2+time.Millisecond))
		di := between(s.rng, inner.lo, inner.hi)
		s.faults[inner.name]++
		b := inner.apply(s)
		time.Sleep(di)
		b.undo()
		e.what += fmt.Sprintf(" with %s for %v inside", b.what, di)
		e.rejoin = append(e.rejoin, b.rejoin...)
	}
	time.Sleep(time.Until(start.Add(d)))
	a.undo()
	down := time.Since(start).Round(100 * time.Millisecond)
	e.what = fmt.Sprintf("%s for %v", e.what, down)
	if a.node != nil {
		a.touch.stopped, a.touch.down = true, down
		e.touched[a.node.id] = a.touch
	}
	return e
}

func (s *soak) node() *hostNode   { return s.p.nodes[s.rng.IntN(len(s.p.nodes))] }
func (s *soak) replica() *replica { return s.p.replicas[s.rng.IntN(len(s.p.replicas))] }

// memcachedKill kills a memcached (-9); undone, it starts again, empty.
func (s *soak) memcachedKill() soakApplied {
	n := s.node()
	n.mc.Kill(s.t)
	return soakApplied{what: "memcached-kill " + n.id, node: n, touch: soakTouch{restarted: true, absent: true},
		undo: func() { n.mc.Start(s.t) }}
}

// memcachedPause stops a memcached (SIGSTOP): its kernel still accepts
// connections, so its Consul check passes.
func (s *soak) memcachedPause() soakApplied {
	n := s.node()
	n.mc.Pause(s.t)
	return soakApplied{what: "memcached-pause " + n.id, node: n, undo: func() { n.mc.Resume(s.t) }}
}

// cutNodeHost cuts a memcached host's link: memcached and its agent are
// lost to everyone.
func (s *soak) cutNodeHost() soakApplied {
	n := s.node()
	n.host.Cut(s.t)
	return soakApplied{what: "cut-memcached-host " + n.id, node: n, touch: soakTouch{absent: true},
		rejoin: []*testenv.ConsulAgent{n.agent}, undo: func() { n.host.Heal(s.t) }}
}

// agentRestart stops a client agent (of a memcached host or of a replica)
// and starts it again: its services leave the catalog meanwhile.
func (s *soak) agentRestart() soakApplied {
	a, on := s.replica().agent, "a replica's host"
	if s.rng.IntN(2) == 0 {
		n := s.node()
		a, on = n.agent, n.id
	}
	a.Stop(s.t)
	return soakApplied{what: fmt.Sprintf("agent-restart %s (%s)", a.NodeName, on),
		rejoin: []*testenv.ConsulAgent{a}, undo: func() { a.Start(s.t) }}
}

// mcribPause stops a replica (SIGSTOP), as a VM migration would.
func (s *soak) mcribPause() soakApplied {
	r := s.replica()
	r.Pause(s.t)
	return soakApplied{what: "mcrib-pause " + r.name, undo: func() { r.Resume(s.t) }}
}

// cutReplicaHost cuts a replica's host off: a fault of the observer.
func (s *soak) cutReplicaHost() soakApplied {
	r := s.replica()
	r.host.Cut(s.t)
	return soakApplied{what: "cut-replica-host " + r.name,
		rejoin: []*testenv.ConsulAgent{r.agent}, undo: func() { r.host.Heal(s.t) }}
}

// blackhole either has one replica's host lose a memcached host (the other
// replicas still reach it: the vote says it answers), or has a memcached
// host lose the Consul server (its agent drops out: the node is absent from
// Consul while it answers).
func (s *soak) blackhole() soakApplied {
	n := s.node()
	if s.rng.IntN(2) == 0 {
		r := s.replica()
		r.host.Blackhole(s.t, n.host.Addr)
		return soakApplied{what: fmt.Sprintf("blackhole %s → %s", r.name, n.id),
			rejoin: []*testenv.ConsulAgent{r.agent, n.agent}, undo: func() { r.host.Unblackhole(s.t, n.host.Addr) }}
	}
	n.host.Blackhole(s.t, s.p.consulAt.Addr)
	return soakApplied{what: fmt.Sprintf("blackhole %s → the Consul server", n.id),
		rejoin: []*testenv.ConsulAgent{n.agent}, undo: func() { n.host.Unblackhole(s.t, s.p.consulAt.Addr) }}
}

// drop has one replica's host lose a memcached host silently.
func (s *soak) drop() soakApplied {
	n, r := s.node(), s.replica()
	r.host.Drop(s.t, n.host.Addr)
	return soakApplied{what: fmt.Sprintf("drop %s → %s", r.name, n.id),
		rejoin: []*testenv.ConsulAgent{r.agent, n.agent}, undo: func() { r.host.Undrop(s.t, n.host.Addr) }}
}

// consulRestart stops the Consul server; undone, it starts again (a dev
// server: it returns with an empty KV, and mcrib writes its map back).
func (s *soak) consulRestart() soakApplied {
	s.p.consul.Stop(s.t)
	return soakApplied{what: "consul-restart", undo: func() { s.p.consul.Start(s.t) }}
}

// leaderKill kills the leader (-9); undone, it starts again.
func (s *soak) leaderKill() soakApplied {
	r := s.p.leader(30 * time.Second)
	r.Kill(s.t)
	return soakApplied{what: "leader-kill " + r.name, undo: func() {
		r.Start(s.t)
		r.WaitReady(s.t, 30*time.Second, func() bool { return r.ready() == http.StatusOK })
	}}
}

// operatorFreeze freezes the pool through the leader's API with the token
// and kills a slot holder's memcached meanwhile: no slot may change hands
// under the freeze, however long the holder is away. Undone, the holder
// starts again and the pool is thawed.
func (s *soak) operatorFreeze() soakApplied {
	r := s.p.leader(30 * time.Second)
	if code, body := r.api.do("PUT", "/v1/freeze", `{"reason":"soak"}`, token); code != http.StatusOK {
		s.t.Fatalf("PUT /v1/freeze on %s: %d %s", r.name, code, body)
	}
	time.Sleep(time.Second) // a pass under way when the freeze landed
	sm := s.p.slotMap()
	s.mon.freeze(sm)
	var holders []*hostNode
	for _, h := range sm.Slots() {
		if !h.IsZero() {
			holders = append(holders, s.p.byID[h.ID])
		}
	}
	n := holders[s.rng.IntN(len(holders))]
	n.mc.Kill(s.t)
	return soakApplied{what: fmt.Sprintf("operator-freeze through %s with %s killed", r.name, n.id), node: n,
		touch: soakTouch{restarted: true, absent: true}, undo: func() {
			n.mc.Start(s.t)
			time.Sleep(2 * hostsProbeInterval)
			s.mon.freeze(nil)
			r := s.p.leader(30 * time.Second)
			if code, body := r.api.do("DELETE", "/v1/freeze", "", token); code != http.StatusOK {
				s.t.Fatalf("DELETE /v1/freeze on %s: %d %s", r.name, code, body)
			}
		}}
}
