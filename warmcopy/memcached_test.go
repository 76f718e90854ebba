package warmcopy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/leakcheck"
	"github.com/mcrib/mcrib/internal/testenv"
)

// The tests of this file run the copy between two real memcacheds
// (Debian's 1.6.18 in CI); they skip without the binary, and fail when CI
// is set.

// realCopier returns a Copier on the real clock whose leader lock is
// always fresh.
func realCopier(t testing.TB, opts Options) *Copier {
	t.Helper()
	opts.LockConfirmedAt = time.Now
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// plainClient is a gomemcache client of addr.
func plainClient(addr string) *memcache.Client {
	c := memcache.New(addr)
	c.Timeout = 2 * time.Second
	return c
}

// peeked is what a memcached holds for a key, read with the meta command
// `mg <key> v t f`: value, seconds left (-1: no expiry) and flags.
type peeked struct {
	value string
	ttl   int
	flags uint32
	found bool
}

func peek(t testing.TB, addr, key string) peeked {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	fmt.Fprintf(conn, "mg %s v t f\r\n", key)
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if line == "EN\r\n" {
		return peeked{}
	}
	f := strings.Fields(line)
	if len(f) != 4 || f[0] != "VA" {
		t.Fatalf("mg %s answered %q", key, line)
	}
	size, _ := strconv.Atoi(f[1])
	ttl, _ := strconv.Atoi(strings.TrimPrefix(f[2], "t"))
	flags, _ := strconv.ParseUint(strings.TrimPrefix(f[3], "f"), 10, 32)
	data := make([]byte, size+2)
	if _, err := io.ReadFull(r, data); err != nil {
		t.Fatal(err)
	}
	return peeked{value: string(data[:size]), ttl: ttl, flags: uint32(flags), found: true}
}

// slotKeys returns n keys of slot (of numSlots) made from prefix.
func slotKeys(prefix string, slot, numSlots, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		if k := fmt.Sprintf("%s%d", prefix, i); cachenodes.KeySlot(k, numSlots) == slot {
			out = append(out, k)
		}
	}
	return out
}

// TestCopyWithMemcached copies a split's twin (slot 5 of 8, whose source
// also holds slot 1) between two real memcacheds: every key of slot 5,
// and only those, reaches B with its value, flags and expiry
// min(remaining, warm TTL) kept (keys with characters metadump
// URL-encodes among them), keys about to expire are not copied, and
// what B already had (a value, a tombstone) is left as it was.
func TestCopyWithMemcached(t *testing.T) {
	leakcheck.Check(t)
	a, b := testenv.StartMemcached(t), testenv.StartMemcached(t)
	ac, bc := plainClient(a.Addr), plainClient(b.Addr)
	const slot, numSlots = 5, 8
	keys := slotKeys("user:", slot, numSlots, 40)
	keys = append(keys, slotKeys("a%20b/c+é~", slot, numSlots, 5)...)
	exps := []int32{0, 100, 30}
	for i, k := range keys {
		if err := ac.Set(&memcache.Item{Key: k, Value: []byte(fmt.Sprintf("value of %s", k)), Flags: uint32(i * 1000), Expiration: exps[i%3]}); err != nil {
			t.Fatal(err)
		}
	}
	expiring := slotKeys("soon:", slot, numSlots, 4)
	for _, k := range expiring {
		if err := ac.Set(&memcache.Item{Key: k, Value: []byte("soon"), Expiration: 5}); err != nil {
			t.Fatal(err)
		}
	}
	var others []string
	for _, s := range []int{1, 0, 3, 7} { // slot s itself, and other slots
		others = append(others, slotKeys("other:", s, numSlots, 10)...)
	}
	for _, k := range others {
		if err := ac.Set(&memcache.Item{Key: k, Value: []byte("not this slot")}); err != nil {
			t.Fatal(err)
		}
	}
	// B already has a value for one key, and the tombstone of another.
	if err := bc.Set(&memcache.Item{Key: keys[0], Value: []byte("B's own"), Flags: 9}); err != nil {
		t.Fatal(err)
	}
	if err := bc.Set(cachenodes.TombstoneItem(keys[1])); err != nil {
		t.Fatal(err)
	}

	c := realCopier(t, Options{WarmTTL: time.Minute})
	p := new(Progress)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Copy(ctx, Move{Source: a.Addr, Target: b.Addr, Slot: slot, NumSlots: numSlots}, p); err != nil {
		t.Fatal(err)
	}

	if got := peek(t, b.Addr, keys[0]); got.value != "B's own" || got.flags != 9 {
		t.Errorf("B's own value became %+v", got)
	}
	if got := peek(t, b.Addr, keys[1]); got.value != cachenodes.TombstoneValue {
		t.Errorf("B's tombstone became %+v", got)
	}
	var bytes int64
	for i, k := range keys[2:] {
		i += 2
		got := peek(t, b.Addr, k)
		want := fmt.Sprintf("value of %s", k)
		bytes += int64(len(want))
		// The copy has a second less than A's item, and memcached's clocks
		// tick in whole seconds.
		wantTTL := map[int32]int{0: 60, 100: 60, 30: 29}[exps[i%3]]
		if !got.found || got.value != want || got.flags != uint32(i*1000) || got.ttl > wantTTL || got.ttl < wantTTL-3 {
			t.Errorf("B's %q = %+v, want %q, flags %d, ttl about %d", k, got, want, i*1000, wantTTL)
		}
	}
	for _, k := range append(expiring, others...) {
		if got := peek(t, b.Addr, k); got.found {
			t.Errorf("B got %q (%+v), not to be copied", k, got)
		}
	}
	s := p.Stats()
	if s.CopiedKeys != int64(len(keys)-2) || s.CopiedBytes != bytes || s.Skipped[SkipPresent] != 2 || s.Skipped[SkipExpiring] != int64(len(expiring)) || s.Listed != int64(len(keys)) || s.Undone != 0 {
		t.Errorf("stats %+v", s)
	}
	if s.Dumped != int64(len(keys)+len(expiring)+len(others)) {
		t.Errorf("the metadump listed %d items, want %d", s.Dumped, len(keys)+len(expiring)+len(others))
	}
}

