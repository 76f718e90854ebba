package mcclient

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/mcrib/mcrib/cachenodes"
)

// ageGauge returns the value of mcrib_client_map_age_seconds, and false
// when it has no point.
func (tc *testClient) ageGauge(t *testing.T) (float64, bool) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tc.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if g, ok := m.Data.(metricdata.Gauge[float64]); ok && m.Name == "mcrib_client_map_age_seconds" && len(g.DataPoints) == 1 {
				return g.DataPoints[0].Value, true
			}
		}
	}
	return 0, false
}

// TestMapFreshness: a map's age counts from its reading's ReadAt by the
// client's clock; a reading of the same map moves it on (never back), one
// without a ReadAt (age unknown) counts as FreshFor old, and the gauge
// mcrib_client_map_age_seconds shows the age.
func TestMapFreshness(t *testing.T) {
	tc := newTestClient(t, Options{})
	t0 := tc.clock.Now()
	if _, ok := tc.MapAge(); ok || tc.MapFresh() {
		t.Fatal("MapAge or MapFresh without a map")
	}
	if _, ok := tc.ageGauge(t); ok {
		t.Fatal("the map-age gauge has a point without a map")
	}
	m := phaseMap(t, 2, 4, []string{"a", "b"}, "", "", t0, time.Time{})
	if err := tc.TakeReading(cachenodes.SlotMapReading{Map: m, ReadAt: t0.Add(-2 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	check := func(what string, want time.Duration) {
		t.Helper()
		age, ok := tc.MapAge()
		if !ok || age != want || tc.MapFresh() != (want < cachenodes.FreshFor) {
			t.Errorf("%s: MapAge %v %v, MapFresh %v; want %v", what, age, ok, tc.MapFresh(), want)
		}
		if g, ok := tc.ageGauge(t); !ok || math.Abs(g-want.Seconds()) > 1e-9 {
			t.Errorf("%s: mcrib_client_map_age_seconds %v (%v), want %v", what, g, ok, want.Seconds())
		}
	}
	check("read 2 s before it was taken", 2*time.Second)
	tc.clock.Advance(8*time.Second - time.Nanosecond)
	check("just under FreshFor", cachenodes.FreshFor-time.Nanosecond)
	tc.clock.Advance(time.Nanosecond)
	check("FreshFor", cachenodes.FreshFor)

	// The same map read again: fresh again; an older reading of it, or
	// one without an age, changes nothing.
	if err := tc.TakeReading(cachenodes.SlotMapReading{Map: m, ReadAt: tc.clock.Now().Add(-time.Second)}); err != nil || tc.SlotMap() != m {
		t.Fatalf("the same map read again: %v", err)
	}
	check("read again", time.Second)
	tc.TakeReading(cachenodes.SlotMapReading{Map: m, ReadAt: tc.clock.Now().Add(-5 * time.Second)})
	tc.TakeReading(cachenodes.SlotMapReading{Map: m})
	check("an older reading and one of unknown age", time.Second)
	// An equal map (another copy) is the same map.
	same := phaseMap(t, 2, 4, []string{"a", "b"}, "", "", t0, time.Time{})
	tc.TakeReading(cachenodes.SlotMapReading{Map: same, ReadAt: tc.clock.Now()})
	if tc.SlotMap() != m {
		t.Error("an equal map of the same generation and revision was taken as a new one")
	}
	check("an equal copy read now", 0)
	// A reading from the future is read now.
	tc.TakeReading(cachenodes.SlotMapReading{Map: m, ReadAt: tc.clock.Now().Add(time.Hour)})
	check("a reading from the future", 0)

	// A higher revision of the same generation is taken; its age unknown:
	// not fresh.
	next := phaseMap(t, 2, 5, []string{"a", "b"}, "", "", t0, time.Time{})
	if err := tc.TakeReading(cachenodes.SlotMapReading{Map: next}); err != nil || tc.SlotMap() != next {
		t.Fatalf("revision 5 after 4: %v", err)
	}
	check("a new map of unknown age", cachenodes.FreshFor)
	// A lower revision, or generation, is refused and changes nothing.
	for _, older := range []*cachenodes.SlotMap{
		phaseMap(t, 2, 4, []string{"b", "a"}, "", "", t0, time.Time{}),
		phaseMap(t, 1, 9, []string{"b", "a"}, "", "", t0, time.Time{}),
	} {
		if err := tc.TakeReading(cachenodes.SlotMapReading{Map: older, ReadAt: tc.clock.Now()}); !errors.Is(err, ErrOlderGeneration) || tc.SlotMap() != next {
			t.Errorf("generation %d revision %d after 2/5: %v; want ErrOlderGeneration and nothing changed", older.Generation(), older.Revision(), err)
		}
	}
	check("after the older maps", cachenodes.FreshFor)
	if err := tc.TakeReading(cachenodes.SlotMapReading{}); err == nil {
		t.Error("a reading without a map was taken")
	}
	// SetSlotMap counts the map as read now.
	if err := tc.SetSlotMap(phaseMap(t, 3, 6, []string{"b", "a"}, "", "", t0, time.Time{})); err != nil {
		t.Fatal(err)
	}
	check("SetSlotMap", 0)
}

// TestRunTakesReadings: Run gives the client every reading of its source;
// a map read with no age is taken but not fresh.
func TestRunTakesReadings(t *testing.T) {
	src := &fakeSource{m: slotMap(t, 1, []string{"a"}), delivered: make(chan struct{})}
	tc := newTestClient(t, Options{Source: src})
	src.readAt = tc.clock.Now().Add(-3 * time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); tc.Run(ctx) }()
	<-src.delivered
	cancel()
	<-done
	if age, ok := tc.MapAge(); !ok || age != 3*time.Second || tc.SlotMap() != src.m {
		t.Fatalf("after Run: map %p age %v %v; want the source's map, 3 s old", tc.SlotMap(), age, ok)
	}
}

// TestWarmFillTiming: a warm fill is sent within FillWithin of its read of
// the old holder and while the map is fresh, else it is dropped (the value
// read is answered); a copy the old holder no longer holds as it was is
// undone with a tombstone, never a delete.
func TestWarmFillTiming(t *testing.T) {
	for _, tt := range []struct {
		name   string
		before time.Duration // of the map's age, when the Get begins
		during time.Duration // between the old holder's read and the add
		wantB  string        // what the new holder holds afterwards
	}{
		{"in time", 0, 0, "old"},
		{"just in time", 0, cachenodes.FillWithin - time.Nanosecond, "old"},
		{"FillWithin after the read", 0, cachenodes.FillWithin, ""},
		{"the map goes stale after the read", cachenodes.FreshFor - 500*time.Millisecond, 600 * time.Millisecond, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pb := newPhaseBed(t, warming)
			put(pb.a, pb.k, "old")
			pb.clock.Advance(tt.before)
			pb.a.afterGet = func(string) {
				pb.a.afterGet = nil
				pb.clock.Advance(tt.during)
			}
			it, err := pb.Get(pb.k)
			if err != nil || string(it.Value) != "old" || holds(pb.b, pb.k) != tt.wantB {
				t.Errorf("Get %v %v, new holder %q; want the value read, and %q", it, err, holds(pb.b, pb.k), tt.wantB)
			}
		})
	}

	// The old holder's value changed between the copy's read and its
	// check (another client's set; its set of the new holder comes later):
	// the copy is undone with a tombstone.
	pb := newPhaseBed(t, warming)
	put(pb.a, pb.k, "old")
	pb.b.afterAdd = func(key string) {
		pb.b.afterAdd = nil
		put(pb.a, key, "newer")
	}
	if it, err := pb.Get(pb.k); err == nil {
		t.Fatalf("Get whose copy's check found another value: %q, want a miss", it.Value)
	}
	if holds(pb.b, pb.k) != "tombstone" || len(pb.b.deletes) != 0 {
		t.Fatalf("the copy found stale left %q (deletes %v) in the new holder, want a tombstone and no delete", holds(pb.b, pb.k), pb.b.deletes)
	}
	// An undo that does not reach the new holder is queued, as a tombstone.
	pb = newPhaseBed(t, warming)
	put(pb.a, pb.k, "old")
	pb.b.afterAdd = func(key string) {
		pb.b.afterAdd = nil
		pb.a.Delete(key)
		pb.b.setDown(true)
	}
	pb.Get(pb.k)
	pb.b.setDown(false)
	if n := pb.QueueLen("b"); n != 1 {
		t.Fatalf("an undo that failed queued %d, want 1", n)
	}
	pb.clock.Advance(DefaultRetryMax)
	pb.Replay()
	if holds(pb.b, pb.k) != "tombstone" {
		t.Fatalf("the undo's replay left %q, want a tombstone", holds(pb.b, pb.k))
	}
	if _, err := pb.Get(pb.k); !errors.Is(err, memcache.ErrCacheMiss) {
		t.Fatalf("Get after the undo: %v, want a miss", err)
	}
}
