package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/clock"
)

// maxWriteAttempts bounds the read-decide-write rounds one change makes
// when other writers keep winning the check-and-set.
const maxWriteAttempts = 5

var (
	// ErrConflict is returned by Service.Set when the document kept changing
	// under concurrent writers for maxWriteAttempts rounds (HTTP 409).
	ErrConflict = errors.New("ratelimit: the boot-limit document kept changing under other writers; try again")
	// ErrRunning is returned by Run while another Run of the same Service
	// or Client is active.
	ErrRunning = errors.New("ratelimit: already running")
)

// ServiceOptions configures a Service. Config is required, and so are
// Client and Key unless Store is given; the other fields may be left zero.
type ServiceOptions struct {
	// Client is the Consul client (required unless Store is given).
	Client *api.Client
	// Key is the KV key of the boot-limit document (required unless Store
	// is given; see Key).
	Key string
	// Store, when set, keeps the document instead of Consul KV at Key: the
	// simulation's store. Run then reads it once per Config.Interval
	// (Sync), as it has no blocking query to follow.
	Store DocumentStore
	// Config is the controller's configuration (required, validated).
	Config ControllerConfig
	// Clock tells the time and times the control loop's interval and the
	// document watch's waits; nil means the real clock. A test can pass a
	// clock.Fake (package github.com/mcrib/mcrib/clock) and move it.
	Clock clock.Clock
	// Logger receives the service's log; nil discards it.
	Logger *slog.Logger
	// Stats reads the nodes' counters every Config.Interval; nil means no
	// hit rate is ever known and the controller never moves the limit.
	Stats StatsFunc
	// IsLeader reports whether this process leads the pool; only the
	// leader runs the controller. nil means always.
	IsLeader func() bool
}

// Service is the boot limiter of mcrib serve: a Limiter (the meters, the
// slow start, the controller and the admitter, with the time as input)
// inside the document's I/O and the leader check. It keeps the boot-limit
// document in Consul KV (creating it for a new pool: auto mode at the
// ceiling), follows it with a blocking query so every replica enforces the
// same limit, answers admissions (POST /v1/boot) from the Limiter, which it
// keeps on the document, measures the pool's hit rate every stats interval
// and, while this process leads, lets the Limiter's controller decide on it
// and writes its changes with check-and-set before they are enforced.
// Operators change the limit with Set.
//
// Until the document has been read, admissions use the floor (at least
// 1 boot/s) and Document says so.
//
// Run drives it with goroutines of its own. A simulation drives it on its
// own goroutine instead, with three synchronous steps and no goroutine:
// Sync reads the stored document once (as one answer of the watch), Tick
// runs one stats interval with a reading and a time it gives, and Admit or
// AdmitShare decide boots at the time of ServiceOptions.Clock.
//
// The zero value is not usable; build a Service with NewService. A Service
// is safe for concurrent use.
type Service struct {
	store    DocumentStore
	cfg      ControllerConfig
	clock    clock.Clock
	log      *slog.Logger
	stats    StatsFunc
	isLeader func() bool
	// lim is the pipeline, with the document in force; Tick, Set and the
	// watch change its document and controller under writeMu.
	lim     *Limiter
	loaded  atomic.Bool // the document has been read (or written)
	running atomic.Bool

	shareMu    sync.Mutex // guards the share admitter and what it was set from
	share      *Admitter
	shareOf    int
	shareLimit float64
	shareBurst int

	writeMu  sync.Mutex // serializes every change of the document; guards the fields below
	index    uint64     // ModifyIndex in Consul of the document in force
	followed uint64     // X-Consul-Index of the last reading the watch delivered
}

