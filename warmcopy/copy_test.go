package warmcopy

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/clock"
)

// bed is a Copier on a fake clock between two fake nodes, A at "a:1" and
// B at "b:1".
type bed struct {
	t    *testing.T
	clk  *clock.Fake
	a, b *fakeNode
	c    *Copier

	mu     sync.Mutex
	lockAt func() time.Time // nil: confirmed right now, always
}

func newBed(t *testing.T, opts Options) *bed {
	t.Helper()
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	bd := &bed{t: t, clk: clk, a: newFakeNode(clk), b: newFakeNode(clk)}
	opts.Clock = clk
	opts.LockConfirmedAt = func() time.Time {
		bd.mu.Lock()
		f := bd.lockAt
		bd.mu.Unlock()
		if f == nil {
			return clk.Now()
		}
		return f()
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	c.open = fakeNet{"a:1": bd.a, "b:1": bd.b}.open
	bd.c = c
	return bd
}

func (bd *bed) setLock(f func() time.Time) {
	bd.mu.Lock()
	defer bd.mu.Unlock()
	bd.lockAt = f
}

// move is slot 1 of 4 from A to B.
var move = Move{Source: "a:1", Target: "b:1", Slot: 1, NumSlots: 4}

// fill stores at A n keys of move's slot, values of size bytes, the
// i-th last used at second i (so that the last is the most recent), and
// returns their keys.
func (bd *bed) fill(n, size int) []string {
	keys := keysOf(move.Slot, move.NumSlots, n)
	for i, k := range keys {
		bd.a.put(k, strings.Repeat(string(rune('a'+i%26)), size), uint32(i), 0)
		bd.a.touch(k, bd.clk.Now().Unix()-int64(n)+int64(i))
	}
	return keys
}

// copyDriven runs Copy to its end, moving the fake clock on by step
// whenever the copy waits on it, and returns how far the clock moved
// and its error.
func (bd *bed) copyDriven(ctx context.Context, p *Progress, step time.Duration) (time.Duration, error) {
	start := bd.clk.Now()
	drive, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		err := bd.c.Copy(ctx, move, p)
		stop()
		done <- err
	}()
	for bd.clk.BlockUntil(drive, 1) {
		bd.clk.Advance(step)
	}
	err := <-done
	return bd.clk.Now().Sub(start), err
}

// TestCopyCopiesMostRecentFirst copies the slot's keys, and only those,
// in batches of gets, adds and gets, most recently used first, with
// their flags and values; another slot's keys stay at A only.
func TestCopyCopiesMostRecentFirst(t *testing.T) {
	bd := newBed(t, Options{})
	keys := bd.fill(300, 10)
	other := keysOf(2, 4, 5)
	for _, k := range other {
		bd.a.put(k, "other", 0, 0)
	}
	p := new(Progress)
	if err := bd.c.Copy(context.Background(), move, p); err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		it, ok := bd.b.get(k)
		if !ok || string(it.value) != strings.Repeat(string(rune('a'+i%26)), 10) || it.flags != uint32(i) {
			t.Fatalf("B's %s = %+v, %v; want A's value and flags %d", k, it, ok, i)
		}
	}
	for _, k := range other {
		if _, ok := bd.b.get(k); ok {
			t.Errorf("B got %s, a key of another slot", k)
		}
	}
	// The gets at A, first and second looks, go from the most recent key
	// down; each batch is gets, adds, gets.
	var asked []string
	cmds := bd.a.commands()
	if cmds[0] != "lru_crawler metadump hash" {
		t.Errorf("the dump is %q, want the hash table's walk", cmds[0])
	}
	cmds = cmds[1:]
	for i, c := range cmds {
		ks := strings.Fields(strings.TrimPrefix(c, "gets "))
		if i%2 == 0 {
			asked = append(asked, ks...)
		} else if c != cmds[i-1] {
			t.Errorf("second look %q is not the batch %q", c, cmds[i-1])
		}
	}
	want := slices.Clone(keys)
	slices.Reverse(want)
	if !slices.Equal(asked, want) {
		t.Errorf("keys asked in the order %q…, want %q…", asked[:5], want[:5])
	}
	if len(cmds) != 2*((300+maxBatchKeys-1)/maxBatchKeys) {
		t.Errorf("%d gets at A for 300 keys, want two a batch of %d", len(cmds), maxBatchKeys)
	}
	s := p.Stats()
	if s.CopiedKeys != 300 || s.CopiedBytes != 3000 || s.Listed != 300 || s.Dumped != 305 || s.SourceGets != 600 || s.SourceHits != 600 || s.Skipped.Total() != 0 || s.Undone != 0 {
		t.Errorf("stats %+v", s)
	}
	if tot := bd.c.Totals(); tot.CopiedKeys != 300 || tot.CopiedBytes != 3000 {
		t.Errorf("totals %+v", tot)
	}
}

