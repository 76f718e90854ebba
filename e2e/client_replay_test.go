package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/mcclient"
	"github.com/mcrib/mcrib/mcribapi"
)

// clientTimeout is the socket timeout of the clients of these tests.
const clientTimeout = 200 * time.Millisecond

// followingClient returns an mcclient following src, waiting up to timeout
// for memcached, running until the test ends.
func followingClient(t *testing.T, src mcclient.Source, timeout time.Duration) *mcclient.Client {
	t.Helper()
	c, err := mcclient.New(mcclient.Options{Source: src, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { c.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait(); c.Close() })
	return c
}

// slotKeys returns n keys of slot slot (of slots), named prefix-i.
func slotKeys(prefix string, slot, slots, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		if k := fmt.Sprintf("%s-%d", prefix, i); cachenodes.KeySlot(k, slots) == slot {
			out = append(out, k)
		}
	}
	return out
}

// directGet reads key from addr with a client of its own, bypassing any
// routing: what the node itself holds.
func directGet(addr, key string) (*memcache.Item, error) {
	c := memcache.New(addr)
	defer c.Close()
	c.Timeout = 2 * time.Second
	return c.Get(key)
}

// pauseLosingWrites pauses node (SIGSTOP) for d and runs during meanwhile,
// once mcrib sees the node unreachable. A paused process's kernel still
// accepts connections and buffers what they carry, and memcached runs it
// on SIGCONT: on loopback a "failed" delete would still arrive. A real
// partition loses it. So the pause also fills the node's accept queue
// (connections the kernel accepts for the stopped process, closed before
// it resumes): new connections are never established, as across a
// partition, and only a delete already written to an open connection can
// still arrive.
func pauseLosingWrites(t *testing.T, m *mcrib, node *testenv.Memcached, id string, d time.Duration, during func()) {
	t.Helper()
	start := time.Now()
	node.Pause(t)
	var flood []net.Conn
	// The queue is full when connections stop being established: two
	// dials in a row time out (one slow dial on a loaded machine is not
	// enough to tell).
	for misses := 0; misses < 2 && len(flood) < 5000; {
		conn, err := net.DialTimeout("tcp", node.Addr, 500*time.Millisecond)
		if err != nil {
			misses++
			continue
		}
		misses = 0
		flood = append(flood, conn)
	}
	t.Logf("the paused node's accept queue is full after %d connections", len(flood))
	testenv.Eventually(t, 10*time.Second, id+" seen unreachable", func() bool {
		n, ok := nodeStatus(m.status(), id)
		return ok && !n.Reachable
	})
	during()
	time.Sleep(time.Until(start.Add(d)))
	for _, c := range flood {
		c.Close()
	}
	node.Resume(t)
	testenv.Eventually(t, 15*time.Second, id+" serving again", func() bool {
		n, ok := nodeStatus(m.status(), id)
		return ok && n.Reachable && n.State == mcribapi.NodeServing
	})
}

