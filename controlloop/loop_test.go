package controlloop

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/internal/leakcheck"
	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/leader"
)

// sessionLeadership leads with a session of its own on a real Consul and
// confirms it with leader.Held, stepping down when the lock is not held.
type sessionLeadership struct {
	client   *api.Client
	lease    leader.Lease
	leading  atomic.Bool
	stepDown atomic.Int32
}

func (f *sessionLeadership) Lease() (leader.Lease, bool) {
	if !f.leading.Load() {
		return leader.Lease{}, false
	}
	return f.lease, true
}

func (f *sessionLeadership) Confirm(ctx context.Context) (leader.Lease, error) {
	lease, ok := f.Lease()
	if !ok {
		return leader.Lease{}, leader.ErrNotLeader
	}
	held, err := leader.Held(ctx, f.client, lease)
	if err != nil {
		return lease, err
	}
	if !held {
		f.stepDown.Add(1)
		f.leading.Store(false)
		return leader.Lease{}, leader.ErrNotLeader
	}
	return lease, nil
}

func (f *sessionLeadership) LeaderID() string { return "me" }

func (f *sessionLeadership) Member() (leader.Lease, bool) { return leader.Lease{}, false }

func registerFake(t *testing.T, c *api.Client, id string, port int) {
	t.Helper()
	err := c.Agent().ServiceRegister(&api.AgentServiceRegistration{ID: id, Name: "memcached", Address: "127.0.0.1", Port: port})
	if err != nil {
		t.Fatal(err)
	}
}

// runLoop runs loop until the test ends; the goroutine-leak check then
// finds anything it left running.
func runLoop(t *testing.T, loop *Loop) {
	t.Helper()
	leakcheck.Check(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { loop.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
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
	lead := &sessionLeadership{client: c, lease: leader.NewLease("mcrib/default/leader", mine)}
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
