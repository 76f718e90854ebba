package ratelimit

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/internal/leakcheck"
)

// memStore is a DocumentStore in memory, with Consul's indexes: every
// write raises the index, and a key's ModifyIndex is the index of its
// last write.
type memStore struct {
	mu     sync.Mutex
	raw    []byte // nil: the key is missing
	index  uint64 // the store's index (X-Consul-Index)
	modify uint64 // the key's ModifyIndex
	writes int    // successful CAS calls
}

func (m *memStore) Key() string { return "test/pool/bootlimit" }

func (m *memStore) Load(context.Context) (Snapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	snap := Snapshot{LastIndex: m.index}
	if m.raw == nil {
		return snap, nil
	}
	snap.Found, snap.ModifyIndex = true, m.modify
	doc, err := ParseDocument(m.raw)
	if err != nil {
		return snap, err
	}
	snap.Doc = doc
	return snap, nil
}

func (m *memStore) CAS(_ context.Context, doc Document, index uint64) (bool, error) {
	if err := doc.Validate(); err != nil {
		return false, err
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if (m.raw == nil && index != 0) || (m.raw != nil && index != m.modify) {
		return false, nil
	}
	m.index++
	m.raw, m.modify = b, m.index
	m.writes++
	return true, nil
}

// put writes raw as another writer would.
func (m *memStore) put(raw []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.index++
	m.raw, m.modify = raw, m.index
}

func (m *memStore) stored(t *testing.T) Document {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	doc, err := ParseDocument(m.raw)
	if err != nil {
		t.Fatalf("stored document %s: %v", m.raw, err)
	}
	return doc
}

func (m *memStore) writeCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.writes
}

// gets is a StatsFunc stand-in: one memcached whose counters rise by
// hits and misses per reading.
type gets struct {
	hits, misses         uint64
	stepHits, stepMisses uint64
}

func (g *gets) next() map[string]Counters {
	g.hits += g.stepHits
	g.misses += g.stepMisses
	return map[string]Counters{"mc-1": {Hits: g.hits, Misses: g.misses, PID: 1, Uptime: time.Hour}}
}

// stepped is a Service driven by its synchronous steps, as the
// simulation drives it: a memStore, a fake clock, no goroutine.
type stepped struct {
	*Service
	store   *memStore
	clk     *clock.Fake
	leading atomic.Bool
}

func newStepped(t *testing.T, cfg ControllerConfig) *stepped {
	t.Helper()
	s := &stepped{store: &memStore{}, clk: clock.NewFake(t0)}
	svc, err := NewService(ServiceOptions{Store: s.store, Config: cfg, Clock: s.clk, IsLeader: s.leading.Load})
	if err != nil {
		t.Fatal(err)
	}
	s.Service = svc
	return s
}

// tick moves the clock one interval and runs Tick with reading.
func (s *stepped) tick(reading map[string]Counters) {
	s.clk.Advance(s.cfg.Interval)
	s.Tick(context.Background(), s.clk.Now(), reading, Slots{})
}

func TestNewServiceNeedsAStore(t *testing.T) {
	if _, err := NewService(ServiceOptions{Config: fastConfig}); err == nil {
		t.Fatal("NewService without a Client or a Store succeeded")
	}
}

// TestSync: one Sync creates the document of a new pool, adopts another
// writer's change, and rewrites a document that cannot be read.
func TestSync(t *testing.T) {
	s := newStepped(t, fastConfig)
	ctx := context.Background()
	if s.Loaded() {
		t.Fatal("loaded before any Sync")
	}
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if doc := s.store.stored(t); !s.Loaded() || doc.Mode != ModeAuto || doc.Limit != fastConfig.Ceiling || s.Document().Limit != fastConfig.Ceiling {
		t.Fatalf("after the first Sync: loaded %v, stored %+v, in force %v", s.Loaded(), doc, s.Document().Limit)
	}
	manual, _ := json.Marshal(Document{Mode: ModeManual, Limit: 5, Burst: 5, Floor: 10, Ceiling: 1000})
	s.store.put(manual)
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if d := s.Document(); d.Mode != ModeManual || d.Limit != 5 {
		t.Fatalf("after another writer's change: %s %v, want manual 5", d.Mode, d.Limit)
	}
	s.store.put([]byte(`{"mode":`))
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if doc := s.store.stored(t); doc.Mode != ModeManual || doc.Limit != 5 || !strings.Contains(doc.Reason, "could not be read") {
		t.Fatalf("after an unreadable document: stored %+v, want the last known one again", doc)
	}
}

