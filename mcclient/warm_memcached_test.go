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
	w := c.route.Load().warm[0]
	if !c.fill(c.route.Load().slots[0], w, &memcache.Item{Key: "racing", Value: []byte("old racing")}, w.st.guard.markWrites("racing")) {
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
	if _, err := newPlain.Get("stale"); err != memcache.ErrCacheMiss {
		t.Fatalf("the new holder was filled from a source turned off: %v", err)
	}
	// The delete queued for the old holder reaches it once it answers.
	testenv.Eventually(t, 5*time.Second, "the queued delete replayed to the old holder", func() bool {
		c.Replay()
		_, err := oldPlain.Get("stale")
		return errors.Is(err, memcache.ErrCacheMiss) && c.QueueLen("mc-old") == 0
	})
}
