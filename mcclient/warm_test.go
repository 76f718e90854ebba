package mcclient

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/revert"
)

// warmMap builds a map like slotMap in which slot i warms from the node
// warm[i] until until.
func warmMap(t *testing.T, gen uint64, slots []string, warm map[int]string, until time.Time) *cachenodes.SlotMap {
	t.Helper()
	spec := slotMap(t, gen, slots).Spec()
	spec.Warming = make([]*cachenodes.Warming, len(slots))
	for i, id := range warm {
		spec.Warming[i] = &cachenodes.Warming{NodeID: id, Addr: "127.0.0.1:" + port(id), Until: until}
	}
	m, err := cachenodes.NewSlotMap(spec)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// warmBed is a client over slots [b, c] whose slot 0 warms from a for a
// minute, with keys of slot 0 and of slot 1.
type warmBed struct {
	*testClient
	a, b, c      *fakeNode
	until        time.Time
	slot0, slot1 []string
}

func newWarmBed(t *testing.T, opts Options, reverted ...revert.Set) *warmBed {
	t.Helper()
	tc := newTestClient(t, opts, reverted...)
	wb := &warmBed{testClient: tc, until: tc.clock.Now().Add(time.Minute),
		slot0: keysOfSlot(0, 2, 6), slot1: keysOfSlot(1, 2, 6)}
	if err := tc.SetSlotMap(warmMap(t, 2, []string{"b", "c"}, map[int]string{0: "a"}, wb.until)); err != nil {
		t.Fatal(err)
	}
	wb.a, wb.b, wb.c = tc.fleet.node("127.0.0.1:"+port("a")), tc.fleet.node("127.0.0.1:"+port("b")), tc.fleet.node("127.0.0.1:"+port("c"))
	return wb
}

func TestWarmReadThroughFillsTheNewHolderWithAdd(t *testing.T) {
	wb := newWarmBed(t, Options{WarmTTL: 90 * time.Second})
	k, fresh := wb.slot0[0], wb.slot0[1]
	wb.a.items[k] = []byte("old")
	wb.a.items[fresh] = []byte("old")
	wb.b.items[fresh] = []byte("new")

	it, err := wb.Get(k)
	if err != nil || string(it.Value) != "old" {
		t.Fatalf("Get of a key only the old holder has: %v, %v; want its value", it, err)
	}
	if v := wb.b.items[k]; string(v) != "old" || wb.b.exps[k] != 90 {
		t.Fatalf("new holder got %q with expiry %d, want \"old\" with the warm TTL 90", v, wb.b.exps[k])
	}
	calls := wb.a.calls
	if it, err := wb.Get(k); err != nil || string(it.Value) != "old" || wb.a.calls != calls {
		t.Fatalf("second Get: %v, %v, %d calls to the old holder; want a hit on the new one only", it, err, wb.a.calls-calls)
	}
	if it, err := wb.Get(fresh); err != nil || string(it.Value) != "new" || wb.a.calls != calls {
		t.Fatalf("Get of a key the new holder has: %v, %v; want its value without reading the old", it, err)
	}
	// The copy is an add: a value the new holder got meanwhile stays.
	r := wb.route.Load()
	n, w := r.slots[0], r.warm[0]
	wb.b.items[k] = []byte("newer")
	if !wb.fill(r, n, w, &memcache.Item{Key: k, Value: []byte("old")}, w.st.guard.markWrites(k), wb.clock.Now()) || string(wb.b.items[k]) != "newer" {
		t.Fatalf("a warm fill overwrote the new holder's value: %q", wb.b.items[k])
	}
	// Keys of a slot that does not warm are never read elsewhere.
	if _, err := wb.Get(wb.slot1[0]); err != memcache.ErrCacheMiss || wb.a.calls != calls {
		t.Fatalf("Get in a slot that does not warm: %v, %d calls to a", err, wb.a.calls-calls)
	}
	// A miss on both is a miss, and fills nothing.
	if _, err := wb.Get(wb.slot0[2]); err != memcache.ErrCacheMiss || wb.b.items[wb.slot0[2]] != nil {
		t.Fatalf("Get of a key neither has: %v", err)
	}
}

func TestWarmTTLDefaultAndLongTTL(t *testing.T) {
	wb := newWarmBed(t, Options{})
	k := wb.slot0[0]
	wb.a.items[k] = []byte("v")
	if _, err := wb.Get(k); err != nil || wb.b.exps[k] != 3600 {
		t.Fatalf("default warm TTL: %v, expiry %d, want 3600", err, wb.b.exps[k])
	}
	long := newWarmBed(t, Options{WarmTTL: 40 * 24 * time.Hour})
	if got, want := long.warmExpiry(), int32(long.clock.Now().Unix()+40*24*3600); got != want {
		t.Fatalf("a TTL over 30 days is written as %d, want the Unix time %d", got, want)
	}
	if _, err := New(Options{WarmTTL: -time.Second}); err == nil {
		t.Fatal("a negative WarmTTL was accepted")
	}
}

func TestWarmWritesGoToBoth(t *testing.T) {
	wb := newWarmBed(t, Options{})
	k := wb.slot0[0]
	if err := wb.Set(&memcache.Item{Key: k, Value: []byte("v1")}); err != nil {
		t.Fatal(err)
	}
	if string(wb.a.items[k]) != "v1" || string(wb.b.items[k]) != "v1" {
		t.Fatalf("Set reached old %q and new %q, want both v1", wb.a.items[k], wb.b.items[k])
	}
	// Replace of a key only the old holder has: stored (there).
	r := wb.slot0[1]
	wb.a.items[r] = []byte("old")
	if err := wb.Replace(&memcache.Item{Key: r, Value: []byte("r")}); err != nil {
		t.Fatalf("Replace of a key the old holder has: %v", err)
	}
	if string(wb.a.items[r]) != "r" {
		t.Fatalf("Replace did not reach the old holder")
	}
	// Add only fills the new holder.
	ad := wb.slot0[2]
	if err := wb.Add(&memcache.Item{Key: ad, Value: []byte("a")}); err != nil || wb.a.items[ad] != nil || string(wb.b.items[ad]) != "a" {
		t.Fatalf("Add: %v; old has %q, new %q; want the new holder only", err, wb.a.items[ad], wb.b.items[ad])
	}
	// Slot 1 does not warm: a write goes to its holder only.
	if err := wb.Set(&memcache.Item{Key: wb.slot1[0], Value: []byte("x")}); err != nil || len(wb.a.items) != 2 {
		t.Fatalf("Set in a slot that does not warm: %v, old holder has %d items", err, len(wb.a.items))
	}
}

func TestWarmDeletedKeyNeverComesBack(t *testing.T) {
	wb := newWarmBed(t, Options{})
	k := wb.slot0[0]
	wb.a.items[k] = []byte("old")
	if err := wb.Delete(k); err != nil {
		t.Fatalf("Delete of a key only the old holder had: %v, want nil (it was there)", err)
	}
	if !slices.Contains(wb.a.deletes, k) {
		t.Fatal("the delete did not reach the old holder")
	}
	if _, err := wb.Get(k); err != memcache.ErrCacheMiss {
		t.Fatalf("deleted key read back: %v", err)
	}
	// The new holder gets a tombstone, not a delete: whether it had the
	// key is not told.
	if err := wb.Delete(wb.slot0[5]); err != nil || !wb.b.tombstoned(wb.slot0[5]) {
		t.Fatalf("Delete of a key neither had: %v, tombstone %v; want nil and the tombstone", err, wb.b.tombstoned(wb.slot0[5]))
	}

	// A delete that runs between the read of the old holder and the add
	// to the new one: the fill is taken back and the read misses.
	r := wb.slot0[1]
	wb.a.items[r] = []byte("old")
	wb.b.beforeAdd = func(key string) {
		wb.b.beforeAdd = nil
		if err := wb.Delete(key); err != nil {
			t.Errorf("racing Delete: %v", err)
		}
	}
	if it, err := wb.Get(r); err != memcache.ErrCacheMiss {
		t.Fatalf("Get racing a delete: %v, %v; want a miss", it, err)
	}
	if !wb.b.tombstoned(r) {
		t.Fatalf("the new holder holds %q of a key deleted during its fill, want the delete's tombstone", wb.b.items[r])
	}
	if _, err := wb.Get(r); err != memcache.ErrCacheMiss {
		t.Fatalf("deleted key read back after a racing fill: %v", err)
	}

	// A delete that fails on the old holder is not a success (another
	// client may still read the old holder) and stops this client's
	// reads of it: the stale value there is never read by this client,
	// even once it answers again, and the delete queued for it reaches it
	// after the backoff.
	s := wb.slot0[2]
	wb.a.items[s] = []byte("stale")
	wb.a.setDown(true)
	if err := wb.Delete(s); !errors.Is(err, ErrWarmSourceMissed) || !errors.Is(err, ErrQueued) {
		t.Fatalf("Delete with the old holder down: %v, want ErrWarmSourceMissed and ErrQueued", err)
	}
	wb.a.setDown(false)
	calls := wb.a.calls
	if _, err := wb.Get(s); err != memcache.ErrCacheMiss || wb.a.calls != calls {
		t.Fatalf("Get after a failed delete on the old holder: %v, %d calls to it; want a miss without", err, wb.a.calls-calls)
	}
	wb.clock.Advance(DefaultRetryMax)
	wb.Replay()
	if _, ok := wb.a.items[s]; ok || wb.QueueLen("a") != 0 {
		t.Fatalf("the delete queued for the old holder did not reach it (queue %d)", wb.QueueLen("a"))
	}
}

func TestWarmStopsAtUntil(t *testing.T) {
	wb := newWarmBed(t, Options{})
	k := wb.slot0[0]
	wb.a.items[k] = []byte("old")
	m := wb.SlotMap()
	wb.clock.Set(wb.until.Add(-time.Millisecond))
	wb.SetSlotMap(m) // read again: fresh
	if _, err := wb.Get(k); err != nil {
		t.Fatalf("Get just before until: %v, want the old holder's value", err)
	}
	delete(wb.b.items, k)
	wb.clock.Set(wb.until)
	wb.SetSlotMap(m)
	calls := wb.a.calls
	if _, err := wb.Get(k); err != memcache.ErrCacheMiss {
		t.Fatalf("Get at until: %v, want a miss", err)
	}
	if got, _ := wb.GetMulti(wb.slot0); len(got) != 0 {
		t.Fatalf("GetMulti at until: %d hits, want 0", len(got))
	}
	if wb.a.calls != calls {
		t.Fatalf("the old holder got %d reads at until, want none", wb.a.calls-calls)
	}
	// Writes reach it, as deletes, until until plus WarmWriteGrace: a
	// client whose clock is behind, or whose fresh map is older, still
	// reads it.
	wb.clock.Set(wb.until.Add(cachenodes.WarmWriteGrace - time.Millisecond))
	if err := wb.Set(&memcache.Item{Key: wb.slot0[1], Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	if err := wb.Delete(k); err != nil {
		t.Fatalf("Delete before until + WarmWriteGrace: %v, want nil", err)
	}
	if want := []string{wb.slot0[1], k}; !slices.Equal(wb.a.deletes, want) || wb.a.items[wb.slot0[1]] != nil {
		t.Fatalf("the old holder got deletes %v after until, want %v (and no value)", wb.a.deletes, want)
	}
	if string(wb.b.items[wb.slot0[1]]) != "v" || !wb.b.tombstoned(k) {
		t.Fatalf("the new holder holds %q and %q, want the set's value and the delete's tombstone", wb.b.items[wb.slot0[1]], wb.b.items[k])
	}
	wb.clock.Set(wb.until.Add(cachenodes.WarmWriteGrace))
	calls = wb.a.calls
	wb.Set(&memcache.Item{Key: wb.slot0[1], Value: []byte("v")})
	wb.Delete(k)
	if wb.a.calls != calls {
		t.Fatalf("the old holder got %d calls at until + WarmWriteGrace, want none", wb.a.calls-calls)
	}
	if !wb.b.tombstoned(k) {
		t.Fatal("a delete while the warming object is in the map sent the new holder a delete, not a tombstone")
	}
}

func TestWarmFailedWriteTurnsTheSourceOff(t *testing.T) {
	wb := newWarmBed(t, Options{})
	k, s := wb.slot0[0], wb.slot0[1]
	wb.a.items[k] = []byte("old")
	wb.a.setDown(true)
	if err := wb.Set(&memcache.Item{Key: s, Value: []byte("v")}); !errors.Is(err, ErrWarmSourceMissed) {
		t.Fatalf("Set with the old holder down: %v, want ErrWarmSourceMissed", err)
	}
	if string(wb.b.items[s]) != "v" {
		t.Fatal("the new holder did not get the set")
	}
	wb.a.setDown(false)
	calls := wb.a.calls
	if _, err := wb.Get(k); err != memcache.ErrCacheMiss || wb.a.calls != calls {
		t.Fatalf("Get after a failed write: %v, %d calls to the old holder; want a miss without", err, wb.a.calls-calls)
	}
	// A new map with the same warming keeps it off ...
	if err := wb.SetSlotMap(warmMap(t, 2, []string{"b", "c"}, map[int]string{0: "a"}, wb.until.Add(time.Minute))); err != nil {
		t.Fatal(err)
	}
	if _, err := wb.Get(k); err != memcache.ErrCacheMiss || wb.a.calls != calls {
		t.Fatalf("the same warming in a new map turned the source on again")
	}
	// ... a new warming of the slot from another node is used.
	d := wb.fleet.node("127.0.0.1:" + port("d"))
	d.items[k] = []byte("from d")
	if err := wb.SetSlotMap(warmMap(t, 3, []string{"b", "c"}, map[int]string{0: "d"}, wb.until)); err != nil {
		t.Fatal(err)
	}
	if it, err := wb.Get(k); err != nil || string(it.Value) != "from d" {
		t.Fatalf("Get with a new warm source: %v, %v", it, err)
	}
	// A map removes the warming at once (an older leader did): its
	// source is still written until until plus WarmWriteGrace, then
	// leaves the client with the next map.
	if err := wb.SetSlotMap(slotMap(t, 3, []string{"b", "c"}, "a", "d")); err != nil {
		t.Fatal(err)
	}
	if w := wb.route.Load().warm; w == nil || w[0] == nil || w[0].n.id != "d" || !w[0].readsUntil.IsZero() {
		t.Fatal("a map that ended the warming early dropped the source its writes still reach")
	}
	wb.clock.Set(wb.until.Add(cachenodes.WarmWriteGrace))
	if err := wb.SetSlotMap(slotMap(t, 4, []string{"b", "c"}, "a", "d")); err != nil {
		t.Fatal(err)
	}
	if wb.route.Load().warm != nil {
		t.Fatal("a map without warming kept warm sources after until + WarmWriteGrace")
	}
	wb.mu.Lock()
	_, kept := wb.nodes["d"]
	wb.mu.Unlock()
	if kept {
		t.Fatal("the client kept the former warm source d, a spare with nothing queued")
	}
}

func TestWarmGetMulti(t *testing.T) {
	wb := newWarmBed(t, Options{})
	keys := append(slices.Clone(wb.slot0), wb.slot1...)
	wb.a.items[wb.slot0[0]] = []byte("a0")
	wb.a.items[wb.slot0[1]] = []byte("a1")
	wb.b.items[wb.slot0[1]] = []byte("b1")
	wb.c.items[wb.slot1[0]] = []byte("c0")
	wb.a.items[wb.slot1[1]] = []byte("never read") // slot 1 does not warm
	got, err := wb.GetMulti(keys)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{wb.slot0[0]: "a0", wb.slot0[1]: "b1", wb.slot1[0]: "c0"}
	if len(got) != len(want) {
		t.Fatalf("GetMulti: %d hits, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] == nil || string(got[k].Value) != v {
			t.Fatalf("GetMulti[%s] = %v, want %q", k, got[k], v)
		}
	}
	if string(wb.b.items[wb.slot0[0]]) != "a0" || wb.b.exps[wb.slot0[0]] != 3600 {
		t.Fatal("GetMulti did not copy the old holder's hit into the new holder")
	}
	// A key deleted during warming does not come back through GetMulti.
	if err := wb.Delete(wb.slot0[0]); err != nil {
		t.Fatal(err)
	}
	if got, _ := wb.GetMulti(keys); got[wb.slot0[0]] != nil {
		t.Fatal("a deleted key came back through GetMulti")
	}
}

func TestWarmSourceDown(t *testing.T) {
	wb := newWarmBed(t, Options{})
	k := wb.slot0[0]
	wb.a.items[k] = []byte("old")
	wb.a.setDown(true)
	if _, err := wb.Get(k); err != memcache.ErrCacheMiss {
		t.Fatalf("Get with the old holder down: %v, want a miss", err)
	}
	wb.a.setDown(false)
	calls := wb.a.calls
	if _, err := wb.Get(k); !errors.Is(err, memcache.ErrCacheMiss) || wb.a.calls != calls {
		t.Fatalf("an old holder that did not answer is read again (%d calls)", wb.a.calls-calls)
	}
}
