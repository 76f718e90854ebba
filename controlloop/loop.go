package controlloop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"
	"golang.org/x/time/rate"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/flapdamp"
)

// ErrNoSlotMap is returned by SlotMap callers' helpers before any map is
// known (no Consul answer and nothing stored yet).
var ErrNoSlotMap = errors.New("controlloop: no slot map is known yet")

// Clock tells the time. Decision code takes its times from a Clock so
// tests can move time by hand.
type Clock interface{ Now() time.Time }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// Prober asks one memcached directly; *cachenodes.Prober implements it.
type Prober interface {
	Stats(ctx context.Context, addr string) (cachenodes.Stats, error)
	Flush(ctx context.Context, addr string) error
}

// Leadership tells the loop whether this process leads the pool;
// *leader.Elector implements it. Only the leader flushes and writes the
// slot map; the others follow the stored map.
type Leadership interface {
	IsLeader() bool
	Session() string
	LeaderID() string
	StepDown()
}

// Options configures a Loop. Consul, Pool, KVPrefix, NumSlots and Service
// are required; nil Leadership means this process always leads (without a
// session check), nil Prober a cachenodes.Prober whose timeout is the probe
// interval clamped to 250ms..1s, nil Clock the real clock, nil Logger a
// discarding logger, nil Metrics no metrics.
type Options struct {
	Consul   *api.Client
	Pool     string
	KVPrefix string
	NumSlots int
	Service  string
	Tag      string

	Hold                     time.Duration
	ProbeInterval            time.Duration
	FlushAfterUnreachable    time.Duration
	MaxAbsentFraction        float64
	MaxReplacementsPerMinute int
	// Damping is the flap damping; zero fields get flapdamp's defaults and
	// a zero BurstWindow the probe interval.
	Damping flapdamp.DampingConfig

	// MCRouterConfig, when set, is the path of an mcrouter config kept in
	// step with the slot map.
	MCRouterConfig string
	// TwemproxyConfig, when set, is the path of a twemproxy config kept in
	// step with the slot map, listening on TwemproxyListen (empty:
	// DefaultTwemproxyListen).
	TwemproxyConfig, TwemproxyListen string

	Leadership Leadership
	Prober     Prober
	Clock      Clock
	Logger     *slog.Logger
	Metrics    Metrics
}

// Loop reconciles the slot map of one pool. Build it with New; its methods
// are safe for concurrent use.
type Loop struct {
	opts   Options
	store  *store
	source *cachenodes.ConsulSource
	guard  flapdamp.MassGuard
	kick   chan struct{}
	passes *rate.Limiter

	mu            sync.Mutex
	tr            *tracker
	current       *cachenodes.SlotMap
	freeze        *FreezeDoc
	autoFrozen    string
	blocked       int
	leaderID      string
	consulErr     error
	passErr       error
	lastReconcile time.Time
	ceiling       flapdamp.Ceiling
	out           outputs
}

