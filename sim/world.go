package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/clock"
)

// errUnreachable is what a probe or a flush of a node that does not answer
// returns.
var errUnreachable = errors.New("sim: node unreachable")

// node is one simulated memcached host: its cache, its counters, and
// whether it runs, answers and is listed as passing in Consul.
type node struct {
	id, addr, az string
	cache        *lru
	// hits, misses and flushes are memcached's get_hits, get_misses and
	// cmd_flush, in real reads (each sampled read counts for the weight).
	hits, misses, flushes uint64
	pid                   int64
	started               time.Time
	alive                 bool // the process and host run
	cutOff                bool // a partition: nobody reaches it
	consulUp              bool // Consul lists it with every check passing
}

// world is the simulated fleet as the cache clients, Consul and the
// observer (mcrib's host) see it.
type world struct {
	clk   *clock.Fake
	rng   *rand.Rand
	nodes []*node
	byID  map[string]int
	addrs map[string]int
	// observerCut is set while mcrib's host cannot reach the fleet (its
	// probes fail and its Consul agent reports every node failing).
	observerCut bool
	// probeLoss is the chance that one probe is lost.
	probeLoss   float64
	consulIndex uint64
	nextPID     int64
}

// newWorld returns a fleet of n nodes spread round-robin over zones, or,
// when fleet is not nil, the nodes of that live pool (whatif.go).
func newWorld(clk *clock.Fake, rng *rand.Rand, n, itemsPerNode int, fleet *Fleet) *world {
	if fleet != nil {
		n = len(fleet.Nodes)
	}
	w := &world{clk: clk, rng: rng, byID: make(map[string]int, n), addrs: make(map[string]int, n), nextPID: 1000}
	for i := range n {
		nd := &node{
			id:    fmt.Sprintf("mc-%04d", i),
			addr:  fmt.Sprintf("10.%d.%d.%d:11211", i/65536, (i/256)%256, i%256),
			az:    zones[i%len(zones)],
			cache: newLRU(itemsPerNode), alive: true, consulUp: true,
			pid: w.nextPID, started: clk.Now(),
		}
		if fleet != nil {
			fn := fleet.Nodes[i]
			nd.id, nd.addr, nd.az, nd.alive, nd.consulUp = fn.ID, fn.Addr, fn.AZ, !fn.Down, !fn.Absent
		}
		w.nextPID++
		w.byID[nd.id] = i
		w.addrs[nd.addr] = i
		w.nodes = append(w.nodes, nd)
	}
	return w
}

// servesClients reports whether the cache clients reach node i.
func (w *world) servesClients(i int) bool {
	nd := w.nodes[i]
	return nd.alive && !nd.cutOff
}

// observerReaches reports whether mcrib's host reaches node i now.
func (w *world) observerReaches(i int) bool {
	return w.servesClients(i) && !w.observerCut
}

// membership returns the Consul answer mcrib's agent gives now: every node
// listed, passing unless its agent is away or the observer is cut off.
func (w *world) membership() cachenodes.Membership {
	w.consulIndex++
	m := cachenodes.Membership{Index: w.consulIndex, Instances: make([]cachenodes.Instance, len(w.nodes))}
	for i, nd := range w.nodes {
		m.Instances[i] = cachenodes.Instance{
			Node:    w.node(i),
			Present: nd.consulUp && !w.observerCut,
		}
	}
	return m
}

// zones are the simulated pool's availability zones; node i of a fleet
// the simulator makes up is in zones[i % len(zones)].
var zones = []string{"a", "b", "c"}

// node returns node i as cachenodes sees it, its zone included.
func (w *world) node(i int) cachenodes.Node {
	return cachenodes.Node{ID: w.nodes[i].id, Addr: w.nodes[i].addr, AZ: w.nodes[i].az}
}

// flush empties node i when it answers; flush counts it as cmd_flush.
func (w *world) flush(i int) error {
	if !w.observerReaches(i) {
		return errUnreachable
	}
	nd := w.nodes[i]
	nd.cache.reset()
	nd.flushes++
	return nil
}

// prober is the controlloop.Prober of the simulated fleet: a "stats" or
// "flush_all" from mcrib's host, answered at once or not at all.
type prober struct {
	w       *world
	flushes *int
}

// Stats returns the node's counters as memcached's "stats" gives them.
func (p prober) Stats(_ context.Context, addr string) (cachenodes.Stats, error) {
	i, ok := p.w.addrs[addr]
	if !ok || !p.w.observerReaches(i) {
		return cachenodes.Stats{}, errUnreachable
	}
	if p.w.probeLoss > 0 && p.w.rng.Float64() < p.w.probeLoss {
		return cachenodes.Stats{}, errUnreachable
	}
	nd := p.w.nodes[i]
	return cachenodes.Stats{
		PID: nd.pid, Uptime: p.w.clk.Now().Sub(nd.started), CurrItems: uint64(nd.cache.len()),
		GetHits: nd.hits, GetMisses: nd.misses, CmdFlush: nd.flushes,
	}, nil
}

// Flush empties the node, as "flush_all" does.
func (p prober) Flush(_ context.Context, addr string) error {
	i, ok := p.w.addrs[addr]
	if !ok {
		return errUnreachable
	}
	if err := p.w.flush(i); err != nil {
		return err
	}
	*p.flushes++
	return nil
}