// TestMetadumpListsEveryItemWhileTheSourceServes dumps a source whose
// items move between memcached's LRU queues because it answers reads:
// the copy's dump (the hash table's walk) lists every item, every time.
// (A walk of the LRU queues, metadump all, missed about 2% of them here.)
func TestMetadumpListsEveryItemWhileTheSourceServes(t *testing.T) {
	a := testenv.StartMemcached(t)
	keys := slotKeys("k", 0, 1, 6000)
	fill(t, a.Addr, keys, 4000)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // a reader of every key, over and over
		defer wg.Done()
		nd, err := dialNode(ctx, (&net.Dialer{}).DialContext, a.Addr, 5*time.Second)
		if err != nil {
			t.Error(err)
			return
		}
		defer nd.close()
		for i := 0; ctx.Err() == nil; i = (i + 100) % len(keys) {
			if _, err := nd.gets(keys[i:i+100], 1<<20); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	defer func() { cancel(); wg.Wait() }()
	for round := range 5 {
		nd, err := dialNode(ctx, (&net.Dialer{}).DialContext, a.Addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		err = nd.metadump(ctx, "hash", func(e Entry) { seen[e.Key] = true })
		nd.close()
		if err != nil {
			t.Fatal(err)
		}
		if len(seen) != len(keys) {
			t.Errorf("round %d: the dump listed %d of %d items", round, len(seen), len(keys))
		}
	}
}

// twoMemcached starts A and B with count keys of slot 1 of 4 at A,
// values of size bytes, and returns them with the keys and the move.
func twoMemcached(t testing.TB, count, size int) (a, b *testenv.Memcached, keys []string, m Move) {
	t.Helper()
	a, b = testenv.StartMemcached(t), testenv.StartMemcached(t)
	keys = slotKeys("k", 1, 4, count)
	fill(t, a.Addr, keys, size)
	return a, b, keys, Move{Source: a.Addr, Target: b.Addr, Slot: 1, NumSlots: 4}
}

// fill sets keys at addr with values of size bytes, pipelined (noreply).
func fill(t testing.TB, addr string, keys []string, size int) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	w := bufio.NewWriterSize(conn, 1<<16)
	value := strings.Repeat("v", size)
	for _, k := range keys {
		fmt.Fprintf(w, "set %s 0 0 %d noreply\r\n%s\r\n", k, size, value)
	}
	fmt.Fprintf(w, "mn\r\n") // the meta no-op answers MN once all before it are done
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	if line, err := bufio.NewReader(conn).ReadString('\n'); err != nil || line != "MN\r\n" {
		t.Fatalf("filling %s: %q, %v", addr, line, err)
	}
}

// TestCopyTombstonesADeleteRacingIt deletes a key at A between the add
// and the second gets: the copy leaves the tombstone in B, never the
// value, and never deletes at B.
func TestCopyTombstonesADeleteRacingIt(t *testing.T) {
	a, b, keys, m := twoMemcached(t, 20, 100)
	victim := keys[7]
	c := realCopier(t, Options{})
	c.afterAdd = func(added []string) {
		if got := peek(t, b.Addr, victim); got.value != strings.Repeat("v", 100) {
			t.Errorf("before the second gets B's %s = %+v, want the copy", victim, got)
		}
		if err := plainClient(a.Addr).Delete(victim); err != nil {
			t.Errorf("deleting %s at A: %v", victim, err)
		}
	}
	p := new(Progress)
	if err := c.Copy(context.Background(), m, p); err != nil {
		t.Fatal(err)
	}
	got := peek(t, b.Addr, victim)
	if got.value != cachenodes.TombstoneValue || got.flags != 0 || got.ttl > 15 || got.ttl < 13 {
		t.Errorf("B's %s = %+v, want the tombstone, flags 0, 15 s", victim, got)
	}
	if s := p.Stats(); s.CopiedKeys != 19 || s.Undone != 1 {
		t.Errorf("stats %+v", s)
	}
}

// TestCopyTombstonesAKeyChangedBeforeTheAdd sets a key at A between the
// gets and the add: the add carries the old value into B, and the second
// gets sees the new CAS unique and sets the tombstone over it.
func TestCopyTombstonesAKeyChangedBeforeTheAdd(t *testing.T) {
	a, b, keys, m := twoMemcached(t, 20, 100)
	victim := keys[3]
	c := realCopier(t, Options{})
	c.afterGets = func([]string) {
		if err := plainClient(a.Addr).Set(&memcache.Item{Key: victim, Value: []byte("newer")}); err != nil {
			t.Errorf("setting %s at A: %v", victim, err)
		}
	}
	p := new(Progress)
	if err := c.Copy(context.Background(), m, p); err != nil {
		t.Fatal(err)
	}
	if got := peek(t, b.Addr, victim); got.value != cachenodes.TombstoneValue {
		t.Errorf("B's %s = %+v, want the tombstone", victim, got)
	}
	if got := peek(t, a.Addr, victim); got.value != "newer" {
		t.Errorf("A's %s = %+v, want the newer value", victim, got)
	}
	if s := p.Stats(); s.CopiedKeys != 19 || s.Undone != 1 {
		t.Errorf("stats %+v", s)
	}
}

// measureRate returns the bytes per second p's copy made over window,
// from its first copied key on.
func measureRate(t *testing.T, p *Progress, window time.Duration) float64 {
	t.Helper()
	testenv.Eventually(t, 10*time.Second, "the first copy", func() bool { return p.Stats().CopiedKeys > 0 })
	b1, t1 := p.Stats().CopiedBytes, time.Now()
	time.Sleep(window) // measuring a rate over real time, not waiting for a window
	b2, t2 := p.Stats().CopiedBytes, time.Now()
	return float64(b2-b1) / t2.Sub(t1).Seconds()
}

// runCopy starts c.Copy(m) and returns its Progress; the copy is stopped
// and waited for when the test ends, and must have ended by its context.
func runCopy(t *testing.T, c *Copier, m Move) *Progress {
	t.Helper()
	p := new(Progress)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Copy(ctx, m, p) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Copy = %v, want it stopped by its context", err)
		}
	})
	return p
}

