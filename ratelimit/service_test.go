package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/internal/testenv"
)

// fastConfig is the flags' defaults with a short stats interval, so the
// controller's waits (2, 3 and 6 intervals) pass within a test.
var fastConfig = ControllerConfig{Floor: 10, Ceiling: 1000, Low: 0.80, Target: 0.90, Interval: 100 * time.Millisecond}

// TestWithConsul runs the Service and the Client against one real Consul
// dev agent (and, where named, a real memcached). Each subtest uses its own
// pool key.
func TestWithConsul(t *testing.T) {
	consul := testenv.StartConsul(t)
	tests := []struct {
		name string
		run  func(t *testing.T, consul *api.Client, key string)
	}{
		{"a new pool starts in auto at the ceiling", testNewPool},
		{"a restarted process keeps the stored document", testRestartKeepsDocument},
		{"replicas follow an operator's change", testReplicasFollow},
		{"bad settings change nothing", testBadSettingsChangeNothing},
		{"manual mode keeps computing the auto limit", testManualKeepsComputing},
		{"a missing or unreadable document is written again", testRepair},
		{"the limit falls with misses and climbs back with hits on real memcached", testRealMemcached},
		{"the client follows the published limit and shares it", testClientFollows},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkNoLeaks(t)
			tt.run(t, consul.Client, Key("test", fmt.Sprintf("pool-%d", i)))
		})
	}
}

// runningService is a Service whose Run goroutine the test controls.
type runningService struct {
	*Service
	stop func()
}

// startService builds a Service from opts (Client, Key and Config filled
// in when empty) and runs it until stop or the end of the test.
func startService(t *testing.T, consul *api.Client, key string, opts ServiceOptions) runningService {
	t.Helper()
	opts.Client, opts.Key = consul, key
	if opts.Config == (ControllerConfig{}) {
		opts.Config = fastConfig
	}
	svc, err := NewService(opts)
	if err != nil {
		t.Fatalf("NewService: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run returned %v, want nil after its context ended", err)
				}
			case <-time.After(10 * time.Second):
				t.Errorf("Run did not return within 10s of its context ending")
			}
		})
	}
	t.Cleanup(stop)
	testenv.Eventually(t, 10*time.Second, "the service to read its document", svc.Loaded)
	return runningService{Service: svc, stop: stop}
}

