package controlloop

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/testenv"
)

// fakeLeadership claims to lead with a given session.
type fakeLeadership struct {
	leading  atomic.Bool
	session  string
	stepDown atomic.Int32
}

func (f *fakeLeadership) IsLeader() bool   { return f.leading.Load() }
func (f *fakeLeadership) Session() string  { return f.session }
func (f *fakeLeadership) LeaderID() string { return "me" }
func (f *fakeLeadership) StepDown()        { f.stepDown.Add(1); f.leading.Store(false) }

// fakeProber answers for every address and counts flushes.
type fakeProber struct {
	mu      sync.Mutex
	flushes map[string]int
}

func (p *fakeProber) Stats(ctx context.Context, addr string) (cachenodes.Stats, error) {
	return cachenodes.Stats{PID: 1, Uptime: time.Hour}, nil
}

func (p *fakeProber) Flush(ctx context.Context, addr string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.flushes == nil {
		p.flushes = map[string]int{}
	}
	p.flushes[addr]++
	return nil
}

func registerFake(t *testing.T, c *api.Client, id string, port int) {
	t.Helper()
	err := c.Agent().ServiceRegister(&api.AgentServiceRegistration{ID: id, Name: "memcached", Address: "127.0.0.1", Port: port})
	if err != nil {
		t.Fatal(err)
	}
}

// checkNoLoopGoroutines fails the test when a goroutine of the loop, its
// Consul watch or its prober is still running.
func checkNoLoopGoroutines(t *testing.T) {
	t.Helper()
	var left string
	testenv.Eventually(t, 5*time.Second, "the loop's goroutines end", func() bool {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		left = ""
		for _, g := range strings.Split(stacks, "\n\n") {
			if strings.Contains(g, "controlloop.(*Loop)") || strings.Contains(g, "cachenodes.(*ConsulSource).Run") {
				left = g
			}
		}
		return left == ""
	})
}

// runLoop runs loop until the test ends, then checks it left nothing.
func runLoop(t *testing.T, loop *Loop) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { loop.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
		checkNoLoopGoroutines(t)
	})
}

// TestDeposedLeaderCannotWrite holds a session that does not hold the
// leader lock: the check-and-set write fails, nothing is written, and the
// loop steps down.
func TestDeposedLeaderCannotWrite(t *testing.T) {
	consul := testenv.StartConsul(t)
	c := consul.Client
	for i, id := range []string{"a", "b"} {
		registerFake(t, c, id, 20000+i)
	}
	// A session that holds nothing: the leader key is someone else's.
	other, _, err := c.Session().Create(&api.SessionEntry{TTL: "30s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	mine, _, err := c.Session().Create(&api.SessionEntry{TTL: "30s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ok, _, err := c.KV().Acquire(&api.KVPair{Key: "mcrib/default/leader", Value: []byte("other"), Session: other}, nil); err != nil || !ok {
		t.Fatalf("acquiring the lock for the other session: %v %v", ok, err)
	}
	lead := &fakeLeadership{session: mine}
	lead.leading.Store(true)
	loop, err := New(Options{
		Consul: c, Pool: "default", KVPrefix: "mcrib", NumSlots: 2, Service: "memcached",
		Hold: time.Minute, ProbeInterval: 50 * time.Millisecond, MaxAbsentFraction: 0.25, MaxReplacementsPerMinute: 2,
		Leadership: lead, Prober: &fakeProber{},
	})
	if err != nil {
		t.Fatal(err)
	}
	runLoop(t, loop)
	testenv.Eventually(t, 10*time.Second, "the deposed loop steps down", func() bool { return lead.stepDown.Load() > 0 })
	if p, _, err := c.KV().Get("mcrib/default/slotmap", nil); err != nil || p != nil {
		t.Fatalf("a deposed leader wrote the slot map: %v %v", p, err)
	}

	// Given the lock, the same loop writes.
	if _, _, err := c.KV().Release(&api.KVPair{Key: "mcrib/default/leader", Session: other}, nil); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := c.KV().Acquire(&api.KVPair{Key: "mcrib/default/leader", Value: []byte("me"), Session: mine}, nil); err != nil || !ok {
		t.Fatalf("acquiring the lock: %v %v", ok, err)
	}
	lead.leading.Store(true)
	loop.Kick()
	testenv.Eventually(t, 10*time.Second, "the leader writes the slot map", func() bool {
		p, _, err := c.KV().Get("mcrib/default/slotmap", nil)
		return err == nil && p != nil
	})
}

// TestLoopWritesOnlyWhenChanged runs the loop over a stable membership: one
// write for the first fill, then the KV index stays put.
func TestLoopWritesOnlyWhenChanged(t *testing.T) {
	consul := testenv.StartConsul(t)
	c := consul.Client
	for i, id := range []string{"a", "b", "c"} {
		registerFake(t, c, id, 20000+i)
	}
	prober := &fakeProber{}
	loop, err := New(Options{
		Consul: c, Pool: "p", KVPrefix: "mcrib", NumSlots: 2, Service: "memcached",
		Hold: time.Minute, ProbeInterval: 20 * time.Millisecond, MaxAbsentFraction: 0.25, MaxReplacementsPerMinute: 2,
		Prober: prober,
	})
	if err != nil {
		t.Fatal(err)
	}
	runLoop(t, loop)
	var first uint64
	testenv.Eventually(t, 10*time.Second, "the first fill is stored", func() bool {
		p, _, err := c.KV().Get("mcrib/p/slotmap", nil)
		if err != nil || p == nil {
			return false
		}
		first = p.ModifyIndex
		return true
	})
	testenv.Eventually(t, 10*time.Second, "ready", func() bool { return loop.Ready() == nil })
	time.Sleep(300 * time.Millisecond) // some fifteen passes
	p, _, err := c.KV().Get("mcrib/p/slotmap", nil)
	if err != nil || p.ModifyIndex != first {
		t.Fatalf("the slot map was rewritten without a change: index %d, then %d (%v)", first, p.ModifyIndex, err)
	}
	sm := loop.SlotMap()
	if sm.Generation() != 1 || sm.Slot(0).ID != "a" || sm.Slot(1).ID != "b" || len(sm.Spares()) != 1 {
		t.Fatalf("first fill: gen %d slots %v spares %v", sm.Generation(), sm.Slots(), sm.Spares())
	}
	prober.mu.Lock()
	defer prober.mu.Unlock()
	if len(prober.flushes) != 0 {
		t.Fatalf("the first fill flushed %v", prober.flushes)
	}
}
