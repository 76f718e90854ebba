package ratelimit

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"
)

// interval is one stats interval of TestLimiterDecidesAsServiceTick:
// boots requests spread over it, then a reading in which the slot holder
// a and the slot b each count 1000 gets at the hit rates given; b is
// marked Planned (a planned move's slot) when planned is set.
type interval struct {
	boots   int
	a, b    float64
	planned bool
}

// TestLimiterDecidesAsServiceTick: a Limiter driven by Observe and Admit,
// as the simulator drives it, and a Service driven by Tick and Admit over
// its store, as mcrib serve's leader is, given the same readings and the
// same boots, admit the same boots and show the same document at every
// interval, through a planned move, a cold start's boot surge, its cuts
// and the raises after it.
func TestLimiterDecidesAsServiceTick(t *testing.T) {
	cfg := testConfig
	var intervals []interval
	for range 4 {
		intervals = append(intervals, interval{boots: 100, a: 0.97, b: 0.97})
	}
	for range 3 { // a planned move makes b cold: the limit holds
		intervals = append(intervals, interval{boots: 100, a: 0.97, b: 0.1, planned: true})
	}
	for range 3 { // a cold start: every client boots at once
		intervals = append(intervals, interval{boots: 10000, a: 0.5, b: 0.5})
	}
	for _, h := range []float64{0.7, 0.85, 0.92, 0.95, 0.96, 0.97, 0.97, 0.97, 0.97, 0.97, 0.97, 0.97} {
		intervals = append(intervals, interval{boots: 500, a: h, b: h})
	}

	svc := newStepped(t, cfg)
	svc.leading.Store(true)
	if err := svc.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	lim := NewLimiter(cfg, InitialDocument(cfg, t0))
	lim.Lead()

	var ca, cb Counters
	ca.PID, cb.PID, ca.Uptime, cb.Uptime = 1, 2, time.Hour, time.Hour
	count := func(c *Counters, h float64) {
		c.Hits += uint64(1000 * h)
		c.Misses += 1000 - uint64(1000*h)
	}
	limits := map[float64]bool{}
	surged := false
	for i, iv := range append([]interval{{}}, intervals...) {
		start := svc.clk.Now()
		for k := range iv.boots {
			at := start.Add(time.Duration(k) * cfg.Interval / time.Duration(iv.boots))
			svc.clk.Set(at)
			okS, retryS := svc.Admit()
			okL, retryL := lim.Admit(at)
			if okS != okL || retryS != retryL {
				t.Fatalf("interval %d, boot %d: the Service answered %v %v, the Limiter %v %v", i, k, okS, retryS, okL, retryL)
			}
		}
		// Between readings, the slow start shows in the documents.
		ds, dl := svc.Document(), lim.Document(svc.clk.Now())
		js, _ := json.Marshal(ds)
		jl, _ := json.Marshal(dl)
		if string(js) != string(jl) {
			t.Fatalf("interval %d, after the boots: the Service shows\n%s\nthe Limiter\n%s", i, js, jl)
		}
		surged = surged || dl.SlowStart

		svc.clk.Set(start.Add(cfg.Interval))
		now := svc.clk.Now()
		count(&ca, iv.a)
		count(&cb, iv.b)
		b := cb
		b.Planned = iv.planned
		reading := map[string]Counters{"a": ca, "b": b}
		svc.Tick(context.Background(), now, reading, Slots{})
		lim.Observe(now, reading, Slots{})

		ds, dl = svc.Document(), lim.Document(now)
		js, _ = json.Marshal(ds)
		jl, _ = json.Marshal(dl)
		if string(js) != string(jl) {
			t.Fatalf("interval %d: the Service shows\n%s\nthe Limiter\n%s", i, js, jl)
		}
		if got := lim.Limit(now); dl.SlowStart && got != dl.EffectiveLimit || !dl.SlowStart && got != dl.Limit {
			t.Fatalf("interval %d: Limit %v, document %s", i, got, jl)
		}
		limits[dl.Limit] = true
		if iv.planned && dl.Limit != cfg.Ceiling {
			t.Fatalf("interval %d: a planned move moved the limit: %s", i, jl)
		}
	}
	// The run is not trivial: the surge was slowed, then cut and raised.
	if !surged || len(limits) < 4 {
		t.Fatalf("limits %v, a slow start seen %v: the run moved too little to compare", limits, surged)
	}
}