// TestRunPollsAStoreWithoutAWatch: Run over a Store of the options reads
// it at the start and once per interval.
func TestRunPollsAStoreWithoutAWatch(t *testing.T) {
	leakcheck.Check(t)
	s := newStepped(t, fastConfig)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	armed, cancelArmed := context.WithTimeout(ctx, 5*time.Second)
	defer cancelArmed()
	if !s.clk.BlockUntil(armed, 1) || !s.Loaded() {
		t.Fatal("Run did not read the store before waiting for its first interval")
	}
	manual, _ := json.Marshal(Document{Mode: ModeManual, Limit: 7, Burst: 1, Floor: 10, Ceiling: 1000})
	s.store.put(manual)
	s.clk.Advance(fastConfig.Interval)
	deadline := time.Now().Add(5 * time.Second)
	for s.Document().Limit != 7 {
		if time.Now().After(deadline) {
			t.Fatalf("the store's change was not read within an interval: limit %v", s.Document().Limit)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestIntervalWithoutGetsIsNoReading: an interval whose counters did not
// move is no reading: the controller holds (it was once fed the previous
// hit rate, and raised the limit on it), HitRate says unknown and the
// document's hit_rate is null, as the status's is; the next interval with
// gets is a reading again.
func TestIntervalWithoutGetsIsNoReading(t *testing.T) {
	cfg := ControllerConfig{Floor: 10, Ceiling: 1000, Low: 0.8, Target: 0.9, Interval: time.Second}
	s := newStepped(t, cfg)
	s.leading.Store(true)
	start, _ := json.Marshal(Document{Mode: ModeAuto, Limit: 500, Burst: 50, Floor: 10, Ceiling: 1000, UpdatedAt: t0.Add(-time.Hour), AutoLimit: 500})
	s.store.put(start)
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	g := &gets{stepHits: 950, stepMisses: 50}
	s.tick(g.next()) // a baseline
	s.tick(g.next()) // 0.95: raised from 500
	raised := s.store.stored(t).Limit
	if raised <= 500 {
		t.Fatalf("a hit rate of 0.95 left the limit at %v", raised)
	}
	if r, ok := s.HitRate(); !ok || r != 0.95 {
		t.Fatalf("hit rate %v, %v after an interval at 0.95", r, ok)
	}
	writes := s.store.writeCount()
	g.stepHits, g.stepMisses = 0, 0
	for i := range 2 * RaiseWaitIntervals {
		s.tick(g.next())
		if r, ok := s.HitRate(); ok {
			t.Fatalf("idle interval %d: hit rate %v, known", i+1, r)
		}
		if d := s.Document(); d.HitRate != nil {
			t.Fatalf("idle interval %d: the document's hit rate is %v, want null", i+1, *d.HitRate)
		}
	}
	if s.store.writeCount() != writes || s.store.stored(t).Limit != raised {
		t.Fatalf("%d intervals without gets moved the limit from %v to %v (%d writes)", 2*RaiseWaitIntervals, raised, s.store.stored(t).Limit, s.store.writeCount()-writes)
	}
	g.stepHits, g.stepMisses = 950, 50
	s.tick(g.next())
	if _, ok := s.HitRate(); !ok || s.Document().HitRate == nil {
		t.Fatal("an interval with gets after idle ones is no reading")
	}
}

// TestNewLeaderAdmitsAtTheStoredLimit: a replica that followed for a while
// (its own admissions near zero: the boots went to the leader) and then
// leads takes the steady load it inherits for no surge: it admits at the
// stored limit and burst from its first boot, not at the slow start's 10
// then 20 boots/s until its first tick as leader.
func TestNewLeaderAdmitsAtTheStoredLimit(t *testing.T) {
	cfg := ControllerConfig{Floor: 10, Ceiling: 1000, Low: 0.8, Target: 0.9, Interval: 5 * time.Second}
	s := newStepped(t, cfg)
	if err := s.Sync(context.Background()); err != nil { // a new pool: auto at 1000, burst 100
		t.Fatal(err)
	}
	g := &gets{stepHits: 9500, stepMisses: 500}
	for range 4 {
		s.tick(g.next())
	}
	s.leading.Store(true)
	admitted := 0
	for range 200 { // 200 boots/s, the pool's steady load
		s.clk.Advance(5 * time.Millisecond)
		if ok, _ := s.Admit(); ok {
			admitted++
		}
	}
	if admitted != 200 {
		t.Fatalf("a new leader admitted %d of 200 boots in its first second under a limit of 1000, want all", admitted)
	}
	if d := s.Document(); d.SlowStart {
		t.Fatalf("a new leader shows a slow start: %s", d.Reason)
	}
	// A burst still admits at the stored burst at once: 100 of 150.
	s.clk.Advance(time.Second)
	admitted = 0
	for range 150 {
		if ok, _ := s.Admit(); ok {
			admitted++
		}
	}
	if admitted != 100 {
		t.Fatalf("a burst of 150 boots at once admitted %d, want the stored burst of 100", admitted)
	}
}

// TestSetRefusesAManualLimitAboveTheCeiling: a manual limit above
// --boot-limit-max is refused with one sentence naming the ceiling, and
// nothing is written; the ceiling itself is accepted.
func TestSetRefusesAManualLimitAboveTheCeiling(t *testing.T) {
	s := newStepped(t, fastConfig)
	ctx := context.Background()
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	writes := s.store.writeCount()
	_, err := s.Set(ctx, Setting{Mode: ModeManual, Limit: 5000}, "op")
	if !errors.Is(err, ErrInvalidSetting) || !strings.Contains(err.Error(), "ceiling of 1000 boots/s") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("manual 5000 under a ceiling of 1000: %v", err)
	}
	if s.store.writeCount() != writes {
		t.Fatal("the refused setting was written")
	}
	doc, err := s.Set(ctx, Setting{Mode: ModeManual, Limit: 1000}, "op")
	if err != nil || doc.Limit != 1000 || doc.Mode != ModeManual {
		t.Fatalf("manual at the ceiling: %+v, %v", doc, err)
	}
}