// NewService checks opts and returns a Service; nothing runs before Run.
func NewService(opts ServiceOptions) (*Service, error) {
	store := opts.Store
	if store == nil {
		if opts.Client == nil {
			return nil, errors.New("ratelimit: ServiceOptions.Client is required")
		}
		if opts.Key == "" {
			return nil, errors.New("ratelimit: ServiceOptions.Key is required")
		}
		store = NewStore(opts.Client, opts.Key)
	}
	if err := opts.Config.Validate(); err != nil {
		return nil, err
	}
	s := &Service{
		store:    store,
		cfg:      opts.Config,
		clock:    clock.Or(opts.Clock),
		log:      opts.Logger,
		stats:    opts.Stats,
		isLeader: opts.IsLeader,
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if s.isLeader == nil {
		s.isLeader = func() bool { return true }
	}
	start := opts.Config.Floor
	if start <= 0 {
		start = min(1, opts.Config.Ceiling)
	}
	s.lim = NewLimiter(opts.Config, Document{
		Mode:      ModeAuto,
		Limit:     start,
		Burst:     DefaultBurst(start),
		Floor:     opts.Config.Floor,
		Ceiling:   opts.Config.Ceiling,
		Reason:    fmt.Sprintf("the boot-limit document has not been read from Consul yet: admitting %s boots/s meanwhile", fmtLimit(start)),
		AutoLimit: start,
	})
	return s, nil
}

// Run follows the document and runs the control loop until ctx ends, then
// returns nil once everything it started has stopped. It never returns
// early on an error: Consul and stats failures are logged, backed off and
// retried. A second concurrent Run returns ErrRunning. The document is
// followed with Consul's blocking queries; a Store given in the options
// is read with Sync at the start and before every Tick instead.
func (s *Service) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer s.running.Store(false)
	consul, watched := s.store.(*Store)
	var wg sync.WaitGroup
	if watched {
		wg.Go(func() {
			consul.follow(ctx, s.clock, s.log, nil, func(r docReading, index uint64) error {
				return s.onReading(ctx, r, index)
			})
		})
	}
	s.controlLoop(ctx, !watched)
	wg.Wait()
	return nil
}

// Sync reads the stored document once, now, and adopts it as one answer
// of Run's watch would be adopted: a missing document is created (a new
// pool starts in auto mode at the ceiling; a lost one is published again
// from the last known), an unreadable one rewritten, one older than the
// document held ignored. It returns the store's error when the document
// could not be read or a repair could not be written; nothing is adopted
// then. The simulation calls it in place of Run's blocking queries.
func (s *Service) Sync(ctx context.Context) error {
	snap, err := s.store.Load(ctx)
	r := docReading{Snap: snap}
	switch {
	case errors.Is(err, ErrBadDocument):
		r.Bad = err
	case err != nil:
		return fmt.Errorf("reading the boot limit: %w", err)
	}
	return s.onReading(ctx, r, snap.LastIndex)
}

// Document returns the boot-limit document in force, with the live hit
// rate when one is known (null while HitRate is unknown, as the status
// document says it) and, during a boot surge (SlowStart), the slow
// start: SlowStart true, EffectiveLimit the allowance and the reason
// saying so (none of which is stored in Consul).
func (s *Service) Document() Document { return s.lim.Document(s.clock.Now()) }

// Loaded reports whether the document has been read from Consul.
func (s *Service) Loaded() bool { return s.loaded.Load() }

// HitRate returns the pool's smoothed hit rate; ok is false while it is
// unknown: before an interval with gets has been measured, and after an
// interval without any (no reading: it tells nothing of the cache).
func (s *Service) HitRate() (rate float64, ok bool) { return s.lim.HitRate() }

// Slots returns what the last stats reading knew of the slots: how many,
// how many had no live holder (counted as all misses for their share of
// the gets) and how many served ones could not be read (left out).
func (s *Service) Slots() Slots { return s.lim.Slots() }

// Admit decides one boot now (POST /v1/boot): ok, or refused with the wait
// for a Retry-After header (whole seconds, at least 1s). The boot-surge
// slow start (SlowStart) decides first, then the limit. It does not
// allocate.
func (s *Service) Admit() (ok bool, retryAfter time.Duration) { return s.lim.Admit(s.clock.Now()) }

// AdmitShare answers one boot from this replica's share of the pool's
// limit: the limit and the burst divided by replicas (the burst rounded
// down, at least 1), so that replicas admitting on their own stay within
// the pool's limit together (invariant 8: a follower that cannot reach the
// leader admits at most its share). replicas below 1 count as 1.
func (s *Service) AdmitShare(replicas int) (ok bool, retryAfter time.Duration) {
	replicas = max(replicas, 1)
	now := s.clock.Now()
	doc := s.lim.Adopted()
	limit, burst := doc.Limit, doc.Burst
	s.shareMu.Lock()
	if s.share == nil || s.shareOf != replicas || s.shareLimit != limit || s.shareBurst != burst {
		l, b := limit/float64(replicas), max(burst/replicas, 1)
		if s.share == nil {
			s.share = NewAdmitter(l, b)
		} else {
			s.share.Set(l, b, now)
		}
		s.shareOf, s.shareLimit, s.shareBurst = replicas, limit, burst
	}
	adm := s.share
	s.shareMu.Unlock()
	return adm.Admit(now)
}