// TestClientReplaysDeletesAcrossAPause replays deletes across a pause, with
// --flush-after-unreachable 30s: keys are written, their node is paused
// 10 s, half of them are deleted meanwhile, the node resumes. mcrib
// flushes nothing. Through a plain gomemcache client the deleted keys are
// read back, stale; through mcclient none is (the replay reached the node
// before the first read), and the other half is still a hit.
func TestClientReplaysDeletesAcrossAPause(t *testing.T) {
	const slots, keys = 4, 40
	p := newPool(t, 5)
	m := startMcrib(t, p.consul.HTTPAddr, flags("--slots", fmt.Sprint(slots), "--hold", "60s", "--flush-after-unreachable", "30s")...)
	before := filled(t, p, m, slots)
	victim := before.Slot(1)
	node := p.nodes[victim.ID]

	t.Run("plain gomemcache reads deleted keys back", func(t *testing.T) {
		sel, err := cachenodes.NewSelector(before)
		if err != nil {
			t.Fatal(err)
		}
		plain := memcache.NewFromSelector(sel)
		plain.Timeout = clientTimeout
		ks := slotKeys("plain", 1, slots, keys)
		for _, k := range ks {
			if err := plain.Set(&memcache.Item{Key: k, Value: []byte("old " + k)}); err != nil {
				t.Fatal(err)
			}
		}
		flushes := mustStats(t, victim.Addr).CmdFlush
		deleted := ks[:keys/2]
		pauseLosingWrites(t, m, node, victim.ID, 10*time.Second, func() {
			for _, k := range deleted {
				if err := plain.Delete(k); err == nil {
					t.Errorf("delete of %s on a paused node succeeded", k)
				}
			}
		})
		if st := mustStats(t, victim.Addr); st.CmdFlush != flushes {
			t.Fatalf("cmd_flush of %s went from %d to %d: mcrib flushed it", victim.ID, flushes, st.CmdFlush)
		}
		stale := 0
		for _, k := range deleted {
			if it, err := plain.Get(k); err == nil && string(it.Value) == "old "+k {
				stale++
			}
		}
		t.Logf("plain gomemcache: %d of %d deleted keys read back stale", stale, len(deleted))
		// At most the deletes written on the client's idle connections
		// (gomemcache keeps 2) arrive after all.
		if stale < len(deleted)-memcache.DefaultMaxIdleConns {
			t.Fatalf("only %d of %d deleted keys read back through a plain client: the scenario lost no delete", stale, len(deleted))
		}
	})

	t.Run("mcclient replays", func(t *testing.T) {
		f, err := cachenodes.NewSlotMapFollower(cachenodes.SlotMapFollowerOptions{Client: p.consul.Client, Key: "mcrib/default/slotmap"})
		if err != nil {
			t.Fatal(err)
		}
		c := followingClient(t, f, clientTimeout)
		testenv.Eventually(t, 10*time.Second, "the client follows the map", func() bool { return before.Equal(c.SlotMap()) })
		ks := slotKeys("client", 1, slots, keys)
		for _, k := range ks {
			if err := c.Set(&memcache.Item{Key: k, Value: []byte("old " + k)}); err != nil {
				t.Fatal(err)
			}
		}
		flushes := mustStats(t, victim.Addr).CmdFlush
		deleted, kept := ks[:keys/2], ks[keys/2:]
		pauseLosingWrites(t, m, node, victim.ID, 10*time.Second, func() {
			for _, k := range deleted {
				if err := c.Delete(k); !errors.Is(err, mcclient.ErrQueued) {
					t.Errorf("delete of %s on a paused node: %v, want ErrQueued", k, err)
				}
			}
			if n := c.QueueLen(victim.ID); n != len(deleted) {
				t.Errorf("%d deletes queued for %s, want %d", n, victim.ID, len(deleted))
			}
		})
		if st := mustStats(t, victim.Addr); st.CmdFlush != flushes {
			t.Fatalf("cmd_flush of %s went from %d to %d: mcrib flushed it", victim.ID, flushes, st.CmdFlush)
		}
		// Read at once: a key is either a miss (the replay is not done
		// yet) or read after the replay; never stale.
		for _, k := range deleted {
			if it, err := c.Get(k); err == nil {
				t.Fatalf("deleted key %s read back through mcclient: %q", k, it.Value)
			} else if err != memcache.ErrCacheMiss {
				t.Fatalf("get of %s: %v", k, err)
			}
		}
		testenv.Eventually(t, 10*time.Second, "the queue replayed", func() bool { return c.QueueLen(victim.ID) == 0 })
		for _, k := range deleted {
			if it, err := directGet(victim.Addr, k); err != memcache.ErrCacheMiss {
				t.Fatalf("deleted key %s still on %s after the replay: %v %v", k, victim.ID, it, err)
			}
			if _, err := c.Get(k); err != memcache.ErrCacheMiss {
				t.Fatalf("deleted key %s through mcclient after the replay: %v", k, err)
			}
		}
		for _, k := range kept {
			it, err := c.Get(k)
			if err != nil || string(it.Value) != "old "+k {
				t.Fatalf("kept key %s: %v, want a hit (the node was not flushed)", k, err)
			}
		}
		sameSlots(t, "after the pause", before, m.slotMap())
	})
}

// mapLag polls mcrib's API and the client's map every 2 ms until the
// client routes by a map for which done is true, and returns how long
// after mcrib was first seen serving such a map the client had it (0 when
// the client had it first).
func mapLag(t *testing.T, m *mcrib, c *mcclient.Client, what string, done func(*cachenodes.SlotMap) bool) time.Duration {
	t.Helper()
	var served, followed time.Time
	for deadline := time.Now().Add(30 * time.Second); served.IsZero() || followed.IsZero(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s (mcrib served it: %v; the client had it: %v)", what, !served.IsZero(), !followed.IsZero())
		}
		if followed.IsZero() && done(c.SlotMap()) {
			followed = time.Now()
		}
		if served.IsZero() {
			if sm := m.slotMap(); sm != nil && done(sm) {
				served = time.Now()
			}
		}
	}
	return max(followed.Sub(served), 0)
}