// TestCopyHoldsTheRateWithMemcached copies 2 KB values at 200 KB/s for
// 3 s on the real clock. The pace lets through at most rate × T + its
// burst (20 KB, 100 ms worth) + one batch (at most a burst) over any T,
// so over 3 s the rate measured is at most 200 KB/s + 40 KB ÷ 3 s ≈
// 213 KB/s, however fast the machine; it is at least 85% of 200 KB/s
// unless the machine cannot do 100 batches of three commands a second.
func TestCopyHoldsTheRateWithMemcached(t *testing.T) {
	const rate, window = 200_000, 3 * time.Second
	_, _, _, m := twoMemcached(t, 2000, 2000)
	p := runCopy(t, realCopier(t, Options{Rate: rate}), m)
	got := measureRate(t, p, window)
	limit := rate + 2*float64(rate/paceBurst)/window.Seconds()
	t.Logf("copied %.0f bytes/s at a rate of %d (bound %.0f)", got, rate, limit)
	if got > limit || got < 0.85*rate {
		t.Errorf("copied %.0f bytes/s at a rate of %d, want %.0f to %.0f", got, rate, 0.85*rate, limit)
	}
	if s := p.Stats(); s.Halved || s.SlowGets != 0 {
		t.Errorf("halved on loopback: %+v", s)
	}
}

