package controlloop

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/flapdamp"
	"github.com/mcrib/mcrib/hitrate"
	"github.com/mcrib/mcrib/internal/backoff"
	"github.com/mcrib/mcrib/internal/revert"
	"github.com/mcrib/mcrib/mcribapi"
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
type Loop struct {
	opts   Options
	store  Store
	source Discovery
	lead   Leadership
	clock  clock.Clock
	guard  flapdamp.MassGuard
	kick   chan struct{}
	// probeWake tells the probe loop that new nodes may be tracked.
	probeWake chan struct{}
	passes    *rate.Limiter

	mu      sync.Mutex
	tr      *tracker
	current *cachenodes.SlotMap
	// currentShift places the instants of current on this clock
	// (remoteclock.go): zero for a map this process built.
	currentShift time.Duration
	freeze       *mcribapi.FreezeDoc
	autoFrozen   string
	// autoFrozenBase is autoFrozen without the zone alert: its changes are
	// logged and told as events.
	autoFrozenBase string
	blocked        int
	leaderID       string
	consulErr      error
	passErr        error
	corrupt        []string // documents the last read found corrupt (kvcheck.go)
	lastReconcile  time.Time
	ceiling        flapdamp.Ceiling
	out            outputs
	// voted is the vote last published, with the session that holds it;
	// replicas counts the live replicas seen in the last read (this one
	// included).
	voted     map[string]time.Time
	votedBy   string
	replicas  int
	peerLeads map[string]string // live replicas' sessions, by replica ID

	// drains is the last drain document read that parsed (nil: none);
	// drainCorrupt is set while the stored one does not parse (drains then
	// make no progress), drainErr why; drainGood is set once a read found
	// a drain document that parsed (or none).
	drains       *mcribapi.DrainDoc
	drainCorrupt bool
	drainGood    bool
	drainErr     string
	// zoneAlert names the zones that alert: more than half of their slot
	// holders, and at least two, unreachable (zones.go).
	zoneAlert string
	// alertZones holds each alerting zone's sentence, by zone: a zone
	// entering it gets an event of its own, and so does its end.
	alertZones map[string]string
	// zoneMeters measure each zone's hit rate from the stats readings
	// (HitCounters), as the pool's is measured.
	zoneMeters map[string]*hitrate.Meter
	// zoneUnread names the zones none of whose slot holders could be read
	// at the last stats reading: their hit rate is unknown, not the last
	// one measured.
	zoneUnread map[string]bool

	// owed is the flushes the pool owes as this process knows them: the
	// last document read, or this leader's last write (owedflush.go);
	// owedGood is the last document read that parsed; memOwed the owed
	// flushes of the old in-memory path (revert.ForgottenFlush).
	owed, owedGood, memOwed []OwedFlush
	// remote places instants written by other hosts on this process's
	// clock (remoteclock.go).
	remote remoteClock
	// moved is when a planned move last touched each slot (it moved, or
	// its warming ended): HitCounters marks its nodes Planned for a while
	// (plannedmoves.go).
	moved map[int]time.Time
	// stepBlockedAt is when a due drain or return step of each zone last
	// moved nothing: it is not tried again for a probe interval.
	stepBlockedAt map[string]time.Time

	// passMu makes the passes one at a time: Reconcile and Replace's pass.
	passMu sync.Mutex
	// replaceReq is the operator's replace the pass under way carries
	// out (nil: none); replaceOut is its outcome.
	replaceReq *replaceRequest
	replaceOut replaceOutcome
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
	return &Loop{
		opts:      opts,
		store:     opts.Store,
		source:    source,
		lead:      opts.Leadership,
		clock:     opts.Clock,
		guard:     flapdamp.MassGuard{MaxAbsentFraction: opts.MaxAbsentFraction},
		kick:      make(chan struct{}, 1),
		probeWake: make(chan struct{}, 1),
		passes:    rate.NewLimiter(rate.Limit(50), 10),
		tr: newTracker(trackerConfig{Hold: flapdamp.Hold{Duration: opts.Hold}, FlushAfter: opts.FlushAfterUnreachable, Damping: opts.Damping, ProbeInterval: opts.ProbeInterval,
			Mass: flapdamp.MassGuard{MaxAbsentFraction: opts.MaxAbsentFraction}, LegacyFlush: opts.Reverted.Reverted(revert.FollowerFlush)}),
		ceiling: flapdamp.Ceiling{PerMinute: opts.MaxReplacementsPerMinute},
	}, nil
}

// Load reads the stored slot map once, so that a restarted process serves
// the map before its first pass. It returns an error wrapping
// ErrSlotCountMismatch when the stored map has another number of slots,
// and the store's error when it cannot be read (the caller may go on: Run
// keeps trying).
func (l *Loop) Load(ctx context.Context) error {
	st, err := l.store.Read(ctx)
	if err != nil {
		l.mu.Lock()
		if !isKVRefusal(err) {
			l.consulErr = err
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
	l.current, l.freeze, l.leaderID = st.SlotMap, st.Freeze, st.LeaderID
	l.currentShift = l.remote.shiftOf(st.SlotMap, st.SlotMapIndex, now)
	l.remote.placeWarmings(st.SlotMap, l.currentShift)
	l.takeDrainLocked(st)
	l.placeStepsLocked(now)
	l.owedBaseLocked(st, now)
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

// Run follows discovery, probes the nodes and schedules reconcile passes
// until ctx ends: a pass on every Kick and every probe interval, at most
// 50 a second (bursts of 10), and after a failed pass a backoff (100ms
// doubling up to 5s, jittered) before the next. It never returns early on
// an error: it logs, counts, backs off and retries. All its waits are on
// Options.Clock.
func (l *Loop) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { l.source.Run(ctx, l.onAnswer, l.onWatchError) })
	wg.Go(func() { l.probeLoop(ctx) })
	defer wg.Wait()

	tick := l.clock.NewTicker(l.opts.ProbeInterval)
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
		start := l.clock.Now()
		res, err := l.tracedReconcile(ctx)
		l.opts.Metrics.Pass(res.Outcome, l.clock.Now().Sub(start))
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

func (l *Loop) onAnswer(m cachenodes.Membership) {
	l.mu.Lock()
	accepted := l.tr.observeMembership(m, l.clock.Now())
	fault := l.tr.fault
	evs := l.tr.drain()
	l.mu.Unlock()
	l.logEvents(evs)
	if !accepted {
		l.opts.Logger.Warn("discovery fault", "reason", fault)
		l.emit(mcribapi.Event{Kind: mcribapi.EventDiscoveryFault, Reason: fault})
	}
	l.Kick()
	l.wakeProbes()
}

// logEvents writes node transitions to the log, one line each.
func (l *Loop) logEvents(evs []nodeEvent) {
	for _, e := range evs {
		l.opts.Logger.Info(string(e.Kind), "node", e.Node, "detail", e.Detail)
	}
	l.emitNodeEvents(evs)
}

func (l *Loop) onWatchError(err error) {
	l.opts.Logger.Warn("watching consul health failed", "err", err)
}
