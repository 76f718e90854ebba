package controlloop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/flapdamp"
	"github.com/mcrib/mcrib/internal/backoff"
	"github.com/mcrib/mcrib/internal/revert"
	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/warmcopy"
)

// ErrNoSlotMap is returned by SlotMap callers' helpers before any map is
// known (no Consul answer and nothing stored yet).
var ErrNoSlotMap = errors.New("controlloop: no slot map is known yet")

// Discovery delivers the answers of service discovery about the pool's
// nodes until ctx ends; *cachenodes.ConsulSource implements it.
type Discovery interface {
	Run(ctx context.Context, onAnswer func(cachenodes.Membership), onError func(error))
}

var _ Discovery = (*cachenodes.ConsulSource)(nil)

// Loop reconciles the slot map of one pool. Build it with New; its methods
// are safe for concurrent use.
//
// Its state is kept by concept, each a type of its own file whose methods
// take the time and their inputs (the tracker's verdicts, the maps) as
// arguments and do no I/O: the freeze (frozen.go), the drains and their
// steps (drain.go, schedule.go), the resize (resize.go, resizestep.go),
// the zone watch (zones.go), the replicas' votes (vote.go), the owed
// flushes (owedflush.go), the planned moves (plannedmoves.go), the
// operator's replace (replace.go), the roll (roll.go), the announces (announce.go), the
// capacity watch (capacity.go), the outputs (outputs.go) and the health of
// the last reads and passes (health.go); the mutex below guards their
// calls. The Loop orchestrates them: a pass reads as decide, write,
// publish (reconcile.go), and an operator's request enters a pass of its
// own through operatorPass (replace.go).
type Loop struct {
	opts Options
	// reverted are the fixes the simulation's self-test turned off
	// (revert.go); zero in production.
	reverted revert.Set
	store    Store
	source   Discovery
	lead     Leadership
	clock    clock.Clock
	kick     chan struct{}
	// probeWake tells the probe loop that new nodes may be tracked.
	probeWake chan struct{}
	passes    *rate.Limiter
	// out is what the loop last handed to the world outside Consul (the
	// router configs, the map published to Changed); it has its own lock.
	out outputs

	// passMu makes the passes one at a time: Reconcile and Replace's pass.
	passMu sync.Mutex

	// slots is the pool's slot count as this process knows it: --slots,
	// until a resize doubles it (checkSlots).
	slots atomic.Int64
	// mu guards every field below. No I/O is done and nothing is told
	// (publish.go) while it is held.
	mu sync.Mutex
	tr *tracker
	// current is the slot map this process serves; currentShift places
	// its instants on this clock (remoteclock.go): zero for a map this
	// process built. leaderID is the leader the last read named.
	current      *cachenodes.SlotMap
	currentShift time.Duration
	leaderID     string
	// remote places instants written by other hosts on this process's
	// clock (remoteclock.go).
	remote remoteClock
	// ceiling holds the replacements of the last minute
	// (--max-replacements-per-minute).
	ceiling  flapdamp.Ceiling
	health   health
	freeze   freezeState
	drains   drainState
	zones    zoneWatch
	votes    voteState
	owed     owedState
	moves    plannedMoves
	replace  replaceState
	resizes  resizeState
	rolls    rollState
	capacity capacityWatch
	// announces is what this process knows of the announces and ended
	// warmings beyond the map (announce.go).
	announces announceState
	// warmth is what the stats reads found of each warming slot
	// (warmwatch.go); copies are the leader's copies of their hot keys
	// (warmcopies.go), with a lock of their own.
	warmth warmWatch
	copies *warmCopies
	// gets is the pool's gets a second (poolfigures.go).
	gets getRate
}

// New checks opts and returns a loop ready to Run.
func New(opts Options) (*Loop, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	opts = opts.traced()
	source := opts.Discovery
	if source == nil {
		cs, err := cachenodes.NewConsulSource(cachenodes.ConsulSourceOptions{
			Client: opts.Consul, Service: opts.Service, Tag: opts.Tag, Logger: opts.Logger,
		})
		if err != nil {
			return nil, fmt.Errorf("building the consul source: %w", err)
		}
		source = cs
	}
	l := &Loop{
		opts:      opts,
		store:     opts.Store,
		source:    source,
		lead:      opts.Leadership,
		clock:     opts.Clock,
		kick:      make(chan struct{}, 1),
		probeWake: make(chan struct{}, 1),
		passes:    rate.NewLimiter(rate.Limit(50), 10),
		tr: newTracker(trackerConfig{Hold: flapdamp.Hold{Duration: opts.Hold}, FlushAfter: opts.FlushAfterUnreachable, Damping: opts.Damping, ProbeInterval: opts.ProbeInterval,
			Mass: flapdamp.MassGuard{MaxAbsentFraction: opts.MaxAbsentFraction}}),
		ceiling: flapdamp.Ceiling{PerMinute: opts.MaxReplacementsPerMinute},
		freeze:  freezeState{guard: flapdamp.MassGuard{MaxAbsentFraction: opts.MaxAbsentFraction}},
		moves:   plannedMoves{settle: settleAfterMove(opts)},
		drains:  drainState{probe: opts.ProbeInterval},
		resizes: resizeState{probe: opts.ProbeInterval},
	}
	l.slots.Store(int64(opts.NumSlots))
	l.copies = newWarmCopies(nil, opts.Clock, func(ctx context.Context) error {
		_, err := l.lead.Confirm(ctx)
		return err
	}, opts.Logger)
	if opts.WarmCopyRate > 0 {
		c, err := warmcopy.New(warmcopy.Options{Rate: opts.WarmCopyRate, WarmTTL: opts.WarmTTL, Clock: opts.Clock,
			LockConfirmedAt: l.copies.lockConfirmedAt, Dial: opts.WarmCopyDial})
		if err != nil {
			return nil, fmt.Errorf("building the warm copier: %w", err)
		}
		l.copies.copier = c
	}
	return l, nil
}

