package controlloop

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/mcrib/mcrib/hitrate"
	"github.com/mcrib/mcrib/internal/leakcheck"
)

// TestHitCountersCountTheUnservedSlots: a slot holder unreachable by the
// pool's verdict leaves its slot with no live holder; the stats reading
// says so (hitrate.Slots), leaves its counters out, and the pool's and
// its zone's hit rates count its share of the gets as misses, as the
// database sees them, the slot the status counts in slots_unserved.
func TestHitCountersCountTheUnservedSlots(t *testing.T) {
	leakcheck.Check(t)
	w := threeZones(t) // 6 slots: a1, b1, c1, a2, b2, c2 in zones az-a, az-b, az-c
	holders := []string{"a1", "b1", "c1", "a2", "b2", "c2"}
	var meter hitrate.Meter
	read := func(round uint64) (map[string]hitrate.Counters, hitrate.Slots) {
		t.Helper()
		for _, id := range holders {
			w.prober.setCounters(cacheNode(id).Addr, 900*round, 100*round)
		}
		w.probe()
		got, slots := w.loop.HitCounters(context.Background())
		meter.Observe(w.clk.Now(), got, slots)
		return got, slots
	}
	read(0)
	w.clk.Advance(6 * time.Second)
	if _, slots := read(1); slots != (hitrate.Slots{Total: 6}) {
		t.Fatalf("every holder answering: %+v, want 6 slots, all served", slots)
	}

	w.away("b1") // 1 s
	if n := w.node("b1"); n.Reachable {
		t.Fatalf("b1 still reachable by the verdict after a probe interval away: %+v", n)
	}
	w.clk.Advance(5 * time.Second)
	got, slots := read(2)
	if slots != (hitrate.Slots{Total: 6, Unserved: 1}) {
		t.Fatalf("b1 unreachable: %+v, want 6 slots, 1 unserved, none unreadable", slots)
	}
	if _, ok := got["b1"]; ok {
		t.Fatalf("the unserved slot's holder b1 is among the counters: %v", got)
	}
	if st := w.loop.Status(); st.SlotsUnserved != 1 {
		t.Fatalf("status slots_unserved %d, want the 1 slot the hit rate counts", st.SlotsUnserved)
	}
	// 4500 hits of the 5000 gets read, 6000 gets in all: 0.75 this
	// interval, weighed 0.5 at the usual traffic.
	if r, ok := meter.Interval(); !ok || math.Abs(r-0.75) > 1e-9 {
		t.Fatalf("the interval's hit rate %v (ok %v), want 0.75: b1's share of the gets all misses", r, ok)
	}
	if r, _ := meter.HitRate(); math.Abs(r-0.825) > 1e-9 {
		t.Fatalf("pool hit rate %v, want 0.825", r)
	}
	// Zone az-b: b2's 900 hits of 1000 gets, b1's 1000 gets all misses.
	want := map[string]float64{"az-a": 0.9, "az-b": 0.9 + 0.5*(0.45-0.9), "az-c": 0.9}
	for _, z := range w.loop.Status().Zones {
		if wz, ok := want[z.Zone]; ok && (z.HitRate == nil || math.Abs(*z.HitRate-wz) > 1e-9) {
			t.Errorf("zone %s hit rate %s, want %.4f", z.Zone, ptrText(z.HitRate), wz)
		}
	}
}

// TestZoneWithNoSlotServedReadsZero: a zone none of whose slots has a live
// holder sends every get of its keys to the database: its interval's hit
// rate is 0, not unknown, while a zone whose holders only could not be
// read is unknown.
func TestZoneWithNoSlotServedReadsZero(t *testing.T) {
	leakcheck.Check(t)
	w := threeZones(t)
	holders := []string{"a1", "b1", "c1", "a2", "b2", "c2"}
	for round := range uint64(2) {
		for _, id := range holders {
			w.prober.setCounters(cacheNode(id).Addr, 900*round, 100*round)
		}
		w.probe()
		w.loop.HitCounters(context.Background())
		w.clk.Advance(5 * time.Second)
	}
	zoneB := func() *float64 {
		for _, z := range w.loop.Status().Zones {
			if z.Zone == "az-b" {
				return z.HitRate
			}
		}
		t.Fatal("no zone az-b in the status")
		return nil
	}
	// b1 and b2 stop answering: one failed probe leaves them reachable by
	// the verdict, unread: the zone's hit rate is unknown.
	w.prober.setDown(cacheNode("b1").Addr, true)
	w.prober.setDown(cacheNode("b2").Addr, true)
	w.probe()
	if _, slots := w.loop.HitCounters(context.Background()); slots != (hitrate.Slots{Total: 6, Unreadable: 2}) {
		t.Fatalf("zone az-b's holders unread: %+v, want 2 of 6 unreadable", slots)
	}
	if r := zoneB(); r != nil {
		t.Fatalf("zone az-b unread: hit rate %v, want unknown", *r)
	}
	// A probe interval later the verdict finds them unreachable.
	w.clk.Advance(time.Second)
	w.probe()
	if _, slots := w.loop.HitCounters(context.Background()); slots != (hitrate.Slots{Total: 6, Unserved: 2}) {
		t.Fatalf("zone az-b's holders unreachable: %+v, want 2 of 6 unserved", slots)
	}
	if r := zoneB(); r == nil || *r != 0.45 {
		t.Fatalf("zone az-b with no slot served: hit rate %s, want 0.45 (0.9 halved by a reading of 0)", ptrText(r))
	}
}