// Set applies an operator's setting (PUT /v1/ratelimit) on behalf of by
// (a token name or remote address; "" leaves it out) and returns the new
// document. It writes with check-and-set, re-reading and retrying when
// another writer wins. A manual limit above the ceiling is refused (an
// error matching ErrInvalidSetting that names it). Manual mode pins the
// limit and keeps the controller
// computing its own (auto_limit); auto mode resumes from the current limit,
// held inside the floor and the ceiling, and changes nothing when the mode
// is already auto. A setting that is not valid returns an error matching
// ErrInvalidSetting and changes nothing; ErrConflict means other writers
// kept winning; other errors come from Consul.
func (s *Service) Set(ctx context.Context, st Setting, by string) (Document, error) {
	if err := st.Validate(); err != nil {
		return Document{}, err
	}
	if err := st.withinCeiling(s.cfg); err != nil {
		return Document{}, err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	for range maxWriteAttempts {
		snap, err := s.store.Load(ctx)
		now := s.clock.Now()
		var base Document
		switch {
		case errors.Is(err, ErrBadDocument):
			base = InitialDocument(s.cfg, now)
		case err != nil:
			return Document{}, fmt.Errorf("reading the boot limit: %w", err)
		case !snap.Found:
			s.index = 0
			base = InitialDocument(s.cfg, now)
			if s.loaded.Load() {
				base = s.lim.Adopted()
			}
		default:
			s.apply(snap, false)
			base = snap.Doc
			if st.Mode == ModeAuto && base.Mode == ModeAuto && st.Burst == base.AutoBurst {
				return s.Document(), nil
			}
		}
		rate, known := s.HitRate()
		next := applySetting(base, st, by, now, s.cfg, rate, known)
		ok, err := s.store.CAS(ctx, next, snap.ModifyIndex)
		if err != nil {
			return Document{}, fmt.Errorf("writing the boot limit: %w", err)
		}
		if ok {
			s.log.Info("boot limit set by an operator", "mode", next.Mode, "limit", next.Limit, "burst", next.Burst, "reason", next.Reason)
			s.refresh(ctx, &next)
			next.HitRate = nil
			if known {
				next.HitRate = RateOf(rate)
			}
			return next, nil
		}
	}
	return Document{}, ErrConflict
}

// onReading keeps the Service on the stored document: it adopts every
// reading the watch delivers, creates the document when it is missing (a
// new pool, or a Consul whose state was lost: then the last known document
// is published again) and rewrites it when it cannot be parsed. An error
// (the repair could not be written) makes the watch offer the reading
// again after a backoff.
func (s *Service) onReading(ctx context.Context, r docReading, index uint64) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	// An index below the last one means Consul's state was reset: its
	// indexes start again.
	reset := index < s.followed
	s.followed = index
	if reset {
		s.index = 0
	}
	switch {
	case r.Bad != nil:
		s.log.Error("the stored boot-limit document cannot be read; rewriting it", "key", s.store.Key(), "err", r.Bad)
		return s.repair(ctx, r.Snap.ModifyIndex, fmt.Sprintf("the stored boot-limit document could not be read (%v)", r.Bad))
	case !r.Snap.Found:
		s.index = 0
		return s.repair(ctx, 0, "the boot-limit document was missing from Consul")
	default:
		s.apply(r.Snap, reset)
		return nil
	}
}

// repair writes a document at index (0: create) when the stored one is
// missing or unreadable: the last known document when there is one,
// otherwise the document of a new pool. It requires s.writeMu.
func (s *Service) repair(ctx context.Context, index uint64, why string) error {
	now := s.clock.Now()
	doc := s.lim.Adopted()
	if s.loaded.Load() {
		doc.UpdatedAt = stamp(now)
		doc.Reason = fmt.Sprintf("%s; republished the last known limit of %s boots/s", why, fmtLimit(doc.Limit))
	} else {
		fresh := InitialDocument(s.cfg, now)
		if index != 0 {
			fresh.Reason = fmt.Sprintf("%s; starting again in auto mode at the ceiling of %s boots/s", why, fmtLimit(fresh.Limit))
		}
		doc = fresh
	}
	ok, err := s.store.CAS(ctx, doc, index)
	if err != nil {
		return err
	}
	if ok {
		s.log.Info("wrote the boot-limit document", "key", s.store.Key(), "mode", doc.Mode, "limit", doc.Limit, "reason", doc.Reason)
		s.refresh(ctx, &doc)
	}
	return nil
}

// refresh reads the document back after a write and adopts it. When the
// read fails, written (if any) is adopted without its index; the next
// check-and-set then fails, re-reads and recovers. It requires s.writeMu.
func (s *Service) refresh(ctx context.Context, written *Document) {
	snap, err := s.store.Load(ctx)
	if err == nil && snap.Found {
		s.apply(snap, false)
		return
	}
	if written != nil {
		s.setDoc(*written)
	}
}

