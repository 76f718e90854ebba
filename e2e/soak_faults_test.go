package e2e

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/mcrib/mcrib/internal/testenv"
)

// The soak's faults. Each is applied, lasts a time drawn from its range and
// is undone (healed, resumed, restarted) before the step ends; a step is
// one fault, or a fault of a node with a fault of the observer side nested
// inside it, or a planned move (soak_planned_test.go) with a fault of a
// node or of the observer nested inside it. A fault reports which nodes'
// memcached it stopped (what the clients lost too) and which Consul agents
// the server must join again; a planned move also which nodes may lose a
// slot, when it has happened, and what the pool must have finished before
// it settles.

// soakHold is the --hold of the soak's pool: faults of the nodes last from
// well under it to well over it, so that real deaths cause replacements.
const soakHold = 5 * time.Second

// soakFault is one kind of fault.
type soakFault struct {
	name   string
	weight int
	// side is "node" (it stops a memcached), "observer" (mcrib, Consul or
	// a link of theirs), "client" (an application), "planned" (an
	// operator's planned move) or "" (alone).
	side   string
	lo, hi time.Duration
	apply  func(s *soak) soakApplied
	// can, when not nil, says whether the fault can be drawn now.
	can func(s *soak) bool
}

// soakApplied is one fault in force.
type soakApplied struct {
	what   string                 // e.g. "memcached-pause mc-a-3"
	nodes  []*hostNode            // whose memcached it stopped
	touch  soakTouch              // what it did to them
	rejoin []*testenv.ConsulAgent // agents the server must join again
	undo   func()
	// The planned moves' (nil or zero for the other faults):
	// moves are the nodes that may lose their slots, anyMove that any
	// may (a drain and its return).
	moves   map[string]bool
	anyMove bool
	// done, polled once the fault's time is up and before undo, reports
	// whether the move it asked for has happened, and what it waits for.
	done func() (bool, string)
	// over, polled after undo before the pool settles, reports whether
	// the operation is over (a return to its baseline, a resize's last
	// split), and what it waits for.
	over func() (bool, string)
	// after runs once the pool settled.
	after func()
}

// soakPlannedWait bounds how long a planned move may take to happen, and
// to be over: generous, as a nested fault may hold it up.
const soakPlannedWait = 120 * time.Second

// soakFaults is the menu, drawn by weight.
var soakFaults = []soakFault{
	{name: "memcached-kill", weight: 3, side: "node", lo: time.Second, hi: 2 * soakHold, apply: (*soak).memcachedKill},
	{name: "memcached-pause", weight: 3, side: "node", lo: 500 * time.Millisecond, hi: 2 * soakHold, apply: (*soak).memcachedPause},
	{name: "cut-memcached-host", weight: 2, side: "node", lo: time.Second, hi: 2 * soakHold, apply: (*soak).cutNodeHost},
	{name: "agent-restart", weight: 2, side: "observer", lo: 500 * time.Millisecond, hi: 3 * time.Second, apply: (*soak).agentRestart},
	{name: "mcrib-pause", weight: 2, side: "observer", lo: time.Second, hi: 2 * soakHold, apply: (*soak).mcribPause},
	{name: "cut-replica-host", weight: 1, side: "observer", lo: time.Second, hi: 8 * time.Second, apply: (*soak).cutReplicaHost},
	{name: "blackhole", weight: 1, side: "observer", lo: 2 * time.Second, hi: 2 * soakHold, apply: (*soak).blackhole},
	{name: "drop", weight: 1, side: "observer", lo: 2 * time.Second, hi: 2 * soakHold, apply: (*soak).drop},
	{name: "consul-restart", weight: 1, side: "observer", lo: time.Second, hi: 5 * time.Second, apply: (*soak).consulRestart},
	{name: "leader-kill", weight: 2, side: "observer", lo: 500 * time.Millisecond, hi: 2 * soakHold, apply: (*soak).leaderKill},
	{name: "clients-deploy", weight: 2, side: "client", lo: 0, hi: time.Second, apply: (*soak).clientsDeploy},
	{name: "operator-freeze", weight: 1, lo: soakHold + 2*time.Second, hi: 2*soakHold + 2*time.Second, apply: (*soak).operatorFreeze},
	{name: "drain-zone", weight: 2, side: "planned", lo: time.Second, hi: 5 * time.Second, apply: (*soak).drainZone},
	{name: "replace", weight: 2, side: "planned", lo: 0, hi: 3 * time.Second, apply: (*soak).replace},
	{name: "maintenance", weight: 2, side: "planned", lo: time.Second, hi: 4 * time.Second, apply: (*soak).maintenance},
	{name: "resize", weight: 1, side: "planned", lo: 0, hi: 3 * time.Second, apply: (*soak).resize, can: (*soak).canResize},
}