// TestClientFollowsReplacementAndVacancy follows the map over mcrib's
// blocking GET /v1/slotmap: a node put into maintenance that stops
// answering (its memcached is paused) with no spare leaves its slot vacant
// (one that still answers would keep it, invariant 9), and the client
// misses its keys although the old node, resumed, still holds them; a new
// node is then placed in the slot; the client has each map within a second
// of mcrib serving it.
func TestClientFollowsReplacementAndVacancy(t *testing.T) {
	const slots = 4
	p := newPool(t, slots) // no spare
	m := startMcrib(t, p.consul.HTTPAddr, flags("--slots", fmt.Sprint(slots), "--hold", "10m")...)
	before := filled(t, p, m, slots)
	f, err := mcclient.NewHTTPFollower(mcclient.HTTPFollowerOptions{URL: "http://" + m.Addr, WaitTime: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c := followingClient(t, f, clientTimeout)
	testenv.Eventually(t, 10*time.Second, "the client follows the map", func() bool { return before.Equal(c.SlotMap()) })

	old := before.Slot(2)
	ks := slotKeys("follow", 2, slots, 20)
	for _, k := range ks {
		if err := c.Set(&memcache.Item{Key: k, Value: []byte("v")}); err != nil {
			t.Fatal(err)
		}
	}
	// A reader runs throughout: no read of slot 2 may hit once the client
	// routes by a map in which it is vacant.
	var (
		stop      = make(chan struct{})
		wg        sync.WaitGroup
		vacantHit string
	)
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			k := ks[i%len(ks)]
			vacant := c.SlotMap().Slot(2).IsZero()
			if _, err := c.Get(k); err == nil && vacant && vacantHit == "" {
				vacantHit = k
			}
			time.Sleep(time.Millisecond)
		}
	})

	if err := p.consul.Client.Agent().EnableServiceMaintenance(old.ID, "retiring"); err != nil {
		t.Fatal(err)
	}
	// With no spare, a holder in maintenance that answers keeps its slot;
	// one that does not answer leaves it cold.
	p.nodes[old.ID].Pause(t)
	resumed := false
	defer func() {
		if !resumed {
			p.nodes[old.ID].Resume(t)
		}
	}()
	lag := mapLag(t, m, c, "slot 2 vacant", func(sm *cachenodes.SlotMap) bool { return sm.Slot(2).IsZero() })
	t.Logf("the client had the vacancy %v after mcrib served it", lag)
	if lag > time.Second {
		t.Fatalf("the client followed the vacancy after %v, want within 1s", lag)
	}
	// The old node answers again, with its contents: the misses below are
	// the vacancy's, not the node's.
	p.nodes[old.ID].Resume(t)
	resumed = true
	for _, k := range ks {
		if _, err := c.Get(k); err != memcache.ErrCacheMiss {
			t.Fatalf("get of %s in a vacant slot: %v, want a miss", k, err)
		}
		if _, err := directGet(old.Addr, k); err != nil {
			t.Fatalf("%s is gone from the old node %s (%v): the miss proves nothing", k, old.ID, err)
		}
	}

	// A new node arrives and takes the vacant slot (flushed first).
	p.nodes["mc-05"] = testenv.StartMemcached(t)
	p.register(t, "mc-05")
	lag = mapLag(t, m, c, "slot 2 placed again", func(sm *cachenodes.SlotMap) bool { return sm.Slot(2).ID == "mc-05" })
	t.Logf("the client had the replacement %v after mcrib served it", lag)
	if lag > time.Second {
		t.Fatalf("the client followed the replacement after %v, want within 1s", lag)
	}
	close(stop)
	wg.Wait()
	if vacantHit != "" {
		t.Fatalf("%s was read from slot 2's old node while the slot was vacant", vacantHit)
	}
	for _, k := range ks {
		if _, err := c.Get(k); err != memcache.ErrCacheMiss {
			t.Fatalf("get of %s on the new node: %v, want a miss (it was flushed)", k, err)
		}
	}
	if err := c.Set(&memcache.Item{Key: ks[0], Value: []byte("new")}); err != nil {
		t.Fatal(err)
	}
	if it, err := directGet(p.nodes["mc-05"].Addr, ks[0]); err != nil || string(it.Value) != "new" {
		t.Fatalf("a write through the client did not land on the new holder of slot 2: %v", err)
	}
	if it, err := directGet(old.Addr, ks[0]); err != nil || string(it.Value) != "v" {
		t.Fatalf("the old node's copy changed: %v", err)
	}
}
