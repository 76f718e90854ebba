package mcclient

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/internal/testenv"
)

// remainingTTL asks memcached at addr, with the meta command `mg <key> t`,
// for the seconds key has left (-1: no expiry).
func remainingTTL(t *testing.T, addr, key string) int {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	fmt.Fprintf(conn, "mg %s t\r\n", key)
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(line)[1:] {
		if v, ok := strings.CutPrefix(f, "t"); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("mg answered %q", line)
			}
			return n
		}
	}
	t.Fatalf("mg %s answered %q, want HD t<seconds>", key, line)
	return 0
}

// stopped reports whether every thread of process pid is stopped (state T).
func stopped(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, task := range tasks {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			return false
		}
		// The state follows the command name, which is in parentheses.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 || i+2 >= len(stat) || stat[i+2] != 'T' {
			return false
		}
	}
	return true
}

// TestWarmWithMemcached runs a warming slot on two real memcacheds: the
// old holder's value is copied into the new holder with memcached's add
// and the warm TTL, sets and deletes reach both, a deleted key does not
// come back, and an old holder that stops answering a write is not read
// again.
func TestWarmWithMemcached(t *testing.T) {
	oldMC, newMC := testenv.StartMemcached(t), testenv.StartMemcached(t)
	oldPlain, newPlain := memcache.New(oldMC.Addr), memcache.New(newMC.Addr)
	oldPlain.Timeout, newPlain.Timeout = 2*time.Second, 2*time.Second
	m, err := cachenodes.NewSlotMap(cachenodes.SlotMapSpec{
		Pool: "default", Generation: 2,
		Slots:   []cachenodes.Node{{ID: "mc-new", Addr: newMC.Addr}},
		Warming: []*cachenodes.Warming{{NodeID: "mc-old", Addr: oldMC.Addr, Until: time.Now().Add(time.Hour)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Options{Timeout: 200 * time.Millisecond, WarmTTL: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.SetSlotMap(m); err != nil {
		t.Fatal(err)
	}

	for _, k := range []string{"warm", "deleted", "stale", "racing"} {
		if err := oldPlain.Set(&memcache.Item{Key: k, Value: []byte("old " + k), Flags: 7}); err != nil {
			t.Fatal(err)
		}
	}
	it, err := c.Get("warm")
	if err != nil || string(it.Value) != "old warm" || it.Flags != 7 {
		t.Fatalf("Get of a key on the old holder: %+v, %v", it, err)
	}
	got, err := newPlain.Get("warm")
	if err != nil || string(got.Value) != "old warm" || got.Flags != 7 {
		t.Fatalf("the new holder holds %+v, %v; want the old holder's value and flags", got, err)
	}
	if ttl := remainingTTL(t, newMC.Addr, "warm"); ttl < 290 || ttl > 300 {
		t.Fatalf("the copy expires in %ds, want the warm TTL of 300s", ttl)
	}
	// add never overwrites: a value the new holder has stays.
	if err := newPlain.Set(&memcache.Item{Key: "racing", Value: []byte("newer")}); err != nil {
		t.Fatal(err)
	}
	r := c.route.Load()
	w := r.warm[0]
	if !c.fill(r, r.slots[0], w, &memcache.Item{Key: "racing", Value: []byte("old racing")}, w.st.guard.markWrites("racing"), time.Now()) {
		t.Fatal("fill of a key the old holder has refused")
	}
	if got, _ := newPlain.Get("racing"); got == nil || string(got.Value) != "newer" {
		t.Fatalf("a warm fill overwrote the new holder's value: %+v", got)
	}

	if err := c.Set(&memcache.Item{Key: "set", Value: []byte("both")}); err != nil {
		t.Fatal(err)
	}
	for _, mc := range []*memcache.Client{oldPlain, newPlain} {
		if got, err := mc.Get("set"); err != nil || string(got.Value) != "both" {
			t.Fatalf("Set did not reach both holders: %+v, %v", got, err)
		}
	}
	if err := c.Delete("deleted"); err != nil {
		t.Fatal(err)
	}
	if _, err := oldPlain.Get("deleted"); err != memcache.ErrCacheMiss {
		t.Fatalf("the delete did not reach the old holder: %v", err)
	}
	if _, err := c.Get("deleted"); err != memcache.ErrCacheMiss {
		t.Fatalf("a deleted key came back: %v", err)
	}

	// The old holder stops answering: the write to it fails, and the
	// client never reads it again, though it still has "stale".
	oldMC.Pause(t)
	// SIGSTOP takes effect when the process is next scheduled: wait until
	// every thread is stopped, or a write may still be answered.
	testenv.Eventually(t, 5*time.Second, "memcached stopped", func() bool { return stopped(oldMC.PID()) })
	if err := c.Delete("stale"); !errors.Is(err, ErrWarmSourceMissed) || !errors.Is(err, ErrQueued) {
		t.Fatalf("Delete with the old holder paused: %v, want ErrWarmSourceMissed and ErrQueued", err)
	}
	oldMC.Resume(t)
	if _, err := c.Get("stale"); err != memcache.ErrCacheMiss {
		t.Fatalf("the old holder was read after a failed write: %v", err)
	}
	if got, err := newPlain.Get("stale"); err != nil || !cachenodes.IsTombstone(got) {
		t.Fatalf("the new holder holds %+v, %v; want the delete's tombstone (not filled from a source turned off)", got, err)
	}
	// The delete queued for the old holder reaches it once it answers.
	testenv.Eventually(t, 5*time.Second, "the queued delete replayed to the old holder", func() bool {
		c.Replay()
		_, err := oldPlain.Get("stale")
		return errors.Is(err, memcache.ErrCacheMiss) && c.QueueLen("mc-old") == 0
	})
}

// TestTombstonesWithMemcached: on real memcacheds, a Delete during an
// announce and during a warming leaves in the incoming node, then the new
// holder, a tombstone (flags 0, 15 s) that blocks a later add (a warm
// fill's, the leader's copy, another client's), that Get and GetMulti read
// as a miss without reading the old holder, and that the client's Add
// replaces by cas. The client runs on a fake clock.
func TestTombstonesWithMemcached(t *testing.T) {
	aMC, bMC := testenv.StartMemcached(t), testenv.StartMemcached(t)
	aPlain, bPlain := memcache.New(aMC.Addr), memcache.New(bMC.Addr)
	aPlain.Timeout, bPlain.Timeout = 2*time.Second, 2*time.Second
	clk := clock.NewFake(time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC))
	c, err := New(Options{Timeout: 500 * time.Millisecond, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	a, b := cachenodes.Node{ID: "mc-a", Addr: aMC.Addr}, cachenodes.Node{ID: "mc-b", Addr: bMC.Addr}
	serves := clk.Now().Add(cachenodes.AnnounceLead)
	announce, err := cachenodes.NewSlotMap(cachenodes.SlotMapSpec{Pool: "default", Generation: 4, Revision: 9,
		Slots:    []cachenodes.Node{a},
		Incoming: []*cachenodes.Incoming{{NodeID: b.ID, Addr: b.Addr, ServesAt: serves, Until: serves.Add(time.Minute)}}})
	if err != nil {
		t.Fatal(err)
	}
	warm, err := cachenodes.NewSlotMap(cachenodes.SlotMapSpec{Pool: "default", Generation: 5, Revision: 10,
		Slots:   []cachenodes.Node{b},
		Warming: []*cachenodes.Warming{{NodeID: a.ID, Addr: a.Addr, Until: serves.Add(time.Minute)}}})
	if err != nil {
		t.Fatal(err)
	}
	// tombstoned checks that b holds key's tombstone and refuses an add.
	tombstoned := func(key string) {
		t.Helper()
		got, err := bPlain.Get(key)
		if err != nil || !cachenodes.IsTombstone(got) {
			t.Fatalf("%s on the new node: %+v, %v; want the tombstone", key, got, err)
		}
		if ttl := remainingTTL(t, bMC.Addr, key); ttl < 1 || ttl > int(cachenodes.TombstoneTTL/time.Second) {
			t.Fatalf("%s's tombstone expires in %ds, want within %v", key, ttl, cachenodes.TombstoneTTL)
		}
		if err := bPlain.Add(&memcache.Item{Key: key, Value: []byte("a copy")}); !errors.Is(err, memcache.ErrNotStored) {
			t.Fatalf("an add over %s's tombstone: %v, want not stored", key, err)
		}
	}

	// During the announce: a Delete deletes at the holder and leaves the
	// tombstone in the incoming node; so does a Set, its value at the
	// holder only.
	if err := c.SetSlotMap(announce); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"gone", "set"} {
		if err := aPlain.Set(&memcache.Item{Key: k, Value: []byte("old " + k)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Delete("gone"); err != nil {
		t.Fatalf("Delete during the announce: %v", err)
	}
	if _, err := aPlain.Get("gone"); !errors.Is(err, memcache.ErrCacheMiss) {
		t.Fatalf("the holder kept a key deleted during the announce: %v", err)
	}
	tombstoned("gone")
	if err := c.Set(&memcache.Item{Key: "set", Value: []byte("new set")}); err != nil {
		t.Fatalf("Set during the announce: %v", err)
	}
	if got, err := aPlain.Get("set"); err != nil || string(got.Value) != "new set" {
		t.Fatalf("the holder holds %+v, %v after a Set during the announce", got, err)
	}
	tombstoned("set")

	// The move: the new holder serves, warming from the old one. The
	// announce's tombstones stand: what the old holder still has of the
	// deleted key (a client that missed the delete put it back, say) is
	// not read.
	clk.Set(serves)
	if err := c.SetSlotMap(warm); err != nil {
		t.Fatal(err)
	}
	if err := aPlain.Set(&memcache.Item{Key: "gone", Value: []byte("old gone")}); err != nil {
		t.Fatal(err)
	}
	if it, err := c.Get("gone"); !errors.Is(err, memcache.ErrCacheMiss) {
		t.Fatalf("Get of a key tombstoned during the announce: %+v, %v; want a miss", it, err)
	}
	// During the warming: a Delete deletes at the old holder and leaves
	// the tombstone in the new one.
	if err := aPlain.Set(&memcache.Item{Key: "warm", Value: []byte("old warm")}); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete("warm"); err != nil {
		t.Fatalf("Delete during the warming: %v", err)
	}
	if _, err := aPlain.Get("warm"); !errors.Is(err, memcache.ErrCacheMiss) {
		t.Fatalf("the old holder kept a key deleted during the warming: %v", err)
	}
	tombstoned("warm")
	if err := aPlain.Set(&memcache.Item{Key: "warm", Value: []byte("old warm")}); err != nil {
		t.Fatal(err)
	}
	if it, err := c.Get("warm"); !errors.Is(err, memcache.ErrCacheMiss) {
		t.Fatalf("Get of a key tombstoned during the warming: %+v, %v; want a miss", it, err)
	}
	got, err := c.GetMulti([]string{"gone", "warm", "set"})
	if err != nil || len(got) != 0 {
		t.Fatalf("GetMulti of tombstoned keys: %d hits, %v; want none", len(got), err)
	}
	// The client's Add replaces a tombstone, by cas.
	if err := c.Add(&memcache.Item{Key: "warm", Value: []byte("added")}); err != nil {
		t.Fatalf("Add over a tombstone: %v", err)
	}
	if it, err := c.Get("warm"); err != nil || string(it.Value) != "added" {
		t.Fatalf("Get after the Add over the tombstone: %+v, %v", it, err)
	}
	if err := c.Add(&memcache.Item{Key: "warm", Value: []byte("again")}); !errors.Is(err, memcache.ErrNotStored) {
		t.Fatalf("Add over a value: %v, want not stored", err)
	}
}