// TestLimiterEnforcesAStepOnceKeptAndAdopted: Decide tries the
// controller's step on a copy and enforces nothing; a document adopted
// meanwhile (another writer's) makes the proposal stale, and the step
// decided again starts from it.
func TestLimiterEnforcesAStepOnceKeptAndAdopted(t *testing.T) {
	lim := NewLimiter(testConfig, autoDoc(1000, t0))
	lim.Lead()
	g := &gets{stepHits: 970, stepMisses: 30}
	lim.Observe(at(1), g.next(), Slots{}) // a baseline
	if r := lim.Observe(at(2), g.next(), Slots{}); !r.Known || r.HitRate != 0.97 {
		t.Fatalf("reading %+v, want 0.97", r)
	}
	// The cache goes cold: a collapse, straight to the floor.
	g.stepHits, g.stepMisses = 500, 500
	r := lim.Measure(at(3), g.next(), Slots{})
	p, ok := lim.Decide(r)
	if !ok || !p.Decision.Changed || p.Document.Limit != testConfig.Floor {
		t.Fatalf("decision on a collapse %+v (ok %v), want a cut to the floor", p.Decision, ok)
	}
	if l := lim.Limit(at(3)); l != 1000 {
		t.Fatalf("limit %v before the step was kept, want 1000", l)
	}
	if again, _ := lim.Decide(r); again.Document.Limit != p.Document.Limit || again.Decision.Reason != p.Decision.Reason {
		t.Fatalf("Decide changed the controller: %+v, then %+v", p.Decision, again.Decision)
	}
	// An operator's manual limit won the write.
	lim.Adopt(manualDoc(5, 1, 1000, at(3)), at(3))
	if lim.Keep(p) {
		t.Fatal("a proposal decided before another document was adopted was kept")
	}
	if l := lim.Limit(at(3)); l != 5 {
		t.Fatalf("limit %v after the manual document, want 5", l)
	}
	p, ok = lim.Decide(r)
	if !ok || p.Document.Mode != ModeManual || p.Document.Limit != 5 || p.Document.AutoLimit != testConfig.Floor {
		t.Fatalf("decision in manual mode %+v, want the operator's 5 and an auto limit at the floor", p.Document)
	}
	if !lim.Keep(p) {
		t.Fatal("a fresh proposal was not kept")
	}
	if lim.Keep(p) {
		t.Fatal("a proposal was kept twice")
	}
	lim.Adopt(p.Document, at(3))
	if d := lim.Adopted(); d.Limit != 5 || d.AutoLimit != testConfig.Floor {
		t.Fatalf("document in force %+v", d)
	}
}

// TestLimiterLeadAndFollow: only a Limiter that leads decides; Follow
// drops its controller and the proposals decided by it, and resets the
// slow start, so a flood right after it is no surge.
func TestLimiterLeadAndFollow(t *testing.T) {
	lim := NewLimiter(testConfig, autoDoc(1000, t0))
	g := &gets{stepHits: 970, stepMisses: 30}
	lim.Measure(at(1), g.next(), Slots{})
	if _, ok := lim.Decide(lim.Measure(at(2), g.next(), Slots{})); ok {
		t.Fatal("a Limiter that does not lead decided")
	}
	if !lim.Lead() || lim.Lead() {
		t.Fatal("Lead reports it started only the first time")
	}
	p, ok := lim.Decide(lim.Measure(at(3), g.next(), Slots{}))
	if !ok {
		t.Fatal("a leading Limiter did not decide")
	}
	if !lim.Follow() || lim.Follow() {
		t.Fatal("Follow reports it stopped only the first time")
	}
	if lim.Keep(p) {
		t.Fatal("a proposal of the controller Follow dropped was kept")
	}
	// Two readings with no admissions between them would measure an
	// admitted rate of 0, and a flood after them would be a surge; Follow
	// after each keeps the slow start reset.
	lim.Measure(at(4), g.next(), Slots{})
	lim.Follow()
	lim.Measure(at(5), g.next(), Slots{})
	lim.Follow()
	admitted := 0
	for k := range 200 {
		if ok, _ := lim.Admit(at(5).Add(time.Duration(k) * time.Millisecond)); ok {
			admitted++
		}
	}
	if admitted < 100 {
		t.Fatalf("%d of 200 boots admitted at a limit of 1000 (burst 100) after Follow, want at least the burst", admitted)
	}
}

// TestLimiterCountsTheUnservedSlots: a slot with no live holder counts as
// all misses for its share of the gets in the pool's hit rate and in the
// controller's input alike, and Slots says what the reading knew.
func TestLimiterCountsTheUnservedSlots(t *testing.T) {
	lim := NewLimiter(testConfig, autoDoc(1000, t0))
	g := &gets{stepHits: 900, stepMisses: 100}
	unserved := Slots{Total: 4, Unserved: 1}
	lim.Measure(at(1), g.next(), unserved) // a baseline
	r := lim.Measure(at(2), g.next(), unserved)
	// 900 hits of 1000 gets on 3 slots of 4: 900 / (1000 × 4/3).
	if !r.Known || !r.InputKnown || math.Abs(r.HitRate-0.675) > 1e-9 || math.Abs(r.Input-0.675) > 1e-9 {
		t.Fatalf("reading %+v, want a hit rate and an input of 0.675", r)
	}
	if rate, ok := lim.HitRate(); !ok || math.Abs(rate-0.675) > 1e-9 {
		t.Fatalf("HitRate() = %v, %v; want 0.675", rate, ok)
	}
	if s := lim.Slots(); s != unserved || r.Slots != unserved {
		t.Fatalf("Slots() = %+v, reading %+v; want %+v", s, r.Slots, unserved)
	}
}
