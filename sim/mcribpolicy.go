package sim

import (
	"context"
	"slices"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/controlloop"
	"github.com/mcrib/mcrib/leader"
	"github.com/mcrib/mcrib/mcribapi"
)

// membershipPolicy decides which node holds each slot: the map the cache
// clients route by.
type membershipPolicy interface {
	// onConsul takes one answer of Consul.
	onConsul(ctx context.Context, m cachenodes.Membership)
	// onProbeInterval runs what the policy does every probe interval.
	onProbeInterval(ctx context.Context)
	// route returns the node index of each slot, -1 for a vacant slot.
	route() []int
	// flushes and replacements count what the policy did.
	flushes() int
	replacements() int
}

// mcribPolicy is mcrib's own control loop, driven synchronously: the
// answers of Consul go to Loop.Observe, every probe interval each node is
// probed through the simulated Prober (Loop.ProbeNode) and a pass runs
// (Loop.Reconcile), as Run would schedule them but on one goroutine.
type mcribPolicy struct {
	w       *world
	loop    *controlloop.Loop
	metrics *loopMetrics
	flushN  int
	gen     uint64
	routes  []int
	slots   int
	// served is the map routes and warm follow; warm is each slot's
	// warm source (warmmoves.go).
	served *cachenodes.SlotMap
	warm   []warmSource
	// copies are the leader's copies of the warming slots, by slot
	// (warmcopy.go).
	copies map[int]*simCopy
	// act is the what-if's action in progress (whatif.go).
	act    actionRun
	action *Action
	// drain is the zone drain of zone-drain in progress (zonedrain.go).
	drain zoneDrain
	// grow is the resize of grow in progress (grow.go).
	grow growth
	// wake schedules a pass after d when that comes before the next probe
	// interval, as Run's step timer does for a drain step; wakeAt is the
	// time of the pass scheduled so (zero: none).
	wake   func(d time.Duration) bool
	wakeAt time.Time
}

func newMCribPolicy(w *world, cfg Config) (*mcribPolicy, error) {
	p := &mcribPolicy{w: w, metrics: &loopMetrics{}, slots: cfg.Slots, action: cfg.action}
	store, pool := &memStore{}, "sim"
	if cfg.Fleet != nil && cfg.Fleet.Map != nil {
		store.m, store.index = cfg.Fleet.Map, 1 // the live pool's map, as Consul holds it
		pool = cfg.Fleet.Map.Pool()
	}
	loop, err := controlloop.New(controlloop.Options{
		Pool: pool, KVPrefix: "mcrib", NumSlots: cfg.Slots,
		Hold: cfg.Hold, ProbeInterval: cfg.ProbeInterval,
		FlushAfterUnreachable:    cfg.FlushAfterUnreachable,
		MaxAbsentFraction:        cfg.MaxAbsentFraction,
		MaxReplacementsPerMinute: cfg.MaxReplacementsPerMinute,
		WarmFor:                  warmFor(cfg),
		Converge:                 convergeRule(cfg),
		SettleAfterMove:          3 * cfg.StatsInterval,
		Store:                    store,
		Discovery:                noDiscovery{},
		Prober:                   prober{w: w, flushes: &p.flushN},
		Clock:                    w.clk,
		Metrics:                  p.metrics,
	})
	if err != nil {
		return nil, err
	}
	p.loop = loop
	p.routes = make([]int, cfg.Slots)
	p.warm = make([]warmSource, cfg.Slots)
	for i := range p.routes {
		p.routes[i] = -1
		p.warm[i].node = -1
	}
	return p, nil
}

func (p *mcribPolicy) onConsul(ctx context.Context, m cachenodes.Membership) {
	p.loop.Observe(m)
	p.pass(ctx) // the answer kicks a pass
}

func (p *mcribPolicy) onProbeInterval(ctx context.Context) {
	for i := range p.w.nodes {
		p.loop.ProbeNode(ctx, p.w.node(i))
	}
	p.pass(ctx)
}

// pass runs one reconcile pass and follows the map it serves.
func (p *mcribPolicy) pass(ctx context.Context) {
	_, _ = p.loop.Reconcile(ctx) // a failed pass is retried next interval, as Run does
	p.drain.check(p.loop, p.w.clk.Now())
	if d, ok := p.loop.NextStepIn(); ok && p.wake != nil {
		if at := p.w.clk.Now().Add(d); !at.Equal(p.wakeAt) && p.wake(d) {
			p.wakeAt = at
		}
	}
	m := p.loop.SlotMap()
	p.checkGrowth(m, p.w.clk.Now())
	p.checkAction(p.action, m, p.w.clk.Now())
	if p.grow.naive {
		return // the clients route by the naive map
	}
	p.follow(m)
}