// TestCopyNeverOverwritesB leaves B's value and tombstone as they are.
func TestCopyNeverOverwritesB(t *testing.T) {
	bd := newBed(t, Options{})
	keys := bd.fill(3, 10)
	bd.b.put(keys[0], "B's own", 7, 0)
	tomb := cachenodes.TombstoneItem(keys[1])
	bd.b.put(tomb.Key, string(tomb.Value), tomb.Flags, int64(tomb.Expiration))
	p := new(Progress)
	if err := bd.c.Copy(context.Background(), move, p); err != nil {
		t.Fatal(err)
	}
	if it, _ := bd.b.get(keys[0]); string(it.value) != "B's own" || it.flags != 7 {
		t.Errorf("B's value became %+v", it)
	}
	if it, _ := bd.b.get(keys[1]); string(it.value) != cachenodes.TombstoneValue {
		t.Errorf("B's tombstone became %+v", it)
	}
	if s := p.Stats(); s.CopiedKeys != 1 || s.Skipped[SkipPresent] != 2 {
		t.Errorf("stats %+v, want 1 copied and 2 present", s)
	}
}

// TestCopyExpiry adds with min(remaining, warm TTL), less a second, and
// skips a key whose expiry comes within 10 s at the add.
func TestCopyExpiry(t *testing.T) {
	bd := newBed(t, Options{WarmTTL: time.Minute})
	ks := keysOf(move.Slot, move.NumSlots, 4)
	bd.a.put(ks[0], "never", 0, 0)
	bd.a.put(ks[1], "soon", 0, 30)
	bd.a.put(ks[2], "later", 0, 600)
	bd.a.put(ks[3], "going", 0, 12) // 12 s left at the dump, 9.5 s at the add
	bd.a.dumpTakes = 2500 * time.Millisecond
	p := new(Progress)
	if err := bd.c.Copy(context.Background(), move, p); err != nil {
		t.Fatal(err)
	}
	now := bd.clk.Now().Unix() // the add's second
	for k, want := range map[string]int64{ks[0]: 60, ks[1]: 26, ks[2]: 60} {
		if it, ok := bd.b.get(k); !ok || it.exp-now != want {
			t.Errorf("B's %s expires in %d s, want %d", k, it.exp-now, want)
		}
	}
	if _, ok := bd.b.get(ks[3]); ok {
		t.Error("a key with under 10 s left was copied")
	}
	if s := p.Stats(); s.CopiedKeys != 3 || s.Skipped[SkipExpiring] != 1 {
		t.Errorf("stats %+v", s)
	}
}

// TestCopyFillWindow sends the add only within FillWithin of the gets:
// a gets answered in 999 ms is copied, one of 1 s is skipped.
func TestCopyFillWindow(t *testing.T) {
	for _, tc := range []struct {
		takes  time.Duration
		copied bool
	}{{999 * time.Millisecond, true}, {time.Second, false}} {
		t.Run(tc.takes.String(), func(t *testing.T) {
			bd := newBed(t, Options{})
			keys := bd.fill(2, 10)
			bd.a.getsTakes = tc.takes
			p := new(Progress)
			if err := bd.c.Copy(context.Background(), move, p); err != nil {
				t.Fatal(err)
			}
			_, ok := bd.b.get(keys[0])
			s := p.Stats()
			if ok != tc.copied || (tc.copied && s.CopiedKeys != 2) || (!tc.copied && s.Skipped[SkipLate] != 2) {
				t.Errorf("gets of %v: B has it %v, stats %+v", tc.takes, ok, s)
			}
			if !tc.copied && len(bd.b.commands()) != 0 {
				t.Errorf("B was sent %q", bd.b.commands())
			}
		})
	}
}

