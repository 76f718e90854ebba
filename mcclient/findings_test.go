package mcclient

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mcrib/mcrib/cachenodes"
)

// The client findings of issue 26: each test plays the sequence the
// careful readers found, in the maps the shipped leader writes now (a
// warming that ends keeps its object, with ended_at, until its writes
// end) and in the map an older leader wrote (the object removed at once),
// and shows that every write of the ended warming still reaches the old
// holder until ended_at (or until) plus WarmWriteGrace by the writer's
// clock, so that a reader still on the warm map reads nothing stale.

// splitSpec is a pool resized from 2 to 4 slots: slot 0 on a, slot 1 and
// its twin 3 on c, and slot 2 split off to d, warming from a (slot 0's
// holder, which keeps slot 0) until until, ended at endedAt (when not
// zero), or without a warming object when warm is false.
func splitMap(t *testing.T, rev uint64, warm bool, until, endedAt time.Time) *cachenodes.SlotMap {
	t.Helper()
	spec := cachenodes.SlotMapSpec{Pool: "default", Generation: 7, Revision: rev, ResizedFrom: 2,
		Slots: []cachenodes.Node{nodeOf("a"), nodeOf("c"), nodeOf("d"), nodeOf("c")},
		Twins: []bool{false, false, false, true}}
	if warm {
		spec.Warming = []*cachenodes.Warming{nil, nil, {NodeID: "a", Addr: nodeOf("a").Addr, Until: until, EndedAt: endedAt}, nil}
	}
	m, err := cachenodes.NewSlotMap(spec)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// lagging is the sequence of findings 1 and 7: reader r took warm (fresh)
// at rAt by its clock, which is skew behind the writer's; writer w took
// the maps of writer in turn at wAt; key k's value "old" is on the old
// holder (node a) only. At each of the writer's times in at (after wAt),
// w deletes k: the old holder must lose k each time, and r, on its warm
// map, must not read "old".
func lagging(t *testing.T, warm *cachenodes.SlotMap, writer []*cachenodes.SlotMap, k string, wAt time.Time, skew time.Duration, at ...time.Duration) {
	t.Helper()
	for _, d := range at {
		fleet := &fakeFleet{}
		w := newPeer(t, fleet, wAt, Options{})
		r := newPeer(t, fleet, wAt.Add(-skew), Options{})
		if err := r.SetSlotMap(warm); err != nil {
			t.Fatal(err)
		}
		w.SetSlotMap(warm)
		for _, m := range writer {
			if err := w.SetSlotMap(m); err != nil {
				t.Fatal(err)
			}
		}
		old := fleet.node(nodeOf("a").Addr)
		old.items[k] = []byte("old")
		w.clock.Advance(d)
		r.clock.Advance(d)
		if err := w.Delete(k); !completed(err) {
			t.Fatalf("+%v: the writer's delete: %v", d, err)
		}
		if v, ok := old.items[k]; ok {
			t.Errorf("+%v after the writer took the last map: the writer's delete did not reach the old holder, which still has %q", d, v)
		}
		if v := staleRead(r.Client, k, fmt.Sprintf("+%v: the reader %v behind, on the warm map,", d, skew)); v != "" {
			t.Error(v)
		}
	}
}

// TestFinding1SplitEndedWarmingStillWritten is finding 1: when a map ends
// a split's warming (early, its source judged unreachable, or at until),
// the client stopped writing the old holder at once: it took a warm source
// that holds a slot (slot s) for one flushed, which a split's source never
// is; a reader still on the warm map, or with its clock 1 s behind, read
// the deleted value from slot s's holder. Without the fix the "removed"
// sequences read "old", and the ended_at and until sequences leave the
// value on the old holder after until plus 1 s.
func TestFinding1SplitEndedWarmingStillWritten(t *testing.T) {
	t0 := epoch.Add(time.Hour)
	k := keysOfSlot(2, 4, 1)[0]
	t.Run("ended early (ended_at)", func(t *testing.T) {
		until, ended := t0.Add(2*time.Second), t0
		warm := splitMap(t, 10, true, until, time.Time{})
		lagging(t, warm, []*cachenodes.SlotMap{splitMap(t, 11, true, until, ended)}, k, t0, ClockSkew,
			0, 5*time.Second, cachenodes.WarmWriteGrace-time.Millisecond)
	})
	t.Run("ended early (removed at once, an older leader)", func(t *testing.T) {
		until := t0.Add(time.Minute)
		warm := splitMap(t, 10, true, until, time.Time{})
		lagging(t, warm, []*cachenodes.SlotMap{splitMap(t, 11, false, until, time.Time{})}, k, t0, ClockSkew,
			0, 5*time.Second, 30*time.Second)
	})
	t.Run("at until", func(t *testing.T) {
		until := t0
		warm := splitMap(t, 10, true, until, time.Time{})
		lagging(t, warm, nil, k, t0, ClockSkew, 0, 5*time.Second, cachenodes.WarmWriteGrace-time.Millisecond)
	})
	t.Run("at until (removed, an older leader)", func(t *testing.T) {
		until := t0
		warm := splitMap(t, 10, true, until, time.Time{})
		lagging(t, warm, []*cachenodes.SlotMap{splitMap(t, 11, false, until, time.Time{})}, k, t0, ClockSkew,
			0, 500*time.Millisecond, 5*time.Second)
	})
	// The writer stops reading the source on seeing ended_at, and writes
	// it no more at ended_at plus WarmWriteGrace.
	fleet := &fakeFleet{}
	w := newPeer(t, fleet, t0, Options{})
	w.SetSlotMap(splitMap(t, 11, true, t0.Add(time.Minute), t0))
	old := fleet.node(nodeOf("a").Addr)
	old.items[k] = []byte("old")
	calls := old.calls
	if _, err := w.Get(k); !errors.Is(err, memcache.ErrCacheMiss) || old.calls != calls {
		t.Fatalf("Get after ended_at: %v, %d calls to the old holder; want a miss without", err, old.calls-calls)
	}
	w.clock.Advance(cachenodes.WarmWriteGrace)
	if w.Delete(k); old.calls != calls || old.items[k] == nil {
		t.Fatalf("a delete at ended_at + WarmWriteGrace reached the old holder")
	}
}

// doubled returns m doubled (the first write of a resize), its warming
// carried to the twins and ended at endedAt when not zero, or removed
// when warm is false.
func doubled(t *testing.T, m *cachenodes.SlotMap, warm bool, endedAt time.Time) *cachenodes.SlotMap {
	t.Helper()
	d, err := m.Double(epoch)
	if err != nil {
		t.Fatal(err)
	}
	spec := d.Spec()
	switch {
	case !warm:
		spec.Warming = nil
	case !endedAt.IsZero():
		for _, w := range spec.Warming {
			if w != nil {
				w.EndedAt = endedAt
			}
		}
	}
	d, err = cachenodes.NewSlotMap(spec)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestFinding7DoublingEndsAWarming is finding 7: the resize's doubling
// write can end a warming, and the client then stopped writing the old
// holder, for its memory of ended warmings did not reach across tables of
// another length; a reader still on the 2-slot map read the deleted value
// from the old holder. Without the fix the "removed" sequence reads "old",
// and the ended_at sequence leaves the value on the old holder after until
// plus 1 s.
func TestFinding7DoublingEndsAWarming(t *testing.T) {
	t0 := epoch.Add(time.Hour)
	for _, slot := range []int{0, 2} { // slot 0 and its twin
		k := keysOfSlot(slot, 4, 1)[0]
		t.Run(fmt.Sprintf("slot %d, ended_at", slot), func(t *testing.T) {
			warm := phaseMap(t, 3, 6, []string{"b", "c"}, "", "a", t0.Add(2*time.Second), time.Time{})
			lagging(t, warm, []*cachenodes.SlotMap{doubled(t, warm, true, t0)}, k, t0, ClockSkew,
				0, 5*time.Second, cachenodes.WarmWriteGrace-time.Millisecond)
		})
		t.Run(fmt.Sprintf("slot %d, removed (an older leader)", slot), func(t *testing.T) {
			warm := phaseMap(t, 3, 6, []string{"b", "c"}, "", "a", t0.Add(time.Minute), time.Time{})
			lagging(t, warm, []*cachenodes.SlotMap{doubled(t, warm, false, time.Time{})}, k, t0, ClockSkew,
				0, 5*time.Second, 30*time.Second)
		})
	}
}

// TestFinding2FillAcrossTheDoublingSwap is finding 2: a warm fill that
// crosses the doubling map swap. Goroutine 1 reads key k (slot 0 of 2,
// slot 2 of 4: a twin) through the 2-slot table: it misses on the new
// holder and reads "old" on the old one; before its add, the client takes
// the doubled map and goroutine 2 deletes k through it, then, with the
// copy stored, reads k back. The twin's warming had a warm state and a
// guard of its own, so goroutine 2 took the unchecked copy for a value:
// the deleted one. The warm state is now shared by every table in which
// the same source warms the same new holder, and the delete's tombstone
// keeps the copy out.
func TestFinding2FillAcrossTheDoublingSwap(t *testing.T) {
	wb := newWarmBed(t, Options{})
	warm := wb.SlotMap()
	twin := doubled(t, warm, true, time.Time{})
	var k string
	for _, key := range wb.slot0 {
		if cachenodes.KeySlot(key, 4) == 2 {
			k = key
		}
	}
	if k == "" {
		k = keysOfSlot(2, 4, 1)[0]
	}
	wb.a.items[k] = []byte("old")
	var stale string
	wb.b.beforeAdd = func(key string) {
		wb.b.beforeAdd = nil
		if err := wb.SetSlotMap(twin); err != nil {
			t.Errorf("the doubled map: %v", err)
		}
		if err := wb.Delete(key); !completed(err) {
			t.Errorf("goroutine 2's delete: %v", err)
		}
	}
	wb.b.afterAdd = func(key string) {
		wb.b.afterAdd = nil
		stale = staleRead(wb.Client, key, "goroutine 2, through the doubled map,")
	}
	wb.Get(k) // goroutine 1, through the 2-slot table
	if stale != "" {
		t.Fatal(stale)
	}
	if v := staleRead(wb.Client, k, "a later Get"); v != "" {
		t.Fatal(v)
	}
	if holds(wb.b, k) != "tombstone" {
		t.Fatalf("the new holder holds %q, want the delete's tombstone", holds(wb.b, k))
	}

	// One warm state for slot 0, its twin and the table before.
	wb2 := newWarmBed(t, Options{})
	r1 := wb2.route.Load()
	wb2.SetSlotMap(doubled(t, wb2.SlotMap(), true, time.Time{}))
	r2 := wb2.route.Load()
	if r1.warm[0].st != r2.warm[0].st || r2.warm[0].st != r2.warm[2].st {
		t.Fatal("slot 0 and its twin, before and after the doubling, do not share one warm state")
	}
	// A write failure turns the source off for both.
	wb2.a.setDown(true)
	wb2.Set(&memcache.Item{Key: keysOfSlot(2, 4, 1)[0], Value: []byte("v")})
	wb2.a.setDown(false)
	if !r2.warm[0].st.off.Load() {
		t.Fatal("a write failure in the twin did not turn slot 0's source off")
	}
}