// soakPlanned are the planned moves every soak makes at least once, in
// its first steps (the resize last: it leaves two spares).
var soakPlanned = []string{"drain-zone", "replace", "maintenance", "resize"}

// faultNamed returns the fault of the menu called name.
func faultNamed(name string) soakFault {
	for _, f := range soakFaults {
		if f.name == name {
			return f
		}
	}
	panic("no soak fault " + name)
}

// pickFault draws a fault by weight among those ok accepts and that can
// be drawn now.
func pickFault(s *soak, ok func(soakFault) bool) soakFault {
	var menu []soakFault
	total := 0
	for _, f := range soakFaults {
		if ok(f) && (f.can == nil || f.can(s)) {
			menu, total = append(menu, f), total+f.weight
		}
	}
	n := s.rng.IntN(total)
	for _, f := range menu {
		if n < f.weight {
			return f
		}
		n -= f.weight
	}
	panic("unreachable")
}

// nests reports whether fault o can be nested inside fault n: an
// observer's or a client's inside a node's; a node's, an observer's or a
// client's inside a planned move. A host cut off can neither take part in
// a Consul restart nor restart its agent, so only mcrib's own faults and
// the clients' go inside a cut. A Consul restart is not nested inside a
// planned move: the bed's dev server comes back with an empty KV, and a
// drain's or a resize's stored state with it, which is the loss of
// Consul's data, not a restart (a replica that had not read a resize's
// first write writes its older map back, and the other then refuses the
// stored slot count for good).
func nests(n, o soakFault) bool {
	switch {
	case o.side == "client":
		return n.side == "node" || n.side == "planned"
	case n.side == "planned":
		return (o.side == "node" || o.side == "observer") && o.name != "consul-restart"
	case o.side != "observer":
		return false
	case n.name == "cut-memcached-host":
		return o.name == "mcrib-pause" || o.name == "leader-kill" || o.name == "cut-replica-host"
	}
	return true
}

// between returns a duration in [lo, hi), to the 100ms.
func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return (lo + time.Duration(rng.Int64N(int64(hi-lo)))).Round(100 * time.Millisecond)
}

// step runs one step: the fault named forced, or one drawn; with a second
// one nested inside a node's fault one time in three, inside a planned
// move one time in two. A forced (scheduled) planned move comes after a
// deploy of the clients, so that some of them follow each replica as it
// is made. It returns what the step did.
func (s *soak) step(forced string) soakEffect {
	var outer soakFault
	deployed := ""
	if forced != "" {
		outer = faultNamed(forced)
		s.faults["clients-deploy"]++
		deployed = s.clientsDeploy().what + ", then "
	} else {
		outer = pickFault(s, func(soakFault) bool { return true })
	}
	var inner *soakFault
	if (outer.side == "node" && s.rng.IntN(3) == 0) || (outer.side == "planned" && s.rng.IntN(2) == 0) {
		f := pickFault(s, func(f soakFault) bool { return nests(outer, f) })
		inner = &f
	}
	d := between(s.rng, outer.lo, outer.hi)
	s.faults[outer.name]++
	a := outer.apply(s)
	start := time.Now()
	e := soakEffect{what: a.what, touched: map[string]soakTouch{}, rejoin: a.rejoin,
		moves: a.moves, anyMove: a.anyMove, over: a.over, after: a.after}
	if inner != nil {
		time.Sleep(between(s.rng, 0, d/2+time.Millisecond))
		di := between(s.rng, inner.lo, inner.hi)
		s.faults[inner.name]++
		b := inner.apply(s)
		innerAt := time.Now()
		time.Sleep(di)
		b.undo()
		e.what += fmt.Sprintf(" with %s for %v inside", b.what, di)
		e.rejoin = append(e.rejoin, b.rejoin...)
		for _, n := range b.nodes {
			t := b.touch
			t.stopped, t.down = true, time.Since(innerAt).Round(100*time.Millisecond)
			e.touched[n.id] = t
		}
	}
	e.what = deployed + e.what
	time.Sleep(time.Until(start.Add(d)))
	if a.done != nil {
		var why string
		if !within(soakPlannedWait, func() (ok bool) { ok, why = a.done(); return ok }) {
			s.checker.violate("%s: not carried out within %v of its end: %s", a.what, soakPlannedWait, why)
		}
	}
	a.undo()
	down := time.Since(start).Round(100 * time.Millisecond)
	e.what = fmt.Sprintf("%s for %v", e.what, down)
	for _, n := range a.nodes {
		t := a.touch
		t.stopped, t.down = true, down
		if was, ok := e.touched[n.id]; ok {
			t.restarted = t.restarted || was.restarted
			t.absent = t.absent || was.absent
		}
		e.touched[n.id] = t
	}
	return e
}

