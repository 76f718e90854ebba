package testenv

import (
	"bufio"
	"context"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/internal/leakcheck"
)

func TestFakeMemcachedStatsAndFlush(t *testing.T) {
	leakcheck.Check(t)
	clk := clock.NewFake(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	f := StartFakeMemcached(t, FakeMemcachedOptions{Nodes: 3, Clock: clk})
	if len(f.Nodes) != 3 || len(f.Addrs()) != 3 {
		t.Fatalf("got %d nodes, %d addresses; want 3", len(f.Nodes), len(f.Addrs()))
	}
	if addrs := f.Addrs(); len(slices.Compact(slices.Sorted(slices.Values(addrs)))) != 3 {
		t.Fatalf("addresses %v are not distinct", addrs)
	}
	prober := cachenodes.NewProber(cachenodes.ProberOptions{Timeout: 2 * time.Second})
	ctx := context.Background()
	node := f.Nodes[1]

	clk.Advance(90 * time.Second)
	node.AddGets(7, 3)
	node.SetCounters(FakeCounters{CurrItems: 5, GetHits: node.Counters().GetHits, GetMisses: node.Counters().GetMisses})
	st, err := prober.Stats(ctx, node.Addr)
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	want := cachenodes.Stats{PID: node.PID(), Uptime: 90 * time.Second, CurrItems: 5, GetHits: 7, GetMisses: 3}
	if st != want {
		t.Fatalf("Stats = %+v, want %+v", st, want)
	}

	if err := prober.Flush(ctx, node.Addr); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if c := node.Counters(); c.CmdFlush != 1 || c.CurrItems != 0 {
		t.Errorf("counters after one flush = %+v, want CmdFlush 1 and CurrItems 0", c)
	}
	st, err = prober.Stats(ctx, node.Addr)
	if err != nil || st.CmdFlush != 1 {
		t.Fatalf("Stats after flush = %+v, %v; want CmdFlush 1", st, err)
	}
	if got := node.Connections(); got != 3 {
		t.Errorf("Connections() = %d after three probes, want 3", got)
	}
	if got := f.Nodes[0].Connections(); got != 0 {
		t.Errorf("an unprobed node counted %d connections, want 0", got)
	}

	oldPID := node.PID()
	node.Restart()
	st, err = prober.Stats(ctx, node.Addr)
	if err != nil {
		t.Fatalf("Stats after Restart: %v", err)
	}
	if st.PID == oldPID || st.Uptime != 0 || st.GetHits != 0 || st.CmdFlush != 0 {
		t.Errorf("Stats after Restart = %+v; want a new pid (old %d), zero uptime and counters", st, oldPID)
	}
	pids := map[int64]bool{}
	for _, n := range f.Nodes {
		pids[n.PID()] = true
	}
	if len(pids) != 3 {
		t.Errorf("pids of the three nodes are not distinct: %v", pids)
	}
}

func TestFakeMemcachedModes(t *testing.T) {
	leakcheck.Check(t)
	f := StartFakeMemcached(t, FakeMemcachedOptions{})
	node := f.Nodes[0]
	prober := cachenodes.NewProber(cachenodes.ProberOptions{Timeout: 200 * time.Millisecond})
	ctx := context.Background()

	node.SetMode(FakeSilent)
	start := time.Now()
	_, err := prober.Stats(ctx, node.Addr)
	if !cachenodes.IsTimeout(err) {
		t.Fatalf("Stats of a silent node: err = %v, want a timeout", err)
	}
	if err := prober.Flush(ctx, node.Addr); !cachenodes.IsTimeout(err) {
		t.Fatalf("Flush of a silent node: err = %v, want a timeout", err)
	}
	if c := node.Counters(); c.CmdFlush != 0 {
		t.Errorf("a silent node counted a flush: %+v", c)
	}
	t.Logf("two probes of a silent node took %v", time.Since(start))

	node.SetMode(FakeResetting)
	_, err = prober.Stats(ctx, node.Addr)
	if err == nil || cachenodes.IsTimeout(err) {
		t.Fatalf("Stats of a resetting node: err = %v, want an error other than a timeout", err)
	}

	node.SetMode(FakeServing)
	if _, err := prober.Stats(ctx, node.Addr); err != nil {
		t.Fatalf("Stats after serving again: %v", err)
	}
	if got := node.Connections(); got != 4 {
		t.Errorf("Connections() = %d after four probes in all modes, want 4", got)
	}
}

// TestFakeMemcachedConnection checks the commands the prober does not use,
// on one connection, as memcached keeps it open.
func TestFakeMemcachedConnection(t *testing.T) {
	leakcheck.Check(t)
	f := StartFakeMemcached(t, FakeMemcachedOptions{})
	conn, err := net.DialTimeout("tcp", f.Nodes[0].Addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(conn)
	for _, tc := range []struct{ send, want string }{
		{"version\r\n", "VERSION " + fakeVersion + "\r\n"},
		{"get k\r\n", "ERROR\r\n"},
		{"flush_all noreply\r\nflush_all 0\r\n", "OK\r\n"},
		{"\r\n", "ERROR\r\n"},
	} {
		if _, err := conn.Write([]byte(tc.send)); err != nil {
			t.Fatalf("sending %q: %v", tc.send, err)
		}
		got, err := r.ReadString('\n')
		if err != nil || got != tc.want {
			t.Fatalf("reply to %q = %q, %v; want %q", tc.send, got, err, tc.want)
		}
	}
	if c := f.Nodes[0].Counters(); c.CmdFlush != 2 {
		t.Errorf("CmdFlush = %d after two flushes (one noreply), want 2", c.CmdFlush)
	}
	conn.Write([]byte("quit\r\n"))
	if _, err := r.ReadByte(); err == nil {
		t.Errorf("the connection is still open after quit")
	}
}

// TestFakeMemcachedManyNodes probes 2,000 nodes at once, the size of the
// probe benchmark.
func TestFakeMemcachedManyNodes(t *testing.T) {
	const nodes = 2000
	start := time.Now()
	f := StartFakeMemcached(t, FakeMemcachedOptions{Nodes: nodes})
	t.Logf("starting %d fake nodes took %v", nodes, time.Since(start))
	prober := cachenodes.NewProber(cachenodes.ProberOptions{Timeout: 5 * time.Second})
	ctx := context.Background()

	start = time.Now()
	errs := make([]error, nodes)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 256)
	for i, addr := range f.Addrs() {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			_, errs[i] = prober.Stats(ctx, addr)
		})
	}
	wg.Wait()
	t.Logf("one probe round over %d nodes took %v", nodes, time.Since(start))
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
	}
	for i, n := range f.Nodes {
		if got := n.Connections(); got != 1 {
			t.Fatalf("node %d counted %d connections, want 1", i, got)
		}
	}
}