// apply adopts a document read from Consul, unless it is older than the
// one held (reset: Consul's indexes started again, take it anyway). It
// requires s.writeMu.
func (s *Service) apply(snap Snapshot, reset bool) {
	if !reset && snap.ModifyIndex < s.index {
		return
	}
	s.index = snap.ModifyIndex
	s.setDoc(snap.Doc)
}

// setDoc makes doc the document in force: the Limiter adopts it (its
// admitter, its slow start and, while leading, its controller). It
// requires s.writeMu.
func (s *Service) setDoc(doc Document) {
	s.lim.Adopt(doc, s.clock.Now())
	s.loaded.Store(true)
}

// controlLoop runs Tick every interval with the Stats reading and, when
// poll is set (a store without a watch), reads the document first, at the
// start and before each Tick.
func (s *Service) controlLoop(ctx context.Context, poll bool) {
	sync := func() {
		if !poll {
			return
		}
		if err := s.Sync(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("reading the boot-limit document failed; trying again next interval", "err", err)
		}
	}
	sync()
	t := s.clock.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		sync()
		s.tick(ctx)
	}
}

// tick reads the nodes' counters (Stats, within an interval) and runs one
// Tick with them at the clock's time.
func (s *Service) tick(ctx context.Context) {
	var nodes map[string]Counters
	var slots Slots
	if s.stats != nil {
		sctx, cancel := context.WithTimeout(ctx, max(s.cfg.Interval, time.Second))
		nodes, slots = s.stats(sctx)
		cancel()
	}
	if ctx.Err() != nil {
		return
	}
	s.Tick(ctx, s.clock.Now(), nodes, slots)
}

// Tick runs one stats interval ending at now: it folds nodes (the serving
// slots' holders' counters and their warm sources'; slots, what is known
// of the slots: Slots) into the hit rate, gives the boot-surge slow
// start its reading (Limiter.Measure) and, while this process leads, steps
// the controller and writes a change of the document with check-and-set
// before the Limiter enforces it. The hit rate counts every slot as
// applications see it; the controller and the slow start read the same
// less the nodes marked Planned (Counters.Planned), so that no planned
// move cuts the limit by itself. An interval whose counters hold no gets
// is no reading: the controller holds and HitRate says unknown (the
// controller also holds when only planned moves' slots had gets). A
// process that does not lead keeps its slow start reset (Limiter.Follow),
// so that once it leads it takes the steady load it inherits for no surge
// and admits at the stored limit and burst from its first boot. Run calls
// Tick every interval; the simulation calls it with readings and times of
// its own.
func (s *Service) Tick(ctx context.Context, now time.Time, nodes map[string]Counters, slots Slots) {
	r := s.lim.Measure(now, nodes, slots)
	if slots.Unreadable > 0 {
		s.log.Debug("some served slots' holders could not be read; left out of the hit rate", "unreadable", slots.Unreadable)
	}

	leading := s.isLeader()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if !leading {
		if s.lim.Follow() {
			s.log.Info("no longer leading the boot limiter")
		}
		return
	}
	if !s.loaded.Load() {
		return
	}
	if s.lim.Lead() {
		doc := s.lim.Adopted()
		s.log.Info("leading the boot limiter", "mode", doc.Mode, "limit", doc.Limit)
	}
	s.decide(ctx, r)
}

// decide lets the Limiter's controller step on r (Limiter.Decide) and
// writes a change with check-and-set. The step is tried on a copy of the
// controller, kept only once written; when another writer won, the
// document is re-read, adopted, and the step tried again. A surge whose
// verdict the write could not record is not judged again: it stays capped
// at its level until the next reading ends it, which decides as usual. It requires s.writeMu.
func (s *Service) decide(ctx context.Context, r Reading) {
	for range maxWriteAttempts {
		p, ok := s.lim.Decide(r)
		if !ok {
			return // no input: the controller holds
		}
		d := p.Decision
		if !d.Changed {
			s.lim.Keep(p)
			s.log.Debug("boot limit holds", "hit_rate", r.Input, "reason", d.Reason)
			return
		}
		doc := p.Document
		ok, err := s.store.CAS(ctx, doc, s.index)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("writing the boot limit failed; deciding again next interval", "err", err)
			}
			return
		}
		if ok {
			s.lim.Keep(p)
			s.log.Info("boot limit changed by the controller", "mode", doc.Mode, "limit", doc.Limit,
				"auto_limit", d.AutoLimit, "hit_rate", r.Input, "reason", d.Reason)
			s.refresh(ctx, &doc)
			return
		}
		s.refresh(ctx, nil)
	}
	s.log.Warn("the boot-limit document kept changing under other writers; deciding again next interval")
}