// slowProxy forwards TCP connections to a memcached, holding back each
// answer by delay (atomic, settable while it runs): the first bytes that
// come back after a request wait delay, the rest of that answer does
// not. It is a memcached that answers slowly.
type slowProxy struct {
	ln    net.Listener
	to    string
	delay atomic.Int64
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

func startSlowProxy(t *testing.T, to string, delay time.Duration) *slowProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &slowProxy{ln: ln, to: to}
	p.delay.Store(int64(delay))
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *slowProxy) addr() string { return p.ln.Addr().String() }

func (p *slowProxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.to)
		if err != nil {
			client.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, client, server)
		p.mu.Unlock()
		var asked atomic.Bool
		p.wg.Add(2)
		go func() { // requests: as they come
			defer p.wg.Done()
			buf := make([]byte, 64<<10)
			for {
				n, err := client.Read(buf)
				if n > 0 {
					asked.Store(true)
					if _, werr := server.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					server.Close()
					return
				}
			}
		}()
		go func() { // answers: the first bytes of each held back
			defer p.wg.Done()
			buf := make([]byte, 64<<10)
			for {
				n, err := server.Read(buf)
				if n > 0 {
					if asked.Swap(false) {
						time.Sleep(time.Duration(p.delay.Load()))
					}
					if _, werr := client.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					client.Close()
					return
				}
			}
		}()
	}
}

// TestCopyHalvesForASlowSourceWithMemcached puts A behind a proxy that
// answers each command 60 ms late: the copy runs at half its rate
// (400 KB/s → 200 KB/s), and at the full rate again once A answers in
// time. Unhalved, this copy would run at two thirds of the rate (a batch
// is four 8 KB values, under the 40 KB burst, and its two gets take
// 120 ms: 264 KB/s measured with the halving taken out), so a rate of
// at most half plus the pace's slack (burst and a batch, 80 KB over 4 s:
// 220 KB/s) shows the halving.
func TestCopyHalvesForASlowSourceWithMemcached(t *testing.T) {
	const rate, window = 400_000, 4 * time.Second
	_, _, _, m := twoMemcached(t, 2000, 8000)
	slow := startSlowProxy(t, m.Source, 60*time.Millisecond)
	m.Source = slow.addr()
	p := runCopy(t, realCopier(t, Options{Rate: rate}), m)
	got := measureRate(t, p, window)
	limit := rate/2 + 2*float64(rate/paceBurst)/window.Seconds()
	t.Logf("copied %.0f bytes/s from a slow source at a rate of %d (bound %.0f)", got, rate, limit)
	if got > limit || got < 0.75*rate/2 {
		t.Errorf("copied %.0f bytes/s from a slow source at a rate of %d, want %.0f to %.0f", got, rate, 0.75*rate/2, limit)
	}
	if s := p.Stats(); !s.Halved || s.SlowGets == 0 {
		t.Errorf("not halved: %+v", s)
	}
	slow.delay.Store(0)
	testenv.Eventually(t, 5*time.Second, "the full rate back", func() bool { return !p.Stats().Halved })
}
