package dst

import (
	"cmp"
	"container/heap"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/mcrib/mcrib/internal/kvlayout"
)

// simStart is the simulated time 0, as the hosts' clocks read it (skew
// aside).
var simStart = time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)

// world is one run: every host, process, node and client, the network,
// Consul, the agenda and the checker. Everything happens on the goroutine
// that calls run.
type world struct {
	cfg   Config
	rng   *rand.Rand
	start time.Time
	now   time.Duration
	// step counts the events run; seq orders the events scheduled.
	step, seq uint64
	queue     eventQueue
	// opSeq orders the begins and ends of client operations.
	opSeq uint64

	hosts      map[string]*host
	net        *network
	consul     *consulSim
	nodes      []*mcNode
	nodeByAddr map[string]*mcNode
	nodeByID   map[string]*mcNode
	replicas   []*replica
	clients    []*appClient
	history    []*op
	pids       int64

	// truth counts the changes of the ground truth: the network, the
	// memcached processes, what Consul lists, the replicas alive.
	truth uint64

	hold, flushAfter time.Duration
	mix              mixState

	chk *checker
	tr  *trace
	// boots drives boot admissions (nil: none); plant is the planted
	// breakage (zero: none).
	boots *boots
	plant plantState

	asked     map[uint64]uint64
	askedStep uint64

	// replicaCount is the number of replicas; containers are the
	// memcached hosts whose restarts keep the pid (variety.go).
	replicaCount int
	containers   map[string]bool
}

// mixState is the fault mix in force.
type mixState struct {
	every      time.Duration
	kinds      []string
	weights    []int
	total      int
	interleave float64
}

// Result is the outcome of one run.
type Result struct {
	Config Config
	// Violation is the first rule broken; nil when the run was clean.
	Violation *Violation
	// Tolerated are the first violation of each rule that Config.Tolerate
	// let the run go on after.
	Tolerated []*Violation
	// Steps is the number of events run, SimTime the simulated time
	// reached.
	Steps   uint64
	SimTime time.Duration
	// TraceHash is the hash of the whole trace: two runs of one Config
	// have the same.
	TraceHash string
	// Hold and FlushAfter are the settings the seed drew.
	Hold, FlushAfter time.Duration
	// Ops counts the client operations, Reads the reads checked
	// against the history, Faults the faults injected.
	Ops, Reads, Faults int
	// Doublings counts the stored map's doubling writes (resizes begun),
	// Splits the twins split.
	Doublings, Splits int
}

// Run runs the simulation of cfg and returns what the checker found.
func Run(cfg Config) Result {
	w := newWorld(cfg.withDefaults())
	w.run()
	res := Result{Config: w.cfg, Violation: w.chk.violation, Tolerated: w.chk.tolerated, Steps: w.step, SimTime: w.now, TraceHash: w.tr.sum(),
		Hold: w.hold, FlushAfter: w.flushAfter, Ops: len(w.history), Reads: w.chk.reads, Faults: w.chk.faults,
		Doublings: w.chk.resize.doublings, Splits: w.chk.resize.splits}
	return res
}

func newWorld(cfg Config) *world {
	w := &world{cfg: cfg, rng: rngFor(cfg.Seed), start: simStart, hosts: map[string]*host{},
		nodeByAddr: map[string]*mcNode{}, nodeByID: map[string]*mcNode{}}
	var verbose func(string)
	if cfg.Trace != nil {
		verbose = func(s string) { fmt.Fprintln(cfg.Trace, s) }
	}
	w.tr = newTrace(cfg.TraceKeep, verbose)
	w.net = newNetwork(w)
	w.consul = newConsul(w)
	w.chk = newChecker(w)
	w.settings()
	mix := *cfg.Mix
	if cfg.varyMix {
		mix = w.varyMix(mix)
	}
	w.setMix(mix)
	w.build()
	return w
}

func (w *world) setMix(m Mix) {
	w.mix = mixState{every: m.Every, interleave: m.Interleave}
	for _, k := range slices.Sorted(maps.Keys(m.Weights)) {
		if m.Weights[k] > 0 {
			w.mix.kinds = append(w.mix.kinds, k)
			w.mix.weights = append(w.mix.weights, m.Weights[k])
			w.mix.total += m.Weights[k]
		}
	}
}

var zones = []string{"a", "b", "c"}

// addHost adds a machine with a clock of its own.
func (w *world) addHost(name, zone string) *host {
	h := &host{name: name, zone: zone, skew: w.randomSkew()}
	w.hosts[name] = h
	return h
}

// randomSkew draws a clock offset in whole milliseconds within ±maxSkew.
func (w *world) randomSkew() time.Duration {
	ms := int64(maxSkew / time.Millisecond)
	return time.Duration(w.rng.Int64N(2*ms+1)-ms) * time.Millisecond
}

