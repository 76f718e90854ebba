package mcclient

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"go.opentelemetry.io/otel/attribute"
)

func TestRoutesBySlotAndVacantSlotsMiss(t *testing.T) {
	tc := newTestClient(t, Options{})
	if _, err := tc.Get("k"); !errors.Is(err, ErrNoSlotMap) {
		t.Fatalf("Get without a map: %v, want ErrNoSlotMap", err)
	}
	if err := tc.SetSlotMap(slotMap(t, 1, []string{"a", "", "c", "d"})); err != nil {
		t.Fatal(err)
	}
	for slot, id := range []string{"a", "", "c", "d"} {
		for _, k := range keysOfSlot(slot, 4, 20) {
			err := tc.Set(&memcache.Item{Key: k, Value: []byte(k)})
			if id == "" {
				if !errors.Is(err, ErrVacantSlot) {
					t.Fatalf("Set of %s in vacant slot %d: %v, want ErrVacantSlot", k, slot, err)
				}
				if _, err := tc.Get(k); err != memcache.ErrCacheMiss {
					t.Fatalf("Get of %s in vacant slot %d: %v, want memcache.ErrCacheMiss", k, slot, err)
				}
				if err := tc.Delete(k); err != memcache.ErrCacheMiss {
					t.Fatalf("Delete of %s in vacant slot %d: %v, want memcache.ErrCacheMiss", k, slot, err)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := tc.fleet.node("127.0.0.1:" + port(id)).items[k]; !ok {
				t.Fatalf("%s of slot %d is not on node %s", k, slot, id)
			}
			if n, _ := tc.NodeFor(k); n.ID != id {
				t.Fatalf("NodeFor(%s) = %s, want %s", k, n.ID, id)
			}
		}
	}
	total := 0
	for _, n := range tc.fleet.nodes {
		total += len(n.items)
	}
	if total != 60 {
		t.Fatalf("%d items stored on all nodes, want 60 (each on its own slot's node only)", total)
	}
}

func TestDeleteReplayBeforeRead(t *testing.T) {
	tc := newTestClient(t, Options{RetryMin: time.Second, RetryMax: 4 * time.Second})
	if err := tc.SetSlotMap(slotMap(t, 1, []string{"a", "b"})); err != nil {
		t.Fatal(err)
	}
	a := tc.fleet.node("127.0.0.1:" + port("a"))
	keys := keysOfSlot(0, 2, 6)
	for _, k := range keys {
		tc.Set(&memcache.Item{Key: k, Value: []byte("old")})
	}
	a.setDown(true)
	// The first delete finds the node down; the others queue at once,
	// without a call, during the backoff.
	for i, k := range keys[:4] {
		if err := tc.Delete(k); !errors.Is(err, ErrQueued) {
			t.Fatalf("Delete %s on a down node: %v, want ErrQueued", k, err)
		}
		if i == 0 && !errors.Is(tc.Delete(k), ErrQueued) {
			t.Fatal("a second delete of a queued key is not queued")
		}
	}
	if err := tc.Set(&memcache.Item{Key: keys[4], Value: []byte("new")}); !errors.Is(err, ErrQueued) {
		t.Fatalf("Set on a down node: %v, want ErrQueued (an invalidating write)", err)
	}
	if n := tc.QueueLen("a"); n != 5 {
		t.Fatalf("queue of a holds %d, want 5", n)
	}
	calls := a.calls
	if _, err := tc.Get(keys[5]); err != memcache.ErrCacheMiss {
		t.Fatalf("Get during the backoff: %v, want a miss", err)
	}
	if a.calls != calls {
		t.Fatalf("the node was called during the backoff")
	}

	// The node answers again, but no read happens before the backoff.
	a.setDown(false)
	if _, err := tc.Get(keys[0]); err != memcache.ErrCacheMiss || len(a.deletes) != 0 {
		t.Fatalf("Get before the backoff passed: %v with %d deletes replayed", err, len(a.deletes))
	}
	tc.clock.Advance(time.Second)
	if _, err := tc.Get(keys[5]); err != nil {
		t.Fatalf("Get after the replay: %v, want the kept key", err)
	}
	if want := keys[:5]; !slices.Equal(a.deletes, want) {
		t.Fatalf("replayed %v, want %v in order, before the read", a.deletes, want)
	}
	for _, k := range keys[:5] {
		if _, err := tc.Get(k); err != memcache.ErrCacheMiss {
			t.Fatalf("deleted key %s read back: %v", k, err)
		}
	}
	if n := tc.counter(t, "mcrib_client_replays", attribute.String("node", "a")); n != 5 {
		t.Fatalf("mcrib_client_replays{node=a} = %d, want 5", n)
	}
	if n := tc.counter(t, "mcrib_client_replay_queue_length"); n != 0 {
		t.Fatalf("queue length %d after the replay", n)
	}
}

func TestReplayBacksOffWhileTheNodeStaysDown(t *testing.T) {
	tc := newTestClient(t, Options{RetryMin: time.Second, RetryMax: 4 * time.Second})
	tc.SetSlotMap(slotMap(t, 1, []string{"a"}))
	a := tc.fleet.node("127.0.0.1:" + port("a"))
	a.setDown(true)
	tc.Delete("k1")
	for _, step := range []struct {
		advance time.Duration
		call    bool
	}{
		{0, false},
		{time.Second, true}, // retry 1 after 1s, fails: next in 2s (jittered to [1s, 2s))
		{999 * time.Millisecond, false},
		{time.Second + time.Millisecond, true},
	} {
		tc.clock.Advance(step.advance)
		before := a.calls
		if _, err := tc.Get("k1"); err != memcache.ErrCacheMiss {
			t.Fatalf("Get on a down node with a queue: %v, want a miss", err)
		}
		if called := a.calls > before; called != step.call {
			t.Fatalf("after %v more: node called %v, want %v", step.advance, called, step.call)
		}
	}
	if tc.QueueLen("a") != 1 {
		t.Fatalf("the queue lost its key while the node was down")
	}
}

func TestQueueBoundCountsDrops(t *testing.T) {
	tc := newTestClient(t, Options{MaxQueue: 3})
	tc.SetSlotMap(slotMap(t, 1, []string{"a"}))
	tc.fleet.node("127.0.0.1:" + port("a")).setDown(true)
	for _, k := range []string{"k1", "k2", "k3", "k4", "k5"} {
		tc.Delete(k)
	}
	if n := tc.QueueLen("a"); n != 3 {
		t.Fatalf("queue holds %d, want its bound 3", n)
	}
	if n := tc.counter(t, "mcrib_client_replay_drops", attribute.String("reason", "queue_full")); n != 2 {
		t.Fatalf("drops{queue_full} = %d, want 2", n)
	}
	if n := tc.counter(t, "mcrib_client_replay_queue_length", attribute.String("node", "a")); n != 3 {
		t.Fatalf("queue length gauge %d, want 3", n)
	}
}

func TestQueueAcrossSlotMoves(t *testing.T) {
	tc := newTestClient(t, Options{})
	tc.SetSlotMap(slotMap(t, 1, []string{"a", "b"}, "c"))
	a := tc.fleet.node("127.0.0.1:" + port("a"))
	a.setDown(true)
	k := keysOfSlot(0, 2, 1)[0]
	tc.Delete(k)

	// a leaves its slot for c but stays a spare, still down: its queue
	// stays (a background replay fails), and a read of slot 0 goes to c.
	tc.SetSlotMap(slotMap(t, 2, []string{"c", "b"}, "a"))
	tc.clock.Advance(time.Hour)
	var wg sync.WaitGroup
	tc.replayAll(&wg)
	wg.Wait()
	calls := a.calls
	if _, err := tc.Get(k); err != memcache.ErrCacheMiss {
		t.Fatalf("Get of %s: %v", k, err)
	}
	if n := tc.QueueLen("a"); n != 1 || len(a.deletes) != 0 || a.calls != calls {
		t.Fatalf("parked a: queue %d, %d deletes, %d calls by a read; want 1, 0, 0", n, len(a.deletes), a.calls-calls)
	}
	// a is placed again: mcrib flushed it, so the queue goes.
	a.setDown(false)
	tc.SetSlotMap(slotMap(t, 3, []string{"c", "a"}, "b"))
	if n := tc.QueueLen("a"); n != 0 {
		t.Fatalf("a placed again still has %d queued", n)
	}
	if n := tc.counter(t, "mcrib_client_replay_drops", attribute.String("reason", "node_flushed")); n != 1 {
		t.Fatalf("drops{node_flushed} = %d, want 1", n)
	}
	if n := tc.counter(t, "mcrib_client_replay_drops", attribute.String("reason", "queue_full")); n != 0 {
		t.Fatalf("drops{queue_full} = %d, want 0", n)
	}

	// b goes down with a queue, leaves its slot and the map: dropped.
	b := tc.fleet.node("127.0.0.1:" + port("b"))
	b.setDown(true)
	tc.SetSlotMap(slotMap(t, 4, []string{"b", "a"}, "c"))
	tc.Delete(keysOfSlot(0, 2, 1)[0])
	tc.SetSlotMap(slotMap(t, 5, []string{"c", "a"}))
	if n := tc.counter(t, "mcrib_client_replay_drops", attribute.String("reason", "node_gone")); n != 1 {
		t.Fatalf("drops{node_gone} = %d, want 1", n)
	}
	if n := tc.QueueLen("b"); n != 0 {
		t.Fatalf("b left the map with %d queued", n)
	}
}

// TestParkedQueueIsReplayed: a node that left its slot with deletes
// queued (a spare now) gets them once it answers, in the background and
// through Replay: a client with an earlier map may still read it.
func TestParkedQueueIsReplayed(t *testing.T) {
	tc := newTestClient(t, Options{RetryMin: time.Second})
	tc.SetSlotMap(slotMap(t, 1, []string{"a", "b"}, "c"))
	a := tc.fleet.node("127.0.0.1:" + port("a"))
	a.setDown(true)
	k := keysOfSlot(0, 2, 1)[0]
	tc.Delete(k)
	tc.SetSlotMap(slotMap(t, 2, []string{"c", "b"}, "a"))
	a.setDown(false)
	tc.clock.Advance(time.Second)
	tc.Replay()
	if n := tc.QueueLen("a"); n != 0 || !slices.Equal(a.deletes, []string{k}) {
		t.Fatalf("parked a after Replay: queue %d, deletes %v; want 0, [%s]", n, a.deletes, k)
	}
}

func TestBackgroundReplay(t *testing.T) {
	tc := newTestClient(t, Options{RetryMin: time.Second})
	tc.SetSlotMap(slotMap(t, 1, []string{"a"}))
	a := tc.fleet.node("127.0.0.1:" + port("a"))
	a.setDown(true)
	tc.Delete("k1")
	tc.Delete("k2")
	a.setDown(false)
	var wg sync.WaitGroup
	tc.replayAll(&wg) // still in the backoff: nothing
	wg.Wait()
	if len(a.deletes) != 0 {
		t.Fatalf("replayed during the backoff")
	}
	tc.clock.Advance(time.Second)
	tc.replayAll(&wg)
	wg.Wait()
	if !slices.Equal(a.deletes, []string{"k1", "k2"}) || tc.QueueLen("a") != 0 {
		t.Fatalf("background replay sent %v, queue %d", a.deletes, tc.QueueLen("a"))
	}
}

func TestQueueFollowsANodeToANewAddress(t *testing.T) {
	tc := newTestClient(t, Options{})
	tc.SetSlotMap(slotMap(t, 1, []string{"a"}))
	tc.fleet.node("127.0.0.1:" + port("a")).setDown(true)
	tc.Delete("k")
	spec := slotMap(t, 2, []string{"a"}).Spec()
	spec.Slots[0].Addr = "127.0.0.2:1"
	m, err := cachenodesNew(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := tc.SetSlotMap(m); err != nil {
		t.Fatal(err)
	}
	if tc.QueueLen("a") != 1 {
		t.Fatalf("the queue of a did not follow it to its new address")
	}
	tc.clock.Advance(time.Hour)
	if _, err := tc.Get("k"); err != memcache.ErrCacheMiss {
		t.Fatalf("Get at the new address: %v", err)
	}
	if d := tc.fleet.node("127.0.0.2:1").deletes; !slices.Equal(d, []string{"k"}) {
		t.Fatalf("replayed %v to the new address, want [k]", d)
	}
	if n := tc.counter(t, "mcrib_client_replay_drops"); n != 0 {
		t.Fatalf("%d drops for an address change", n)
	}
}

func TestGetMulti(t *testing.T) {
	tc := newTestClient(t, Options{RetryMin: time.Second})
	tc.SetSlotMap(slotMap(t, 1, []string{"a", "", "c", "d"}))
	var keys []string
	for slot := range 4 {
		keys = append(keys, keysOfSlot(slot, 4, 3)...)
	}
	for _, k := range keys {
		tc.Set(&memcache.Item{Key: k, Value: []byte(k)})
	}
	c := tc.fleet.node("127.0.0.1:" + port("c"))
	c.setDown(true)
	deleted := keysOfSlot(2, 4, 1)[0]
	tc.Delete(deleted) // queued for c
	c.items[deleted] = []byte("stale")
	got, err := tc.GetMulti(keys)
	if err != nil {
		t.Fatal(err)
	}
	// Slot 1 is vacant and c has a queue it cannot replay yet: both miss.
	for _, k := range keys {
		slot := slotOf(k, 4)
		if _, hit := got[k]; hit != (slot == 0 || slot == 3) {
			t.Fatalf("key %s of slot %d: hit %v", k, slot, hit)
		}
	}
	c.setDown(false)
	tc.clock.Advance(time.Second)
	got, err = tc.GetMulti(keys)
	if err != nil {
		t.Fatal(err)
	}
	if _, hit := got[deleted]; hit || len(got) != 8 {
		t.Fatalf("after the replay: %d hits, deleted key hit %v; want 8 and false", len(got), hit)
	}
}
