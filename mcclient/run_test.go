package mcclient

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/internal/leakcheck"
)

// fakeSource delivers one map (read at readAt: zero, unknown) and one
// error, then waits for the end.
type fakeSource struct {
	m         *cachenodes.SlotMap
	readAt    time.Time
	delivered chan struct{}
}

func (s *fakeSource) Run(ctx context.Context, onRead func(cachenodes.SlotMapReading), onError func(error)) {
	onRead(cachenodes.SlotMapReading{Map: s.m, ReadAt: s.readAt})
	onError(errors.New("consul: connection refused"))
	close(s.delivered)
	<-ctx.Done()
}

// TestRunFollowsAndReplaysInTheBackground runs the client on a source and
// the fake clock: it routes by the source's map, and a queued delete is
// replayed on a background tick, with no read; Run returns when its
// context ends and leaves no goroutine behind.
func TestRunFollowsAndReplaysInTheBackground(t *testing.T) {
	leakcheck.Check(t)
	src := &fakeSource{m: slotMap(t, 1, []string{"a"}), delivered: make(chan struct{})}
	tc := newTestClient(t, Options{Source: src, RetryMin: time.Second, ReplayInterval: 100 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); tc.Run(ctx) }()
	<-src.delivered
	if !tc.SlotMap().Equal(src.m) {
		t.Fatalf("the client does not route by the source's map")
	}
	a := tc.fleet.node("127.0.0.1:" + port("a"))
	a.setDown(true)
	tc.Delete("k")
	a.mu.Lock()
	a.down, a.onDelete = false, make(chan string, 1)
	a.mu.Unlock()
	if !tc.clock.BlockUntil(ctx, 1) { // Run's ticker
		t.Fatal("Run armed no ticker")
	}
	tc.clock.Advance(time.Second) // past the backoff, and a tick
	select {
	case k := <-a.onDelete:
		if k != "k" {
			t.Fatalf("replayed %q, want k", k)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no background replay after the backoff")
	}
	cancel()
	<-done
	if n := tc.QueueLen("a"); n != 0 {
		t.Fatalf("%d still queued after the replay", n)
	}
}

// TestWaitForSlotMap: the wait ends with the first map (set by Run from
// the source, or by SetSlotMap), or with its context, then wrapping
// ErrNoSlotMap and the context's cause.
func TestWaitForSlotMap(t *testing.T) {
	leakcheck.Check(t)
	tc := newTestClient(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if err := tc.WaitForSlotMap(ctx); !errors.Is(err, ErrNoSlotMap) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitForSlotMap without a map: %v, want ErrNoSlotMap and the deadline", err)
	}
	waited := make(chan error)
	go func() { waited <- tc.WaitForSlotMap(context.Background()) }()
	if err := tc.SetSlotMap(slotMap(t, 1, []string{"a"})); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("WaitForSlotMap after SetSlotMap: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitForSlotMap did not return after SetSlotMap")
	}
	if err := tc.WaitForSlotMap(ctx); err != nil {
		t.Fatalf("WaitForSlotMap with a map, past the deadline: %v, want nil", err)
	}

	// Through Run and a source.
	src := &fakeSource{m: slotMap(t, 1, []string{"a"}), delivered: make(chan struct{})}
	rc := newTestClient(t, Options{Source: src})
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); rc.Run(runCtx) }()
	defer func() { stop(); <-done }()
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := rc.WaitForSlotMap(wctx); err != nil || !rc.SlotMap().Equal(src.m) {
		t.Fatalf("WaitForSlotMap with Run: %v", err)
	}
}

// reentrant is a Conn that calls into its client (taking the client's
// lock) at the start of every call, as the simulation may, running a
// second operation from inside a Conn call.
type reentrant struct {
	Conn
	c     **Client
	calls int
}

func (r *reentrant) enter() {
	r.calls++
	(*r.c).QueueLen("a")
	(*r.c).SlotMap()
}

func (r *reentrant) Get(k string) (*memcache.Item, error) { r.enter(); return r.Conn.Get(k) }
func (r *reentrant) GetMulti(k []string) (map[string]*memcache.Item, error) {
	r.enter()
	return r.Conn.GetMulti(k)
}
func (r *reentrant) Set(it *memcache.Item) error     { r.enter(); return r.Conn.Set(it) }
func (r *reentrant) Add(it *memcache.Item) error     { r.enter(); return r.Conn.Add(it) }
func (r *reentrant) Replace(it *memcache.Item) error { r.enter(); return r.Conn.Replace(it) }
func (r *reentrant) Delete(k string) error           { r.enter(); return r.Conn.Delete(k) }
func (r *reentrant) CompareAndSwap(it *memcache.Item) error {
	r.enter()
	return r.Conn.CompareAndSwap(it)
}
func (r *reentrant) Close() error { r.enter(); return r.Conn.Close() }

// TestNoLockHeldAcrossAConnCall drives a client whose connections call
// back into it from inside every call: a lock held across a Conn call
// would deadlock (the simulation interleaves operations so).
func TestNoLockHeldAcrossAConnCall(t *testing.T) {
	var c *Client
	fleet := &fakeFleet{}
	var mu sync.Mutex
	var conns []*reentrant
	clk := clock.NewFake(epoch)
	c, err := New(Options{Clock: clk, Dial: func(addr string) (Conn, error) {
		r := &reentrant{Conn: fleet.node(addr), c: &c}
		mu.Lock()
		conns = append(conns, r)
		mu.Unlock()
		return r, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.SetSlotMap(warmMap(t, 1, []string{"b", "c"}, map[int]string{0: "a"}, epoch.Add(time.Minute)))
		k := keysOfSlot(0, 2, 1)[0]
		fleet.node("127.0.0.1:" + port("a")).items[k] = []byte("v")
		c.Get(k)
		c.GetMulti([]string{k, "x"})
		c.Set(&memcache.Item{Key: k, Value: []byte("w")})
		c.Replace(&memcache.Item{Key: k, Value: []byte("w")})
		c.Add(&memcache.Item{Key: "y", Value: []byte("w")})
		fleet.node("127.0.0.1:" + port("b")).setDown(true)
		c.Delete(k)
		fleet.node("127.0.0.1:" + port("b")).setDown(false)
		clk.Advance(time.Hour)
		c.Replay()
		c.SetSlotMap(slotMap(t, 2, []string{"d", "e"}))
		c.Close()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a client operation deadlocked on a Conn that calls the client")
	}
	mu.Lock()
	defer mu.Unlock()
	calls := 0
	for _, r := range conns {
		calls += r.calls
	}
	if calls == 0 {
		t.Fatal("no Conn call was made")
	}
}