// build sets the pool up: Consul, the replicas, the memcached hosts and
// their nodes, the clients, and the clockwork of each.
func (w *world) build() {
	w.addHost(consulHost, "").skew = 0
	for i := range w.cfg.NodeHosts {
		h := w.addHost(hostName(i), zones[i%len(zones)])
		w.consul.addAgent(h.name)
		for range 2 + w.rng.IntN(2) {
			w.addNode(h)
		}
		phase := time.Duration(w.rng.Int64N(int64(agentCheckEvery/time.Millisecond))) * time.Millisecond
		w.every(phase, agentCheckEvery, "agent checks "+h.name, nil, func() { w.agentChecks(h) })
	}
	for i := range w.replicaCount {
		h := w.addHost(fmt.Sprintf("r%d", i+1), zones[i%len(zones)])
		w.consul.addAgent(h.name)
		r := &replica{w: w, idx: i, id: h.name + ":7070", host: h}
		w.replicas = append(w.replicas, r)
		w.at(time.Duration(w.rng.Int64N(1000))*time.Millisecond, "start "+h.name, r.start)
	}
	for i := range w.cfg.Clients {
		h := w.addHost(fmt.Sprintf("c%d", i+1), zones[i%len(zones)])
		c := w.newClient(i, h)
		w.clients = append(w.clients, c)
		w.every(5*time.Second+w.msUpTo(3000), time.Second+w.msUpTo(2000), h.name+" map", nil, c.takeMap)
		var next func()
		next = func() {
			c.randomOp()
			w.after(time.Duration(10+w.rng.IntN(240))*time.Millisecond, h.name+" op", next)
		}
		w.at(8*time.Second+w.msUpTo(1000), h.name+" op", next)
	}
	w.every(0, 250*time.Millisecond, "consul", nil, w.consul.tick)
	w.at(15*time.Second+w.msUpTo(5000), "fault", w.nextFault)
	if w.cfg.Boots != nil {
		w.startBoots()
	}
	if w.cfg.Planted != nil {
		w.cfg.Planted.setup(w)
	}
}

// msUpTo draws a whole number of milliseconds below n.
func (w *world) msUpTo(n int) time.Duration { return time.Duration(w.rng.IntN(n)) * time.Millisecond }

// addNode starts a new memcached on h, registered in Consul.
func (w *world) addNode(h *host) *mcNode {
	port := 11211
	for _, n := range w.nodes {
		if n.host == h && n.port >= port {
			port = n.port + 1
		}
	}
	n := &mcNode{w: w, id: fmt.Sprintf("mc-%02d", len(w.nodes)+1), host: h, port: port}
	n.addr = fmt.Sprintf("%s:%d", h.name, port)
	n.restart()
	w.nodes = append(w.nodes, n)
	w.nodeByAddr[n.addr] = n
	w.nodeByID[n.id] = n
	w.consul.services[n.id] = &service{id: n.id, host: h.name, port: port, zone: h.zone, listed: true, passing: true}
	w.consul.touchHealth()
	w.chk.onNode(n)
	for _, r := range w.replicas {
		if r.proc != nil {
			r.proc.scheduleProbes(n, n.id)
		}
	}
	return n
}

// agentChecks runs the service checks of h's agent.
func (w *world) agentChecks(h *host) {
	a := w.consul.agents[h.name]
	if a == nil || !a.up {
		return
	}
	for _, id := range sortedKeys(w.consul.services) {
		s := w.consul.services[id]
		if s.host != h.name || !s.listed {
			continue
		}
		n := w.nodeByID[id]
		ok := n != nil && n.proc == running
		if ok != s.passing {
			s.passing = ok
			w.consul.touchHealth()
			w.tr.add(w.now, "consul: check of %s %s", id, passingWord(ok))
		}
	}
}

// nextSeq returns the next number of the history's order.
func (w *world) nextSeq() uint64 { w.opSeq++; return w.opSeq }

// run runs the agenda until the duration or the first violation.
func (w *world) run() {
	w.tr.add(0, "seed %d: hold %v, flush-after-unreachable %v, %d replicas, %d nodes, %d slots", w.cfg.Seed, w.hold, w.flushAfter, len(w.replicas), len(w.nodes), w.cfg.Slots)
	for w.queue.Len() > 0 {
		e := heap.Pop(&w.queue).(*event)
		if e.at > w.cfg.Duration {
			w.now = w.cfg.Duration
			break
		}
		w.now = e.at
		w.step++
		e.fn()
		w.chk.afterStep(e.name)
		if w.chk.violation != nil {
			return
		}
	}
	w.chk.atEnd()
}

// sortedKeys returns m's keys in order.
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K { return slices.Sorted(maps.Keys(m)) }

// poolKeys are the pool's keys in Consul KV.
var poolKeys = kvlayout.For(kvPrefix, poolName)
