package ratelimit

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcrib/mcrib/internal/clock"
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
	s.Tick(context.Background(), s.clk.Now(), reading, 0)
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