// TestCopyUndoesStaleCopies sets the tombstone, never a delete, for a key
// deleted and one changed at A between the add and the second gets.
func TestCopyUndoesStaleCopies(t *testing.T) {
	bd := newBed(t, Options{})
	keys := bd.fill(4, 10)
	bd.c.afterAdd = func(added []string) {
		bd.a.remove(keys[1])
		bd.a.put(keys[2], "newer", 0, 0)
	}
	p := new(Progress)
	if err := bd.c.Copy(context.Background(), move, p); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys[1:3] {
		if it, _ := bd.b.get(k); !isTombstone(it) {
			t.Errorf("B's %s = %q, want the tombstone", k, it.value)
		}
		if it, _ := bd.b.get(k); it.exp != bd.clk.Now().Unix()+15 {
			t.Errorf("the tombstone of %s expires at %d, want in 15 s", k, it.exp)
		}
	}
	for _, c := range bd.b.commands() {
		if !strings.HasPrefix(c, "add ") && !strings.HasPrefix(c, "set ") {
			t.Errorf("B was sent %q", c)
		}
	}
	if s := p.Stats(); s.CopiedKeys != 2 || s.Undone != 2 {
		t.Errorf("stats %+v, want 2 copied and 2 undone", s)
	}
}

// TestCopySkipsWhatChangedSinceTheDump does not copy a key whose CAS
// unique at the first gets is not the dump's (its expiry may have
// changed), nor one gone since.
func TestCopySkipsWhatChangedSinceTheDump(t *testing.T) {
	bd := newBed(t, Options{})
	keys := bd.fill(3, 10)
	bd.a.beforeGets = func([]string) {
		bd.a.beforeGets = nil
		bd.a.put(keys[0], "rewritten", 0, 0)
		bd.a.remove(keys[1])
	}
	p := new(Progress)
	if err := bd.c.Copy(context.Background(), move, p); err != nil {
		t.Fatal(err)
	}
	if s := p.Stats(); s.CopiedKeys != 1 || s.Skipped[SkipChanged] != 1 || s.Skipped[SkipGone] != 1 {
		t.Errorf("stats %+v", s)
	}
	if _, ok := bd.b.get(keys[0]); ok {
		t.Error("a key rewritten since the dump was copied")
	}
}

// TestCopyWaitsForTheLock adds nothing while the lock is not confirmed
// within 1 s, and goes on once it is; a lock lost between the gets and
// the add skips the batch.
func TestCopyWaitsForTheLock(t *testing.T) {
	bd := newBed(t, Options{})
	bd.fill(2, 10)
	confirmed := bd.clk.Now().Add(-time.Second) // exactly 1 s old: stale
	bd.setLock(func() time.Time { return confirmed })
	p := new(Progress)
	done := make(chan error, 1)
	go func() { done <- bd.c.Copy(context.Background(), move, p) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for range 3 {
		if !bd.clk.BlockUntil(ctx, 1) {
			t.Fatal("the copy does not wait for the lock")
		}
		bd.clk.Advance(lockPoll)
	}
	if len(bd.b.commands()) != 0 || p.Stats().LockWaits != 1 {
		t.Fatalf("without the lock: B was sent %q, stats %+v", bd.b.commands(), p.Stats())
	}
	bd.setLock(nil) // confirmed now
	// The copy wakes on the clock and goes on: move the clock while it
	// still waits on it.
	for waiting := true; waiting; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			waiting = false
		default:
			short, stop := context.WithTimeout(ctx, 10*time.Millisecond)
			if bd.clk.BlockUntil(short, 1) {
				bd.clk.Advance(lockPoll)
			}
			stop()
			if ctx.Err() != nil {
				t.Fatal("the copy does not end once the lock is confirmed")
			}
		}
	}
	if s := p.Stats(); s.CopiedKeys != 2 {
		t.Errorf("stats %+v", s)
	}

	// The lock fresh before the gets, 1.1 s old at the add, which is
	// within the fill window.
	bd2 := newBed(t, Options{})
	bd2.fill(2, 10)
	at := bd2.clk.Now().Add(-600 * time.Millisecond)
	bd2.setLock(func() time.Time { return at })
	bd2.a.getsTakes = 500 * time.Millisecond
	p2 := new(Progress)
	if err := bd2.c.Copy(context.Background(), move, p2); err != nil {
		t.Fatal(err)
	}
	if s := p2.Stats(); s.Skipped[SkipNotLeader] != 2 || len(bd2.b.commands()) != 0 {
		t.Errorf("stats %+v, B sent %q", s, bd2.b.commands())
	}
}