// New checks opts and returns a loop ready to Run.
func New(opts Options) (*Loop, error) {
	switch {
	case opts.Consul == nil:
		return nil, errors.New("controlloop: Options.Consul is required")
	case opts.Pool == "" || opts.KVPrefix == "" || opts.Service == "":
		return nil, errors.New("controlloop: Options.Pool, KVPrefix and Service are required")
	case opts.NumSlots < 1:
		return nil, errors.New("controlloop: Options.NumSlots must be at least 1")
	case opts.ProbeInterval <= 0:
		return nil, errors.New("controlloop: Options.ProbeInterval must be positive")
	}
	if opts.Clock == nil {
		opts.Clock = realClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Metrics == nil {
		opts.Metrics = nopMetrics{}
	}
	if opts.Prober == nil {
		opts.Prober = cachenodes.NewProber(cachenodes.ProberOptions{Timeout: min(max(opts.ProbeInterval, 250*time.Millisecond), time.Second)})
	}
	if opts.Damping.BurstWindow == 0 {
		opts.Damping.BurstWindow = opts.ProbeInterval
	}
	opts.Damping = opts.Damping.WithDefaults()
	source, err := cachenodes.NewConsulSource(cachenodes.ConsulSourceOptions{
		Client: opts.Consul, Service: opts.Service, Tag: opts.Tag, Logger: opts.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("building the consul source: %w", err)
	}
	return &Loop{
		opts:    opts,
		store:   &store{client: opts.Consul, prefix: PoolPrefix(opts.KVPrefix, opts.Pool)},
		source:  source,
		guard:   flapdamp.MassGuard{MaxAbsentFraction: opts.MaxAbsentFraction},
		kick:    make(chan struct{}, 1),
		passes:  rate.NewLimiter(rate.Limit(50), 10),
		tr:      newTracker(trackerConfig{Hold: flapdamp.Hold{Duration: opts.Hold}, FlushAfter: opts.FlushAfterUnreachable, Damping: opts.Damping}),
		ceiling: flapdamp.Ceiling{PerMinute: opts.MaxReplacementsPerMinute},
	}, nil
}

// Load reads the stored slot map once, so that a restarted process serves
// the map before its first pass. It returns an error wrapping
// ErrSlotCountMismatch when the stored map has another number of slots,
// and the Consul error when Consul cannot be read (the caller may go on:
// Run keeps trying).
func (l *Loop) Load(ctx context.Context) error {
	st, err := l.store.read(ctx)
	if err != nil {
		l.mu.Lock()
		l.consulErr = err
		l.mu.Unlock()
		return err
	}
	if err := l.checkSlots(st.slotMap); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.current, l.freeze, l.leaderID = st.slotMap, st.freeze, st.leaderID
	return nil
}

func (l *Loop) checkSlots(m *cachenodes.SlotMap) error {
	if m != nil && m.NumSlots() != l.opts.NumSlots {
		return fmt.Errorf("%w: pool %q has %d slots in Consul KV, --slots asks for %d; the slot count is fixed for the life of a pool",
			ErrSlotCountMismatch, l.opts.Pool, m.NumSlots(), l.opts.NumSlots)
	}
	return nil
}

// Kick asks for a pass as soon as possible.
func (l *Loop) Kick() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// Run watches Consul, probes the nodes and reconciles until ctx ends. It
// never returns early on an error: it logs, counts, backs off and retries.
func (l *Loop) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		l.source.Run(ctx, l.onAnswer, l.onWatchError)
	}()
	go func() {
		defer wg.Done()
		l.probeLoop(ctx)
	}()
	defer wg.Wait()

	tick := time.NewTicker(l.opts.ProbeInterval)
	defer tick.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.kick:
		case <-tick.C:
		}
		if err := l.passes.Wait(ctx); err != nil {
			return
		}
		start := time.Now()
		result, err := l.pass(ctx)
		l.opts.Metrics.Pass(result, time.Since(start))
		if err == nil {
			failures = 0
			continue
		}
		if ctx.Err() != nil {
			return
		}
		failures++
		wait := backoff(failures)
		l.opts.Logger.Warn("reconcile failed; retrying", "err", err, "failures", failures, "retry_in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// backoff is the wait after the n-th failure in a row: 100ms doubling,
// capped at 5s.
func backoff(n int) time.Duration {
	d := 100 * time.Millisecond << min(n-1, 6)
	return min(d, 5*time.Second)
}

func (l *Loop) onAnswer(m cachenodes.Membership) {
	l.mu.Lock()
	accepted := l.tr.observeMembership(m, l.opts.Clock.Now())
	fault := l.tr.fault
	evs := l.tr.drain()
	l.mu.Unlock()
	l.logEvents(evs)
	if !accepted {
		l.opts.Logger.Warn("discovery fault", "reason", fault)
	}
	l.Kick()
}

// logEvents writes node transitions to the log, one line each.
func (l *Loop) logEvents(evs []nodeEvent) {
	for _, e := range evs {
		l.opts.Logger.Info("node "+e.Event, "node", e.Node, "detail", e.Detail)
	}
}

func (l *Loop) onWatchError(err error) {
	l.opts.Logger.Warn("watching consul health failed", "err", err)
}

// probeLoop probes every tracked node each probe interval.
func (l *Loop) probeLoop(ctx context.Context) {
	tick := time.NewTicker(l.opts.ProbeInterval)
	defer tick.Stop()
	for {
		l.probeRound(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

type probeTarget struct {
	id, addr  string
	holdsSlot bool
	stats     cachenodes.Stats
	err       error
}

func (l *Loop) probeRound(ctx context.Context) {
	l.mu.Lock()
	targets := make([]probeTarget, 0, len(l.tr.nodes))
	for id, s := range l.tr.nodes {
		targets = append(targets, probeTarget{id: id, addr: s.node.Addr, holdsSlot: l.current != nil && l.current.SlotOf(id) >= 0})
	}
	l.mu.Unlock()
	if len(targets) == 0 {
		return
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i := range targets {
		wg.Add(1)
		sem <- struct{}{}
		go func(t *probeTarget) {
			defer wg.Done()
			defer func() { <-sem }()
			t.stats, t.err = l.opts.Prober.Stats(ctx, t.addr)
		}(&targets[i])
	}
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	now := l.opts.Clock.Now()
	l.mu.Lock()
	for _, t := range targets {
		l.tr.observeProbe(t.id, t.stats, t.err, t.holdsSlot, now)
	}
	evs := l.tr.drain()
	l.mu.Unlock()
	l.logEvents(evs)
	l.Kick()
}

func (l *Loop) leading() (bool, string) {
	if l.opts.Leadership == nil {
		return true, ""
	}
	if !l.opts.Leadership.IsLeader() {
		return false, ""
	}
	return true, l.opts.Leadership.Session()
}

// pass is one level-based reconcile: read, decide, act, write. It returns
// the metrics result ("ok", "error", "conflict", "follower", "waiting").
func (l *Loop) pass(ctx context.Context) (string, error) {
	st, err := l.store.read(ctx)
	now := l.opts.Clock.Now()
	if err != nil {
		l.setPassError(err, true)
		return "error", err
	}
	if err := l.checkSlots(st.slotMap); err != nil {
		l.setPassError(err, false)
		return "error", err
	}
	leading, session := l.leading()

	l.mu.Lock()
	l.consulErr = nil
	l.freeze, l.leaderID = st.freeze, st.leaderID
	if !leading {
		if st.slotMap != nil {
			l.current = st.slotMap
		}
		l.tr.ensure(l.current, now)
		l.tr.prune(l.current)
		l.autoFreezeLocked(l.current) // shown in the status; the leader acts on it
		l.lastReconcile, l.passErr = now, nil
		cur := l.current
		l.mu.Unlock()
		l.writeRouterConfig(cur)
		l.publish(cur)
		return "follower", nil
	}
	prev := st.slotMap
	if prev == nil || (l.current != nil && l.current.Generation() > prev.Generation()) {
		// Consul lost its KV (a restarted dev agent) or holds an older map:
		// put back the map this process knows rather than start anew.
		prev = l.current
	}
	if prev == nil && !l.tr.haveAnswer {
		l.mu.Unlock()
		return "waiting", nil
	}
	l.tr.ensure(prev, now)
	tripped := l.autoFreezeLocked(prev)
	in := Input{
		Pool:     l.opts.Pool,
		NumSlots: l.opts.NumSlots,
		Prev:     prev,
		Nodes:    l.tr.views(now),
		Frozen:   st.freeze != nil || tripped,
		Budget:   l.ceiling.Remaining(now),
	}
	plan := Decide(in)
	l.blocked = plan.Blocked
	returning := l.returningLocked(prev)
	l.mu.Unlock()

	l.flushReturning(ctx, returning)
	done := l.place(ctx, plan)
	next, err := Build(in, plan, done, now)
	if err != nil {
		l.setPassError(err, false)
		return "error", err
	}
	if st.slotMap == nil || !next.Equal(st.slotMap) {
		ok, err := l.store.writeSlotMap(ctx, next, st, session)
		if err != nil {
			l.setPassError(err, true)
			return "error", err
		}
		if !ok {
			err := errors.New("the slot map changed under this pass (check-and-set failed)")
			if session != "" {
				l.checkDeposed(ctx, session)
			}
			l.setPassError(err, false)
			return "conflict", err
		}
		l.logChange(prev, next, plan, done)
	}
	l.mu.Lock()
	l.current = next
	for range plan.Evictions {
		l.ceiling.Record(now)
	}
	l.tr.prune(next)
	l.lastReconcile, l.passErr = now, nil
	l.mu.Unlock()
	for _, ev := range plan.Evictions {
		l.opts.Metrics.Replacement(ev.Reason)
	}
	l.writeRouterConfig(next)
	l.publish(next)
	return "ok", nil
}

// autoFreezeLocked decides the automatic freeze over the slot holders of
// m: the mass-absence guard, or a fault of discovery. It records the reason
// for the status, logs when it changes, and reports whether it is on.
// l.mu must be held.
func (l *Loop) autoFreezeLocked(m *cachenodes.SlotMap) bool {
	serving, absent := l.tr.absentHolders(m)
	tripped, reason := l.guard.Check(serving, absent)
	if l.tr.fault != "" {
		tripped, reason = true, l.tr.fault
	}
	if !tripped {
		reason = ""
	}
	if reason != l.autoFrozen {
		if tripped {
			l.opts.Logger.Warn("automatic freeze", "reason", reason)
		} else {
			l.opts.Logger.Info("automatic freeze lifted")
		}
	}
	l.autoFrozen = reason
	return tripped
}

func (l *Loop) setPassError(err error, consul bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.passErr = err
	if consul {
		l.consulErr = err
	}
}

// checkDeposed steps down when the leader key is no longer held by session.
func (l *Loop) checkDeposed(ctx context.Context, session string) {
	p, _, err := l.opts.Consul.KV().Get(l.store.key(KeyLeader), (&api.QueryOptions{RequireConsistent: true}).WithContext(ctx))
	if err != nil {
		return
	}
	if p == nil || p.Session != session {
		l.opts.Logger.Warn("this process lost the leader lock; stepping down")
		l.opts.Leadership.StepDown()
	}
}

// returningLocked lists the slot holders of m that answer again after an
// unreachability that needs a flush. l.mu must be held.
func (l *Loop) returningLocked(m *cachenodes.SlotMap) []cachenodes.Node {
	var out []cachenodes.Node
	for id, s := range l.tr.nodes {
		if s.needsFlush && s.reachable && m != nil && m.SlotOf(id) >= 0 {
			s.flushing = true
			out = append(out, s.node)
		}
	}
	return out
}

// flushReturning flushes slot holders that may have missed deletes while
// they were unreachable, before they count as serving again.
func (l *Loop) flushReturning(ctx context.Context, nodes []cachenodes.Node) {
	for _, n := range nodes {
		err := l.opts.Prober.Flush(ctx, n.Addr)
		l.mu.Lock()
		if s, ok := l.tr.nodes[n.ID]; ok {
			s.flushing = false
			if err == nil {
				s.needsFlush = false
			}
		}
		l.mu.Unlock()
		if err != nil {
			l.opts.Logger.Warn("flushing a returning node failed; retrying next pass", "node", n.ID, "addr", n.Addr, "err", err)
			continue
		}
		l.opts.Metrics.Flush("returned")
		l.opts.Logger.Info("flushed a node that was unreachable, before it serves again", "node", n.ID, "addr", n.Addr)
	}
}

// place carries out the placements of plan: each spare is flushed first
// (but in the first fill of a new pool); a spare whose flush fails is not
// placed.
func (l *Loop) place(ctx context.Context, plan Plan) []Placement {
	if plan.FirstFill {
		return plan.Placements
	}
	done := make([]Placement, 0, len(plan.Placements))
	for _, p := range plan.Placements {
		l.setFlushing(p.Node.ID, true)
		err := l.opts.Prober.Flush(ctx, p.Node.Addr)
		l.setFlushing(p.Node.ID, false)
		if err != nil {
			l.opts.Logger.Warn("flushing a spare before placing it failed; it is not placed", "node", p.Node.ID, "slot", p.Slot, "err", err)
			continue
		}
		l.opts.Metrics.Flush("placement")
		done = append(done, p)
	}
	return done
}

func (l *Loop) setFlushing(id string, on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s, ok := l.tr.nodes[id]; ok {
		s.flushing = on
	}
}

func (l *Loop) logChange(prev, next *cachenodes.SlotMap, plan Plan, done []Placement) {
	for _, ev := range plan.Evictions {
		l.opts.Logger.Warn("slot replacement", "slot", ev.Slot, "node", ev.Node.ID, "reason", ev.Reason, "why", ev.Why)
	}
	for _, p := range done {
		l.opts.Logger.Info("slot placement", "slot", p.Slot, "node", p.Node.ID, "addr", p.Node.Addr, "flushed", !plan.FirstFill)
	}
	if prev == nil || prev.Generation() != next.Generation() {
		l.opts.Logger.Info("slot map written", "generation", next.Generation())
	}
}

// SlotMap returns the current slot map, or nil before one is known.
func (l *Loop) SlotMap() *cachenodes.SlotMap {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.current
}

// Ready returns nil when this process completed a reconcile within
// 3 × max(probe interval, 1s) and can reach Consul; otherwise an error
// whose message is the reason.
func (l *Loop) Ready() error {
	now := l.opts.Clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	limit := 3 * max(l.opts.ProbeInterval, time.Second)
	switch {
	case l.consulErr != nil:
		return fmt.Errorf("consul is unreachable: %v", l.consulErr)
	case l.lastReconcile.IsZero() && l.passErr != nil:
		return fmt.Errorf("no reconcile has completed yet: %v", l.passErr)
	case l.lastReconcile.IsZero():
		return errors.New("no reconcile has completed yet")
	case now.Sub(l.lastReconcile) > limit:
		msg := fmt.Sprintf("the last reconcile completed %s ago, more than the %s allowed", now.Sub(l.lastReconcile).Round(time.Millisecond), limit)
		if l.passErr != nil {
			msg += fmt.Sprintf(": %v", l.passErr)
		}
		return errors.New(msg)
	}
	return nil
}

// Freeze stores a freeze document; while it is stored no slot changes
// hands. by names who froze (a token name or the remote address).
func (l *Loop) Freeze(ctx context.Context, reason, by string) (FreezeDoc, error) {
	doc := FreezeDoc{Frozen: true, Reason: reason, At: l.opts.Clock.Now().UTC().Truncate(time.Second), By: by}
	if err := l.store.putFreeze(ctx, doc); err != nil {
		return FreezeDoc{}, err
	}
	l.mu.Lock()
	l.freeze = &doc
	l.mu.Unlock()
	l.Kick()
	return doc, nil
}

// Unfreeze removes the freeze document; pending replacements then proceed
// under the normal hold and ceiling.
func (l *Loop) Unfreeze(ctx context.Context) error {
	if err := l.store.deleteFreeze(ctx); err != nil {
		return err
	}
	l.mu.Lock()
	l.freeze = nil
	l.mu.Unlock()
	l.Kick()
	return nil
}

// ServingAddrs returns the addresses of the nodes that hold a slot now.
func (l *Loop) ServingAddrs() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]string)
	if l.current == nil {
		return out
	}
	for _, n := range l.current.Slots() {
		if !n.IsZero() {
			out[n.ID] = n.Addr
		}
	}
	return out
}
