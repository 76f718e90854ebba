package controlloop

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/hitrate"
	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/ratelimit"
)

// docStore is a ratelimit.DocumentStore in memory.
type docStore struct {
	mu     sync.Mutex
	raw    []byte
	modify uint64
}

func (d *docStore) Key() string { return "mcrib/p/bootlimit" }

func (d *docStore) Load(context.Context) (ratelimit.Snapshot, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	snap := ratelimit.Snapshot{LastIndex: d.modify}
	if d.raw == nil {
		return snap, nil
	}
	snap.Found, snap.ModifyIndex = true, d.modify
	doc, err := ratelimit.ParseDocument(d.raw)
	snap.Doc = doc
	return snap, err
}

func (d *docStore) CAS(_ context.Context, doc ratelimit.Document, index uint64) (bool, error) {
	b, err := json.Marshal(doc)
	if err != nil {
		return false, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if index != d.modify {
		return false, nil
	}
	d.modify++
	d.raw = b
	return true, nil
}

// cacheAside is a cache-aside load of 1,000 gets a second on every slot,
// played on the fake prober's counters: a node that holds all of a slot's
// keys serves 95% of its gets (the rest were invalidated by writes); a
// node placed into a slot starts empty (its placement flushed it) and
// fills as the slot is read: each second a fifth of what it lacks. While a
// slot warms, its new holder's misses go to the warm source, which keeps
// what it had: a hit there is copied into the new holder and read again
// (mcclient's re-check), a hit for the application.
type cacheAside struct {
	w      *world
	fill   map[string]float64 // node ID → share of its slot's keys it holds
	slotOf map[string]int     // node ID → slot it held in the last second
	hits   map[string]uint64
	misses map[string]uint64
	// apps counts what the applications saw in the last second.
	appHits, appGets float64
}

const (
	loadGets   = 1000.0
	loadSteady = 0.95
	loadRefill = 0.2
)

func newCacheAside(w *world) *cacheAside {
	l := &cacheAside{w: w, fill: map[string]float64{}, slotOf: map[string]int{}, hits: map[string]uint64{}, misses: map[string]uint64{}}
	for i, n := range w.loop.SlotMap().Slots() {
		l.fill[n.ID], l.slotOf[n.ID] = 1, i
	}
	return l
}

// second plays one second of load on the current map.
func (l *cacheAside) second() {
	m := l.w.loop.SlotMap()
	l.appHits, l.appGets = 0, 0
	held := map[string]int{}
	for i, n := range m.Slots() {
		if n.IsZero() {
			continue
		}
		held[n.ID] = i
		if s, ok := l.slotOf[n.ID]; !ok || s != i {
			l.fill[n.ID] = 0 // placed: flushed first
		}
		fromHolder := loadGets * loadSteady * l.fill[n.ID]
		hits := fromHolder
		missed := loadGets - fromHolder
		if ws := m.Warming(i); ws != nil {
			// Forwarded to the warm source: it answers what it holds and
			// the new holder lacks; each answer is read twice.
			fromSource := math.Max(0, loadGets*loadSteady*l.fill[ws.NodeID]-fromHolder)
			l.hits[ws.NodeID] += uint64(2 * fromSource)
			l.misses[ws.NodeID] += uint64(missed - fromSource)
			hits += fromSource
		}
		l.hits[n.ID] += uint64(fromHolder)
		l.misses[n.ID] += uint64(missed)
		l.appHits += hits
		l.appGets += loadGets
		l.fill[n.ID] += (1 - l.fill[n.ID]) * loadRefill
		if m.Warming(i) != nil {
			// The copies fill the new holder as fast as the misses do.
			l.fill[n.ID] += (1 - l.fill[n.ID]) * loadRefill
		}
	}
	l.slotOf = held
	for id := range l.hits {
		l.w.prober.setCounters(cacheNode(id).Addr, l.hits[id], l.misses[id])
	}
}

// flushZone empties the nodes of zone, as a memcached restart that keeps
// the pid would (no planned move: the slots keep their holders).
func (l *cacheAside) flushZone(zone string) {
	for id := range l.fill {
		if cacheNode(id).AZ == zone {
			l.fill[id] = 0
		}
	}
}

// limiterRun is a boot limiter over the loop's hit counters, with the real
// controller in auto mode, ticking every second (--stats-interval 1s).
type limiterRun struct {
	svc *ratelimit.Service
}

func newLimiterRun(t *testing.T, w *world) *limiterRun {
	t.Helper()
	svc, err := ratelimit.NewService(ratelimit.ServiceOptions{
		Store:  &docStore{},
		Config: ratelimit.ControllerConfig{Floor: 10, Ceiling: 1000, Low: 0.8, Target: 0.9, Interval: time.Second},
		Clock:  w.clk,
		Stats:  w.loop.HitCounters,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &limiterRun{svc: svc}
}

func (r *limiterRun) tick(w *world) float64 {
	nodes, slots := w.loop.HitCounters(context.Background())
	r.svc.Tick(context.Background(), w.clk.Now(), nodes, slots)
	return r.svc.Document().Limit
}

// TestBootLimitHeldThroughADrainUnderLoad drains a zone under a
// cache-aside load with the boot limiter's real controller in auto mode,
// then undrains it: the limit stays where it was before the drain through
// the drain and the return, warm and cold, while a
// fall of the hit rate of slots no planned move touched still cuts it.
// The pool's hit rate is what the applications see.
func TestBootLimitHeldThroughADrainUnderLoad(t *testing.T) {
	for _, warmFor := range []time.Duration{20 * time.Second, 0} {
		t.Run(fmt.Sprintf("warm for %s", warmFor), func(t *testing.T) {
			w := leadingWorld(t, []string{"a1", "b1", "c1", "a2", "b2", "c2", "a3", "b3", "c3"}, "a4", "a5", "c4", "c5")
			w.loop.opts.WarmFor = warmFor
			load := newCacheAside(w)
			lim := newLimiterRun(t, w)
			step := func() (limit float64) {
				w.clk.Advance(time.Second)
				load.second()
				w.probe()
				w.pass(mcribapi.OutcomeOK)
				return lim.tick(w)
			}
			for range 10 {
				step()
			}
			before := lim.svc.Document().Limit
			if rate, ok := lim.svc.HitRate(); !ok || math.Abs(rate-loadSteady) > 0.01 {
				t.Fatalf("steady hit rate %v (known %v), want %v", rate, ok, loadSteady)
			}
			w.drain("az-b", 100, 33, 10*time.Second)
			lowest, lowestRate, lowestApp, lowestZone := before, 1.0, 1.0, 1.0
			for range 90 {
				lowest = min(lowest, step())
				rate, _ := lim.svc.HitRate()
				lowestRate = min(lowestRate, rate)
				lowestApp = min(lowestApp, load.appHits/load.appGets)
				for _, z := range w.loop.Status().Zones {
					if z.HitRate != nil && z.Zone != "az-b" {
						lowestZone = min(lowestZone, *z.HitRate)
					}
				}
			}
			if e := w.entry("az-b"); e == nil || e.State != mcribapi.DrainDrained {
				t.Fatalf("zone b not drained after 90 s: %+v", e)
			}
			t.Logf("boot limit %v before the drain, lowest %v during it; lowest hit rate %.3f (the applications': %.3f)", before, lowest, lowestRate, lowestApp)
			if lowest != before {
				t.Errorf("the drain cut the boot limit from %v to %v", before, lowest)
			}
			if warmFor > 0 && lowestRate < lowestApp-0.02 {
				t.Errorf("the pool's hit rate fell to %.3f during the warm drain, the applications' only to %.3f", lowestRate, lowestApp)
			}
			if warmFor > 0 && lowestZone < lowestApp-0.02 {
				t.Errorf("the hit rate of a zone taking zone b's slots fell to %.3f during the warm drain, the applications' only to %.3f", lowestZone, lowestApp)
			}
			// The undrain's return steps are planned moves too: the limit
			// holds while zone b gets its slots back.
			if _, err := w.loop.Undrain(context.Background(), "az-b"); err != nil {
				t.Fatal(err)
			}
			lowestBack := before
			for range 120 {
				lowestBack = min(lowestBack, step())
			}
			if e := w.entry("az-b"); e != nil {
				t.Fatalf("zone b not back at its baseline 120 s after the undrain: %+v", e)
			}
			t.Logf("lowest boot limit %v through the return", lowestBack)
			if lowestBack != before {
				t.Errorf("the return cut the boot limit from %v to %v", before, lowestBack)
			}
			// A fall of the other slots' hit rate still cuts the limit.
			load.flushZone("az-a")
			cut := before
			for range 5 {
				cut = min(cut, step())
			}
			if cut >= before {
				t.Errorf("zone a's slots went cold, no planned move, and the limit stayed at %v", cut)
			}
		})
	}
}

// TestHitCountersMarkPlannedMoves: a warm replace marks the slot's new
// holder Planned and gives its warm source's counters, marked as its warm
// source; when the warming ends the source leaves the reading and the
// holder stays marked for the settle time (three probe intervals), on the
// leader and on a follower alike. A replacement of a holder that stopped
// answering is no planned move.
func TestHitCountersMarkPlannedMoves(t *testing.T) {
	w := leadingWorld(t, []string{"a1", "b1", "c1"}, "b2", "c2")
	w.loop.opts.WarmFor = 10 * time.Second
	f := w.sibling()
	if _, err := w.loop.Replace(context.Background(), "b1", "retire it", "ops"); err != nil {
		t.Fatal(err)
	}
	w.serve()
	w.probe()
	f.pass(mcribapi.OutcomeFollower)
	f.probe()
	for _, l := range []*world{w, f} {
		got, _ := l.loop.HitCounters(context.Background())
		if c := got["b2"]; !c.Planned || c.WarmSourceOf != "" {
			t.Errorf("the new holder b2: %+v, want Planned", c)
		}
		if c, ok := got["b1"]; !ok || c.WarmSourceOf != "b2" || !c.Planned {
			t.Errorf("the warm source b1: %+v (listed %v), want its counters, warm source of b2", c, ok)
		}
		if got["a1"].Planned || got["c1"].Planned {
			t.Errorf("slots no move touched are marked: %+v", got)
		}
	}
	// The warming's reads end at its until; its object goes 12 s later.
	w.clk.Advance(10*time.Second + cachenodes.WarmWriteGrace)
	w.probe()
	w.pass(mcribapi.OutcomeOK)
	f.probe()
	f.pass(mcribapi.OutcomeFollower)
	for _, l := range []*world{w, f} {
		got, _ := l.loop.HitCounters(context.Background())
		if _, ok := got["b1"]; ok {
			t.Errorf("b1 still counted after its warming object went: %+v", got)
		}
		if !got["b2"].Planned {
			t.Errorf("b2 not marked right after its warming ended: %+v", got["b2"])
		}
	}
	w.clk.Advance(3 * time.Second)
	for _, l := range []*world{w, f} {
		if got, _ := l.loop.HitCounters(context.Background()); got["b2"].Planned {
			t.Errorf("b2 still marked three probe intervals after its warming ended")
		}
	}

	// c1 stops answering and leaves Consul: its hold ends, c2 takes its
	// slot. No plan: not marked.
	w.away("c1")
	w.answer("a1", "b1", "b2", "c2")
	for range 61 {
		w.clk.Advance(time.Second)
		w.probe()
		w.pass(mcribapi.OutcomeOK)
	}
	if m := w.loop.SlotMap(); m.Slot(2).ID != "c2" {
		t.Fatalf("c1 not replaced: %v", slotIDs(m))
	}
	if got, _ := w.loop.HitCounters(context.Background()); got["c2"].Planned {
		t.Errorf("a replacement of a holder that stopped answering is marked as a planned move")
	}
}

// TestSplitHitRateAsApplicationsSeeIt (finding 5 of issue 26): while a
// split warms, slot s's holder serves slot s and is the warm source of
// the twin's new holder; a get of the twin that misses the new holder and
// hits slot s's holder is one get and one hit for the applications. With
// every get a hit, the pool's hit rate and the zone's are 1.00 (they read
// 0.50 when the forwarded get counted as a miss of the new holder and a
// hit of the source).
func TestSplitHitRateAsApplicationsSeeIt(t *testing.T) {
	w := leadingWorld(t, []string{"a1", "b1"}, "a2", "b2")
	w.loop.opts.WarmFor = time.Hour
	if _, err := w.resize(4, 100, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	w.after(10 * time.Second)
	w.serve()
	m, _ := w.store.stored()
	if m.NumTwins() != 0 || m.Warming(2) == nil || m.Warming(2).NodeID != "a1" || m.Slot(2).AZ != "az-a" {
		t.Fatalf("slots %v, warming of slot 2 %+v: want the twin of a1's slot split to zone a, warm from a1", slotIDs(m), m.Warming(2))
	}
	// a1 has 1000 gets of its slot 0 a round and 1000 forwarded by slot
	// 2's new holder, which misses them all: every one a hit for the
	// applications. b1 and its twin's new holder hit all theirs.
	var meter hitrate.Meter
	var rate float64
	for i := range uint64(3) {
		w.prober.setCounters(cacheNode("a1").Addr, 2000*i, 0)
		w.prober.setCounters(cacheNode(m.Slot(2).ID).Addr, 0, 1000*i)
		w.prober.setCounters(cacheNode("b1").Addr, 1000*i, 0)
		w.prober.setCounters(cacheNode(m.Slot(3).ID).Addr, 1000*i, 0)
		w.clk.Advance(5 * time.Second)
		w.probe()
		got, slots := w.loop.HitCounters(context.Background())
		rate, _ = meter.Observe(w.clk.Now(), got, slots)
	}
	if math.Abs(rate-1) > 1e-9 {
		t.Errorf("pool hit rate %.4f during the split, want 1.00 as applications see it", rate)
	}
	for _, z := range w.loop.Status().Zones {
		if z.Zone == "az-a" && (z.HitRate == nil || math.Abs(*z.HitRate-1) > 1e-9) {
			t.Errorf("zone az-a hit rate %v during the split, want 1.00", ptrText(z.HitRate))
		}
	}
}

// ptrText is *f as text, "unknown" when nil.
func ptrText(f *float64) string {
	if f == nil {
		return "unknown"
	}
	return fmt.Sprintf("%.4f", *f)
}