func (s *soak) node() *hostNode   { return s.p.nodes[s.rng.IntN(len(s.p.nodes))] }
func (s *soak) replica() *replica { return s.p.replicas[s.rng.IntN(len(s.p.replicas))] }

// memcachedKill kills a memcached (-9); undone, it starts again, empty.
func (s *soak) memcachedKill() soakApplied {
	n := s.node()
	n.mc.Kill(s.t)
	return soakApplied{what: "memcached-kill " + n.id, nodes: []*hostNode{n}, touch: soakTouch{restarted: true, absent: true},
		undo: func() { n.mc.Start(s.t) }}
}

// memcachedPause stops a memcached (SIGSTOP): its kernel still accepts
// connections, so its Consul check passes.
func (s *soak) memcachedPause() soakApplied {
	n := s.node()
	n.mc.Pause(s.t)
	return soakApplied{what: "memcached-pause " + n.id, nodes: []*hostNode{n}, undo: func() { n.mc.Resume(s.t) }}
}

// cutNodeHost cuts a memcached host's link: its memcached and its agent
// are lost to everyone.
func (s *soak) cutNodeHost() soakApplied {
	n := s.node()
	on := s.onHost(n.host)
	n.host.Cut(s.t)
	return soakApplied{what: "cut-memcached-host " + hostIDs(on), nodes: on, touch: soakTouch{absent: true},
		rejoin: []*testenv.ConsulAgent{n.agent}, undo: func() { n.host.Heal(s.t) }}
}

// onHost returns the nodes whose memcached runs on h.
func (s *soak) onHost(h *testenv.Host) []*hostNode {
	var out []*hostNode
	for _, n := range s.p.nodes {
		if n.host == h {
			out = append(out, n)
		}
	}
	return out
}

// hostIDs names the nodes of a host: "mc-a-1+mc-a-2".
func hostIDs(nodes []*hostNode) string {
	var ids []string
	for _, n := range nodes {
		ids = append(ids, n.id)
	}
	return strings.Join(ids, "+")
}

// agentRestart stops a client agent (of a memcached host or of a replica)
// and starts it again: its services leave the catalog meanwhile.
func (s *soak) agentRestart() soakApplied {
	a, on := s.replica().agent, "a replica's host"
	if s.rng.IntN(2) == 0 {
		n := s.node()
		a, on = n.agent, hostIDs(s.onHost(n.host))
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

// clientsDeploy restarts every application client in turn, as a deploy
// does: each new mcclient.Client follows the map from its first replica
// again. An HTTP follower sticks to the replica that answers it, and a
// leader's kill sends its clients to the replica that takes over, so
// without deploys the clients gather on the leader and none lags
// another's map by a follower's pass: the window of the cross-generation
// class.
func (s *soak) clientsDeploy() soakApplied {
	var names []string
	for _, a := range s.clients.apps {
		if a.build == nil {
			continue
		}
		if err := s.clients.restart(a); err != nil {
			s.checker.violate("clients-deploy: %v", err)
		}
		names = append(names, a.name)
	}
	return soakApplied{what: "clients-deploy " + strings.Join(names, ","), undo: func() {}}
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
	return soakApplied{what: fmt.Sprintf("operator-freeze through %s with %s killed", r.name, n.id), nodes: []*hostNode{n},
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