// TestCopyHoldsTheRate: 20 keys of 100 bytes at 1000 bytes/s, one a
// batch, take 1.8 s of fake time: the first batch is the 100-byte burst,
// and a batch is paid for after its gets (post-paid), so the 20th is
// read at 1.8 s. Bytes copied by time T are thus at most
// rate × T + burst + one batch.
func TestCopyHoldsTheRate(t *testing.T) {
	bd := newBed(t, Options{Rate: 1000})
	bd.fill(20, 100)
	p := new(Progress)
	took, err := bd.copyDriven(context.Background(), p, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if s := p.Stats(); s.CopiedBytes != 2000 || s.Halved || s.SlowGets != 0 {
		t.Fatalf("stats %+v", s)
	}
	if took < 1800*time.Millisecond || took > 1801*time.Millisecond {
		t.Errorf("2000 bytes at 1000/s took %v, want 1.8 s", took)
	}
}

// TestCopyHalvesWhenTheSourceIsSlow: with a source that takes 60 ms a
// gets the same copy takes twice as long (3.78 s: 0.2 s a key once the
// burst is spent), at 40 ms or 50 ms (not slower than 50 ms) it does not:
// at most 2 s, when the two gets of a key take the 0.1 s the rate allows
// it.
func TestCopyHalvesWhenTheSourceIsSlow(t *testing.T) {
	for _, tc := range []struct {
		takes    time.Duration
		min, max time.Duration
		slow     bool
	}{
		{40 * time.Millisecond, 1800 * time.Millisecond, 2000 * time.Millisecond, false},
		{SlowAnswer, 1800 * time.Millisecond, 2000 * time.Millisecond, false},
		{60 * time.Millisecond, 3700 * time.Millisecond, 3800 * time.Millisecond, true},
	} {
		t.Run(tc.takes.String(), func(t *testing.T) {
			bd := newBed(t, Options{Rate: 1000})
			bd.fill(20, 100)
			var halved bool
			p := new(Progress)
			bd.c.afterAdd = func([]string) { halved = halved || p.Stats().Halved }
			bd.a.getsTakes = tc.takes
			took, err := bd.copyDriven(context.Background(), p, time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			if took < tc.min || took > tc.max {
				t.Errorf("with gets of %v the copy took %v, want %v to %v", tc.takes, took, tc.min, tc.max)
			}
			s := p.Stats()
			if halved != tc.slow || (s.SlowGets > 0) != tc.slow || s.Halved {
				t.Errorf("halved while running %v, stats %+v (Halved must be false after)", halved, s)
			}
		})
	}
}

// TestCopyRestoresTheRate goes back to the full rate once the source
// answers in time again: the copy takes longer than at full rate
// throughout (1.8 s) and less than at half rate throughout (3.78 s).
func TestCopyRestoresTheRate(t *testing.T) {
	bd := newBed(t, Options{Rate: 1000})
	bd.fill(20, 100)
	n := 0
	bd.a.beforeGets = func([]string) {
		if n++; n == 10 { // after the second look of the fifth key: fast
			bd.a.getsTakes = 0
		}
	}
	bd.a.getsTakes = 60 * time.Millisecond
	p := new(Progress)
	took, err := bd.copyDriven(context.Background(), p, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if took <= 2*time.Second || took >= 2500*time.Millisecond {
		t.Errorf("took %v, want between 2 s and 2.5 s", took)
	}
	if s := p.Stats(); s.SlowGets != 10 {
		t.Errorf("%d slow gets, want 10", s.SlowGets)
	}
}

// TestCopyStopsWithTheContext stops before the next batch when ctx ends,
// but checks the batch already added.
func TestCopyStopsWithTheContext(t *testing.T) {
	bd := newBed(t, Options{})
	keys := bd.fill(2*maxBatchKeys, 10)
	ctx, cancel := context.WithCancel(context.Background())
	bd.c.afterAdd = func([]string) {
		cancel()
		bd.a.remove(keys[len(keys)-1]) // the most recent: in the first batch
	}
	p := new(Progress)
	if err := bd.c.Copy(ctx, move, p); !errors.Is(err, context.Canceled) {
		t.Fatalf("Copy = %v, want context.Canceled", err)
	}
	s := p.Stats()
	if s.CopiedKeys != maxBatchKeys-1 || s.Undone != 1 {
		t.Errorf("stats %+v, want the first batch but one copied and one undone", s)
	}
	if it, _ := bd.b.get(keys[len(keys)-1]); string(it.value) != cachenodes.TombstoneValue {
		t.Errorf("the key deleted as the copy stopped is %q in B, want the tombstone", it.value)
	}
	if len(bd.a.commands()) != 3 {
		t.Errorf("A was sent %q, want the dump and the batch's two gets", bd.a.commands())
	}
}

// TestCopyRetriesABusyCrawler asks again every second while the crawler
// is busy.
func TestCopyRetriesABusyCrawler(t *testing.T) {
	bd := newBed(t, Options{})
	bd.fill(3, 10)
	bd.a.busy = 2
	p := new(Progress)
	took, err := bd.copyDriven(context.Background(), p, 100*time.Millisecond)
	if err != nil || p.Stats().CopiedKeys != 3 || took != 2*busyRetry {
		t.Errorf("Copy = %v after %v, stats %+v; want 3 copied after 2 s", err, took, p.Stats())
	}
}

// TestCopyFallsBackToTheLRUWalk dumps with metadump all a memcached
// that has no metadump hash.
func TestCopyFallsBackToTheLRUWalk(t *testing.T) {
	bd := newBed(t, Options{})
	bd.fill(3, 10)
	bd.a.noHashDump = true
	p := new(Progress)
	if err := bd.c.Copy(context.Background(), move, p); err != nil || p.Stats().CopiedKeys != 3 {
		t.Fatalf("Copy = %v, stats %+v", err, p.Stats())
	}
	if cmds := bd.a.commands(); cmds[0] != "lru_crawler metadump hash" || cmds[1] != "lru_crawler metadump all" {
		t.Errorf("A was sent %q", cmds[:2])
	}
}

// TestCopyFailures: what a failure of either node leaves behind.
func TestCopyFailures(t *testing.T) {
	reset := errors.New("connection reset by peer")
	t.Run("source dial", func(t *testing.T) {
		bd := newBed(t, Options{})
		bd.a.fail["dial"] = reset
		if err := bd.c.Copy(context.Background(), move, nil); !errors.Is(err, ErrSource) || !errors.Is(err, reset) {
			t.Errorf("Copy = %v, want ErrSource and the cause", err)
		}
	})
	t.Run("first gets", func(t *testing.T) {
		bd := newBed(t, Options{})
		bd.fill(3, 10)
		bd.a.fail["gets"] = reset
		if err := bd.c.Copy(context.Background(), move, nil); !errors.Is(err, ErrSource) || len(bd.b.commands()) != 0 {
			t.Errorf("Copy = %v, B sent %q", err, bd.b.commands())
		}
	})
	t.Run("the add's answer lost: tombstones on a new connection", func(t *testing.T) {
		bd := newBed(t, Options{})
		keys := bd.fill(3, 10)
		bd.b.fail["add"], bd.b.failTimes["add"] = reset, 1
		p := new(Progress)
		err := bd.c.Copy(context.Background(), move, p)
		if !errors.Is(err, ErrTarget) || errors.Is(err, ErrUnverified) {
			t.Fatalf("Copy = %v, want ErrTarget alone", err)
		}
		for _, k := range keys {
			if it, _ := bd.b.get(k); string(it.value) != cachenodes.TombstoneValue {
				t.Errorf("B's %s = %q, want the tombstone", k, it.value)
			}
		}
		if s := p.Stats(); s.Undone != 3 || s.CopiedKeys != 0 {
			t.Errorf("stats %+v", s)
		}
	})
	t.Run("the second gets fails: tombstones", func(t *testing.T) {
		bd := newBed(t, Options{})
		keys := bd.fill(3, 10)
		bd.c.afterAdd = func([]string) { bd.a.fail["gets"] = reset }
		err := bd.c.Copy(context.Background(), move, nil)
		if !errors.Is(err, ErrSource) || errors.Is(err, ErrUnverified) {
			t.Fatalf("Copy = %v, want ErrSource alone", err)
		}
		for _, k := range keys {
			if it, _ := bd.b.get(k); string(it.value) != cachenodes.TombstoneValue {
				t.Errorf("B's %s = %q, want the tombstone", k, it.value)
			}
		}
	})
	t.Run("neither checked nor undone", func(t *testing.T) {
		bd := newBed(t, Options{})
		keys := bd.fill(3, 10)
		bd.c.afterAdd = func([]string) {
			bd.a.fail["gets"] = reset
			bd.b.fail["set"] = reset
		}
		err := bd.c.Copy(context.Background(), move, nil)
		var u *UnverifiedError
		if !errors.Is(err, ErrSource) || !errors.As(err, &u) || !errors.Is(err, ErrUnverified) {
			t.Fatalf("Copy = %v, want ErrSource and an UnverifiedError", err)
		}
		want := slices.Clone(keys)
		slices.Reverse(want)
		if u.Target != "b:1" || !slices.Equal(u.Keys, want) || !errors.Is(u, reset) {
			t.Errorf("UnverifiedError %+v", u)
		}
		if got := len(bd.b.commands()); got != 3+2*3 {
			t.Errorf("B was sent %d commands, want 3 adds and the tombstones twice", got)
		}
		// The caller sets them again once B answers.
		delete(bd.b.fail, "set")
		if err := bd.c.Tombstone(context.Background(), "b:1", u.Keys...); err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if it, _ := bd.b.get(k); string(it.value) != cachenodes.TombstoneValue {
				t.Errorf("B's %s = %q after Tombstone", k, it.value)
			}
		}
	})
}

// TestNewAndMoveChecks refuses what cannot work.
func TestNewAndMoveChecks(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Error("New without LockConfirmedAt")
	}
	lock := func() time.Time { return time.Now() }
	for _, o := range []Options{{Rate: -1}, {WarmTTL: -1}, {Timeout: -1}, {MaxKeys: -1}, {MaxValueBytes: -1}} {
		o.LockConfirmedAt = lock
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) took a negative field", o)
		}
	}
	c, err := New(Options{LockConfirmedAt: lock, WarmTTL: 365 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if c.opts.Rate != DefaultRate || c.opts.WarmTTL != 30*24*time.Hour || c.opts.Timeout != DefaultTimeout || c.opts.MaxKeys != DefaultMaxKeys || c.opts.MaxValueBytes != DefaultMaxValueBytes {
		t.Errorf("defaults %+v", c.opts)
	}
	for _, m := range []Move{
		{Target: "b", Slot: 0, NumSlots: 1},
		{Source: "a", Slot: 0, NumSlots: 1},
		{Source: "a", Target: "a", Slot: 0, NumSlots: 1},
		{Source: "a", Target: "b", Slot: 1, NumSlots: 1},
		{Source: "a", Target: "b", Slot: -1, NumSlots: 4},
		{Source: "a", Target: "b", Slot: 0, NumSlots: 0},
	} {
		if err := c.Copy(context.Background(), m, nil); !errors.Is(err, ErrInvalidMove) {
			t.Errorf("Copy(%+v) = %v, want ErrInvalidMove", m, err)
		}
	}
}

// TestTotalsSumTheCopies adds every run's counts into the Copier's.
func TestTotalsSumTheCopies(t *testing.T) {
	bd := newBed(t, Options{})
	bd.fill(5, 10)
	for range 2 {
		bd.b.mu.Lock()
		bd.b.items = map[string]*fakeItem{}
		bd.b.mu.Unlock()
		if err := bd.c.Copy(context.Background(), move, nil); err != nil {
			t.Fatal(err)
		}
	}
	if tot := bd.c.Totals(); tot.CopiedKeys != 10 || tot.CopiedBytes != 100 || tot.Listed != 10 {
		t.Errorf("totals %+v", tot)
	}
}

// isTombstone reports whether it is a tombstone, by cachenodes' rule.
func isTombstone(it fakeItem) bool {
	return cachenodes.IsTombstone(&memcache.Item{Value: it.value, Flags: it.flags})
}