// checkNoLeaks fails the test if, once everything else the test started
// has been cleaned up, a goroutine of this package's loops is still running.
func checkNoLeaks(t *testing.T) {
	t.Helper()
	loop := regexp.MustCompile(`ratelimit\.(\(\*Store\)\.follow|\(\*Service\)\.(Run|controlLoop|tick)|\(\*Client\)\.Run)\(|internal/consulwatch\.Run\[`)
	t.Cleanup(func() {
		var stacks string
		ok := func() bool {
			buf := make([]byte, 1<<20)
			stacks = string(buf[:runtime.Stack(buf, true)])
			return !loop.MatchString(stacks)
		}
		deadline := time.Now().Add(5 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Errorf("a loop goroutine outlived the test:\n%s", stacks)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// stored reads the document from Consul KV.
func stored(t *testing.T, consul *api.Client, key string) Snapshot {
	t.Helper()
	snap, err := NewStore(consul, key).Load(context.Background())
	if err != nil {
		t.Fatalf("loading %s: %v", key, err)
	}
	if !snap.Found {
		t.Fatalf("%s is not in Consul KV", key)
	}
	return snap
}

func testNewPool(t *testing.T, consul *api.Client, key string) {
	svc := startService(t, consul, key, ServiceOptions{})
	doc := svc.Document()
	if doc.Mode != ModeAuto || doc.Limit != 1000 || doc.Burst != 100 || doc.AutoLimit != 1000 ||
		doc.Reason != "new pool: starting in auto mode at the ceiling of 1000 boots/s" {
		t.Fatalf("new pool document %+v", doc)
	}
	if got := stored(t, consul, key).Doc; got != doc {
		t.Fatalf("stored %+v, serving %+v", got, doc)
	}
	if l, b := svc.lim.adm.Limit(); l != 1000 || b != 100 {
		t.Fatalf("admitter at %v/%v, want 1000/100", l, b)
	}
	if ok, _ := svc.Admit(); !ok {
		t.Fatal("a healthy new pool refused a boot")
	}
	if _, known := svc.HitRate(); known {
		t.Fatal("a hit rate is known without any stats")
	}
}

func testRestartKeepsDocument(t *testing.T, consul *api.Client, key string) {
	a := startService(t, consul, key, ServiceOptions{})
	set, err := a.Set(context.Background(), Setting{Mode: ModeManual, Limit: 5}, "alice")
	if err != nil {
		t.Fatalf("Set: %v", err)
	}
	if set.Mode != ModeManual || set.Limit != 5 || set.Burst != 1 || set.Reason != "set to manual 5 boots/s by alice" || set.AutoLimit != 1000 {
		t.Fatalf("Set returned %+v", set)
	}
	a.stop()
	before := stored(t, consul, key)

	b := startService(t, consul, key, ServiceOptions{})
	if got := b.Document(); got != before.Doc {
		t.Fatalf("restarted process serves %+v, stored %+v", got, before.Doc)
	}
	// Let it run a few intervals: it must not rewrite what it found.
	time.Sleep(5 * fastConfig.Interval)
	if after := stored(t, consul, key); after.ModifyIndex != before.ModifyIndex {
		t.Fatalf("the restarted process rewrote the document: %+v", after.Doc)
	}
	ok := 0
	for range 20 {
		if ok1, ra := b.Admit(); ok1 {
			ok++
		} else if ra != time.Second {
			t.Fatalf("Retry-After %v at 5/s, want 1s", ra)
		}
	}
	if ok < 1 || ok > 2 {
		t.Fatalf("manual 5/s burst 1 admitted %d of 20 rapid boots, want 1 or 2", ok)
	}
}

func testReplicasFollow(t *testing.T, consul *api.Client, key string) {
	a := startService(t, consul, key, ServiceOptions{})
	b := startService(t, consul, key, ServiceOptions{IsLeader: func() bool { return false }})
	if _, err := a.Set(context.Background(), Setting{Mode: ModeManual, Limit: 5, Burst: 5}, "alice"); err != nil {
		t.Fatalf("Set on a: %v", err)
	}
	start := time.Now()
	testenv.Eventually(t, time.Second, "replica b to enforce 5/s burst 5", func() bool {
		l, bu := b.lim.adm.Limit()
		return l == 5 && bu == 5 && b.Document().Mode == ModeManual
	})
	t.Logf("replica followed in %v", time.Since(start))

	// An operator on the replica hands the limit back to the controller;
	// the leader follows, resuming from the floor (5 is below it).
	doc, err := b.Set(context.Background(), Setting{Mode: ModeAuto}, "bob")
	if err != nil {
		t.Fatalf("Set on b: %v", err)
	}
	if doc.Mode != ModeAuto || doc.Limit != 10 || doc.Reason != "set to auto by bob, resuming from the floor of 10 boots/s (the manual limit was 5)" {
		t.Fatalf("Set auto returned %+v", doc)
	}
	testenv.Eventually(t, time.Second, "leader a to follow the switch to auto", func() bool {
		d := a.Document()
		return d.Mode == ModeAuto && d.Limit == 10
	})
	// Setting auto again while auto writes nothing.
	idx := stored(t, consul, key).ModifyIndex
	if _, err := a.Set(context.Background(), Setting{Mode: ModeAuto}, "carol"); err != nil {
		t.Fatalf("Set auto again: %v", err)
	}
	if got := stored(t, consul, key); got.ModifyIndex != idx || got.Doc.Reason != doc.Reason {
		t.Fatalf("a second auto rewrote the document: %+v", got.Doc)
	}
}

func testBadSettingsChangeNothing(t *testing.T, consul *api.Client, key string) {
	svc := startService(t, consul, key, ServiceOptions{})
	before := stored(t, consul, key)
	for _, st := range []Setting{
		{Mode: "turbo"},
		{Mode: ModeManual, Limit: -1},
		{Mode: ModeAuto, Limit: 5},
		{Mode: ModeManual, Limit: 5, Burst: -2},
	} {
		if _, err := svc.Set(context.Background(), st, "mallory"); !errors.Is(err, ErrInvalidSetting) {
			t.Errorf("Set(%+v) = %v, want ErrInvalidSetting", st, err)
		}
	}
	if after := stored(t, consul, key); after.ModifyIndex != before.ModifyIndex || svc.Document() != before.Doc {
		t.Fatalf("a refused setting changed the document: %+v", after.Doc)
	}
}

// fakeStats is a StatsFunc whose single node serves 1000 gets an interval
// at the hit rate the test sets.
type fakeStats struct {
	mu           sync.Mutex
	rate         float64
	hits, misses uint64
}

func (f *fakeStats) read(context.Context) (map[string]Counters, Slots) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := uint64(1000 * f.rate)
	f.hits += h
	f.misses += 1000 - h
	return map[string]Counters{"mc-1": {Hits: f.hits, Misses: f.misses, PID: 42}}, Slots{}
}

func testManualKeepsComputing(t *testing.T, consul *api.Client, key string) {
	stats := &fakeStats{rate: 0.2}
	svc := startService(t, consul, key, ServiceOptions{Stats: stats.read})
	if _, err := svc.Set(context.Background(), Setting{Mode: ModeManual, Limit: 5}, "alice"); err != nil {
		t.Fatalf("Set: %v", err)
	}
	testenv.Eventually(t, 5*time.Second, "the controller to cut its own limit below 300 in manual mode", func() bool {
		return stored(t, consul, key).Doc.AutoLimit < 300
	})
	doc := stored(t, consul, key).Doc
	if doc.Mode != ModeManual || doc.Limit != 5 || doc.Reason != "set to manual 5 boots/s by alice" {
		t.Fatalf("manual document moved: %+v", doc)
	}
	if !strings.Contains(doc.AutoReason, "would have cut") {
		t.Fatalf("auto_reason %q does not say what the controller would do", doc.AutoReason)
	}
	if rate, ok := svc.HitRate(); !ok || rate > 0.3 {
		t.Fatalf("hit rate %v, %v; want about 0.2", rate, ok)
	}
	if l, _ := svc.lim.adm.Limit(); l != 5 {
		t.Fatalf("admitter at %v in manual mode, want 5", l)
	}
	// Back to auto: resume from the operator's limit (raised to the
	// floor), not from the controller's.
	back, err := svc.Set(context.Background(), Setting{Mode: ModeAuto}, "alice")
	if err != nil {
		t.Fatalf("Set auto: %v", err)
	}
	if back.Mode != ModeAuto || back.Limit != 10 || back.AutoLimit != 10 || back.AutoReason != "" {
		t.Fatalf("back to auto: %+v", back)
	}
}

func testRepair(t *testing.T, consul *api.Client, key string) {
	svc := startService(t, consul, key, ServiceOptions{})
	if _, err := svc.Set(context.Background(), Setting{Mode: ModeManual, Limit: 7}, "alice"); err != nil {
		t.Fatalf("Set: %v", err)
	}
	if _, err := consul.KV().Delete(key, nil); err != nil {
		t.Fatalf("deleting the document: %v", err)
	}
	testenv.Eventually(t, 5*time.Second, "the deleted document to be published again", func() bool {
		snap, err := NewStore(consul, key).Load(context.Background())
		return err == nil && snap.Found && snap.Doc.Limit == 7 && snap.Doc.Mode == ModeManual &&
			strings.Contains(snap.Doc.Reason, "was missing from Consul")
	})
	if _, err := consul.KV().Put(&api.KVPair{Key: key, Value: []byte(`{"mode": "turbo"`)}, nil); err != nil {
		t.Fatalf("writing garbage: %v", err)
	}
	testenv.Eventually(t, 5*time.Second, "the unreadable document to be rewritten", func() bool {
		snap, err := NewStore(consul, key).Load(context.Background())
		return err == nil && snap.Found && snap.Doc.Limit == 7 && strings.Contains(snap.Doc.Reason, "could not be read")
	})
	if got := svc.Document(); got.Limit != 7 {
		t.Fatalf("serving %+v after the repairs", got)
	}
}

// testRealMemcached is the controller end to end: a flood of misses on a
// real memcached drives the limit below half the ceiling within a few
// stats intervals, and a run of hits brings it back up in several steps.
func testRealMemcached(t *testing.T, consul *api.Client, key string) {
	m := testenv.StartMemcached(t)
	mc := memcache.New(m.Addr)
	mc.Timeout = 2 * time.Second
	mc.MaxIdleConns = 4

	const hotKeys = 50
	for i := range hotKeys {
		if err := mc.Set(&memcache.Item{Key: fmt.Sprintf("hot-%d", i), Value: []byte("v")}); err != nil {
			t.Fatalf("filling memcached: %v", err)
		}
	}
	// The load: gets of absent keys (phase 0) or present ones (phase 1).
	var phase atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			k := fmt.Sprintf("cold-%d", i)
			if phase.Load() == 1 {
				k = fmt.Sprintf("hot-%d", i%hotKeys)
			}
			_, _ = mc.Get(k)
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })

	stats := func(ctx context.Context) (map[string]Counters, Slots) {
		c, err := memcachedCounters(ctx, m.Addr)
		if err != nil {
			return nil, Slots{Total: 1, Unreadable: 1}
		}
		return map[string]Counters{"mc-1": c}, Slots{Total: 1}
	}
	svc := startService(t, consul, key, ServiceOptions{Stats: stats})
	if d := svc.Document(); d.Limit != 1000 {
		t.Fatalf("start at %v, want the ceiling", d.Limit)
	}

	start := time.Now()
	testenv.Eventually(t, 40*fastConfig.Interval, "the limit to fall below half the ceiling", func() bool {
		return svc.Document().Limit < 500
	})
	t.Logf("below half the ceiling after %v (%.1f stats intervals)", time.Since(start), float64(time.Since(start))/float64(fastConfig.Interval))
	cut := stored(t, consul, key).Doc
	if !regexp.MustCompile(`^hit rate 0\.\d+ below 0\.80: cut from \d+ to \d+$`).MatchString(cut.Reason) {
		t.Fatalf("cut reason %q does not name the hit rate", cut.Reason)
	}
	if cut.HitRate == nil || *cut.HitRate >= 0.8 {
		t.Fatalf("document hit rate %v after a cut, want below 0.80", cut.HitRate)
	}

	phase.Store(1)
	var seen []Document
	last := -1.0
	testenv.Eventually(t, 15*time.Second, "the limit to climb back in at least three steps", func() bool {
		d := svc.Document()
		if d.Limit != last {
			seen, last = append(seen, d), d.Limit
		}
		raises := 0
		for i := 1; i < len(seen); i++ {
			if seen[i].Limit > seen[i-1].Limit {
				raises++
			}
		}
		return raises >= 3
	})
	var lastRaise time.Time
	for i := 1; i < len(seen); i++ {
		prev, cur := seen[i-1], seen[i]
		t.Logf("%v -> %v: %s", prev.Limit, cur.Limit, cur.Reason)
		if cur.Limit <= prev.Limit {
			continue
		}
		if step := cur.Limit - prev.Limit; step > fastConfig.InitialStep() {
			t.Errorf("raise from %v to %v is larger than a step of %v", prev.Limit, cur.Limit, fastConfig.InitialStep())
		}
		if !strings.Contains(cur.Reason, "at or above target 0.90: raised from") {
			t.Errorf("raise reason %q", cur.Reason)
		}
		if !lastRaise.IsZero() && cur.UpdatedAt.Sub(lastRaise) < fastConfig.RaiseWait()-10*time.Millisecond {
			t.Errorf("raises %v apart, want at least the raise wait %v", cur.UpdatedAt.Sub(lastRaise), fastConfig.RaiseWait())
		}
		lastRaise = cur.UpdatedAt
	}
}

func testClientFollows(t *testing.T, consul *api.Client, key string) {
	svc := startService(t, consul, key, ServiceOptions{})
	agent := consul.Agent()
	for i := 1; i <= 4; i++ {
		reg := &api.AgentServiceRegistration{
			ID: fmt.Sprintf("web-%d", i), Name: "webapp", Port: 8000 + i,
			Check: &api.AgentServiceCheck{CheckID: fmt.Sprintf("web-%d-ttl", i), TTL: "10m", Status: api.HealthPassing},
		}
		if err := agent.ServiceRegister(reg); err != nil {
			t.Fatalf("registering %s: %v", reg.ID, err)
		}
		t.Cleanup(func() { _ = agent.ServiceDeregister(reg.ID) })
	}
	startClient := func(service string) *Client {
		t.Helper()
		c, err := NewClient(ClientOptions{Consul: consul, Key: key, Service: service})
		if err != nil {
			t.Fatalf("NewClient: %v", err)
		}
		if c.Limit() != 1 {
			t.Fatalf("before reading anything the client enforces %v, want the fallback 1", c.Limit())
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = c.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
		return c
	}
	shared := startClient("webapp")
	alone := startClient("")
	testenv.Eventually(t, 5*time.Second, "the client to share 1000/s among 4 instances", func() bool {
		return shared.Limit() == 250 && shared.Burst() == 25 && shared.Instances() == 4
	})
	testenv.Eventually(t, 5*time.Second, "the lone client to take the whole limit", func() bool {
		return alone.Limit() == 1000 && alone.Burst() == 100
	})

	if _, err := svc.Set(context.Background(), Setting{Mode: ModeManual, Limit: 100}, "alice"); err != nil {
		t.Fatalf("Set: %v", err)
	}
	start := time.Now()
	testenv.Eventually(t, time.Second, "the client to follow the new limit within a second", func() bool {
		return shared.Limit() == 25 && alone.Limit() == 100
	})
	t.Logf("client followed in %v", time.Since(start))
	if doc, ok := shared.Document(); !ok || doc.Limit != 100 || doc.Mode != ModeManual {
		t.Fatalf("client document %+v, %v", doc, ok)
	}

	if err := agent.UpdateTTL("web-4-ttl", "down", api.HealthCritical); err != nil {
		t.Fatalf("failing web-4: %v", err)
	}
	// A count that drops is taken only once the larger one is PeakWindow
	// old: until then the share stays a quarter (a count that is late, as
	// one of an agent's restart, never lets the pool admit more).
	testenv.Eventually(t, 5*time.Second, "the client to see 3 passing instances", func() bool {
		shared.mu.Lock()
		defer shared.mu.Unlock()
		return shared.instances.Current() == 3
	})
	if shared.Instances() != 4 || shared.Limit() != 25 || shared.Burst() != 3 {
		t.Fatalf("3 passing a moment after 4: share %v, burst %d among %d; want 25, 3 among 4", shared.Limit(), shared.Burst(), shared.Instances())
	}

	// A share below one boot per second is raised to one.
	if _, err := svc.Set(context.Background(), Setting{Mode: ModeManual, Limit: 2}, "alice"); err != nil {
		t.Fatalf("Set: %v", err)
	}
	testenv.Eventually(t, time.Second, "the share to stop at 1 boot/s", func() bool {
		return shared.Limit() == 1 && shared.Burst() == 1
	})
	ok, _ := shared.Admit()
	again, retry := shared.Admit()
	if !ok || again || retry != time.Second {
		t.Fatalf("at 1/s burst 1: first %v, second %v (retry after %v); want admitted, refused, 1s", ok, again, retry)
	}

	// A limit of 0 stops boots everywhere.
	if _, err := svc.Set(context.Background(), Setting{Mode: ModeManual, Limit: 0}, "alice"); err != nil {
		t.Fatalf("Set: %v", err)
	}
	testenv.Eventually(t, time.Second, "the share to drop to 0", func() bool { return shared.Limit() == 0 })
	if shared.Allow() {
		t.Fatal("a limit of 0 admitted a boot")
	}
}