// Load reads the stored slot map once, so that a restarted process serves
// the map before its first pass. It returns an error wrapping
// ErrSlotCountMismatch when the stored map has another number of slots,
// and the store's error when it cannot be read (the caller may go on: Run
// keeps trying).
func (l *Loop) Load(ctx context.Context) error {
	readAt := l.clock.Now()
	st, err := l.store.Read(ctx)
	if err != nil {
		l.mu.Lock()
		if !isKVRefusal(err) {
			l.health.consulErr = err
		}
		l.mu.Unlock()
		return err
	}
	if err := l.checkSlots(st.SlotMap); err != nil {
		return err
	}
	if err := l.checkStored(st.SlotMap, nil); err != nil {
		return err
	}
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.health.readMap(readAt)
	l.current, l.freeze.doc, l.leaderID = st.SlotMap, st.Freeze, st.LeaderID
	l.currentShift = l.remote.shiftOf(st.SlotMap, st.SlotMapIndex, now)
	l.remote.placeWarmings(st.SlotMap, l.currentShift)
	l.drains.take(st)
	l.resizes.take(st)
	l.rolls.take(st)
	l.drains.placeSteps(&l.remote, now)
	l.resizes.placeStep(&l.remote, now)
	l.owed.take(st, l.tr, now)
	return nil
}

// numSlots returns the pool's slot count as this process knows it.
func (l *Loop) numSlots() int { return int(l.slots.Load()) }

// Kick asks for a pass as soon as possible.
func (l *Loop) Kick() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// Run follows discovery, probes the nodes and schedules reconcile passes
// until ctx ends: a pass on every Kick and every probe interval (at least
// every cachenodes.MapReadEvery, so that the map served stays fresh), at most
// 50 a second (bursts of 10), and after a failed pass a backoff (100ms
// doubling up to 5s, jittered) before the next. It never returns early on
// an error: it logs, counts, backs off and retries. All its waits are on
// Options.Clock.
func (l *Loop) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { l.source.Run(ctx, l.onAnswer, l.onWatchError) })
	wg.Go(func() { l.probeLoop(ctx) })
	wg.Go(func() { l.copies.run(ctx) })
	defer wg.Wait()

	tick := l.clock.NewTicker(min(l.opts.ProbeInterval, cachenodes.MapReadEvery))
	defer tick.Stop()
	var steps stepTimer
	defer steps.stop()
	var retry backoff.Backoff
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.kick:
		case <-tick.C():
		case <-steps.c():
		}
		if !l.waitPass(ctx) {
			return
		}
		_, err := l.tracedReconcile(ctx)
		wake, _ := l.NextDecisionIn()
		steps.arm(l.clock, wake, l.opts.ProbeInterval)
		if err == nil {
			retry.Reset()
			continue
		}
		if ctx.Err() != nil {
			return
		}
		wait := retry.Next()
		l.opts.Logger.Warn("reconcile failed; retrying", "err", err, "failures", retry.Failures(), "retry_in", wait)
		if !clock.Sleep(ctx, l.clock, wait) {
			return
		}
	}
}

// waitPass waits for the pass limiter on the loop's clock; it reports
// whether ctx is still alive.
func (l *Loop) waitPass(ctx context.Context) bool {
	now := l.clock.Now()
	r := l.passes.ReserveN(now, 1)
	return clock.Sleep(ctx, l.clock, r.DelayFrom(now))
}

// onAnswer takes one answer of discovery and tells the node transitions
// it caused, or that it was taken as a fault of discovery; then it asks
// for a pass.
func (l *Loop) onAnswer(m cachenodes.Membership) {
	var r report
	l.mu.Lock()
	accepted := l.tr.observeMembership(m, l.clock.Now())
	fault := l.tr.fault
	l.nodeEventsLocked(&r, l.tr.drain())
	l.mu.Unlock()
	if !accepted {
		r.log(slog.LevelWarn, "discovery fault", "reason", fault)
		r.event(mcribapi.Event{Kind: mcribapi.EventDiscoveryFault, Reason: fault})
	}
	l.publish(context.Background(), &r)
	l.Kick()
	l.wakeProbes()
}

func (l *Loop) onWatchError(err error) {
	l.opts.Logger.Warn("watching consul health failed", "err", err)
}