// follow makes m the map the clients route by.
func (p *mcribPolicy) follow(m *cachenodes.SlotMap) {
	if m == nil || m == p.served {
		return
	}
	// A warming begins with a new generation but ends without one.
	p.served = m
	resized := m.NumSlots() != len(p.routes)
	if resized {
		p.routes, p.warm = make([]int, m.NumSlots()), make([]warmSource, m.NumSlots())
	}
	p.followWarming(m)
	if m.Generation() == p.gen && !resized {
		return
	}
	p.gen = m.Generation()
	for s := range p.routes {
		p.routes[s] = -1
		if n := m.Slot(s); !n.IsZero() {
			if i, ok := p.w.byID[n.ID]; ok {
				p.routes[s] = i
			}
		}
	}
}

func (p *mcribPolicy) route() []int      { return p.routes }
func (p *mcribPolicy) flushes() int      { return p.flushN }
func (p *mcribPolicy) replacements() int { return p.metrics.replacements }

// loopMetrics counts the loop's replacements (controlloop.Metrics).
type loopMetrics struct{ replacements int }

func (m *loopMetrics) Pass(mcribapi.Outcome, time.Duration) {}
func (m *loopMetrics) Replacement(mcribapi.EvictionReason)  { m.replacements++ }
func (m *loopMetrics) Flush(string)                         {}
func (m *loopMetrics) SlotMove(mcribapi.MoveKind)           {}
func (m *loopMetrics) ConfigWrite(string, time.Time, error) {}

// memStore is the loop's Store in memory: one process leads alone, so
// every check-and-set write succeeds. It keeps the drain document
// (drainstore.go), the resize document (resizestore.go), the roll
// document (rollstore.go) and the flushes owed too.
type memStore struct {
	m     *cachenodes.SlotMap
	index uint64
	// drain is the drain document (nil: none) and drainIndex its
	// version (0: none), drawn from drainSeq.
	drain                *mcribapi.DrainDoc
	drainIndex, drainSeq uint64
	// flushes are the flushes owed (nil: none), at flushesIndex (0: none),
	// drawn from flushesSeq.
	flushes                  []controlloop.OwedFlush
	flushesIndex, flushesSeq uint64
	// resize is the resize document (nil: none), at resizeIndex (0:
	// none), drawn from resizeSeq (resizestore.go).
	resize                 *mcribapi.ResizeDoc
	resizeIndex, resizeSeq uint64
	// roll is the roll document (nil: none), at rollIndex (0: none),
	// drawn from rollSeq (rollstore.go).
	roll               *mcribapi.RollDoc
	rollIndex, rollSeq uint64
}

func (s *memStore) Read(context.Context) (controlloop.Snapshot, error) {
	return controlloop.Snapshot{SlotMap: s.m, SlotMapIndex: s.index, Drain: copyDrain(s.drain), DrainIndex: s.drainIndex,
		Flushes: slices.Clone(s.flushes), FlushesIndex: s.flushesIndex, Resize: s.copyResize(), ResizeIndex: s.resizeIndex,
		Roll: s.copyRoll(), RollIndex: s.rollIndex}, nil
}

// WritePool stores w if the slot map, the drain, resize and roll
// documents and the flushes are still at the versions read.
func (s *memStore) WritePool(_ context.Context, read controlloop.Snapshot, _ leader.Lease, w controlloop.PoolWrite) (bool, error) {
	if read.SlotMapIndex != s.index || read.DrainIndex != s.drainIndex || read.FlushesIndex != s.flushesIndex ||
		read.ResizeIndex != s.resizeIndex || read.RollIndex != s.rollIndex {
		return false, nil
	}
	if w.Roll != nil {
		s.putRoll(w.Roll)
	}
	if w.Resize != nil {
		s.putResize(w.Resize)
	}
	if w.Drain != nil {
		s.putDrain(w.Drain)
	}
	if w.Flushes != nil {
		s.flushes = slices.Clone(w.Flushes.Flushes)
		s.flushesSeq++
		s.flushesIndex = s.flushesSeq
		if len(s.flushes) == 0 {
			s.flushes, s.flushesIndex = nil, 0
		}
	}
	if w.SlotMap != nil {
		s.m = w.SlotMap
		s.index++
	}
	return true, nil
}

func (s *memStore) DeleteVote(context.Context, string, uint64) (bool, error) { return true, nil }

func (s *memStore) PutFreeze(context.Context, mcribapi.FreezeDoc) error { return nil }
func (s *memStore) DeleteFreeze(context.Context) error                  { return nil }
func (s *memStore) PutVote(context.Context, string, controlloop.Vote, leader.Lease) error {
	return nil
}

// noDiscovery is the loop's Discovery; the simulator hands the answers to
// Loop.Observe itself and never calls Run.
type noDiscovery struct{}

func (noDiscovery) Run(ctx context.Context, _ func(cachenodes.Membership), _ func(error)) {
	<-ctx.Done()
}
