package ratelimit

import (
	"strings"
	"testing"
	"time"
)

// heldAt40 is a controller at the ceiling that saw 0.97 at interval 1
// and, at interval 2, a boot surge slowed to 40 boots/s whose reading fell
// fast to 0.91: at or above the target 0.90.
func heldAt40(t *testing.T) *Controller {
	t.Helper()
	ctrl := NewController(testConfig, autoDoc(1000, t0))
	ctrl.Observe(at(1), 0.97)
	d, v := ctrl.ObserveSurge(at(2), 0.96, 0.91, 40)
	want := "boot surge held at 40 boots/s: hit rate fell from 0.97 to 0.91 within 10s, at or above target 0.90: the limit stays at 1000"
	if v != SurgeHeld || d.Changed || d.Limit != 1000 || d.AutoLimit != 1000 || d.HeldSurge != 40 || d.Reason != want {
		t.Fatalf("a fast fall at or above the target: %+v verdict %v; want the limit of 1000 kept, the surge held at 40, %q", d, v, want)
	}
	if ctrl.Document().Limit != 1000 || ctrl.HeldSurge() != 40 {
		t.Fatalf("document %+v, held %v", ctrl.Document(), ctrl.HeldSurge())
	}
	return ctrl
}

// TestHeldSurgeRampsAsACutLimitWould: the limit is never cut at or above
// the target, and the surge held in its stead rises on the controller's
// raise schedule (a raise every raise wait, each at most doubling), on
// readings that stay below the rate before the surge: the same levels a
// limit cut to 40 would have reached, so holding the surge does not slow
// the recovery.
func TestHeldSurgeRampsAsACutLimitWould(t *testing.T) {
	ctrl := heldAt40(t)
	cut := NewController(testConfig, autoDoc(40, at(2)))
	rates := []float64{0.93, 0.92, 0.91, 0.92, 0.93, 0.92, 0.94, 0.93, 0.95, 0.94, 0.95, 0.96, 0.95, 0.96}
	for len(rates) < 60 {
		rates = append(rates, 0.97)
	}
	var levels []float64
	for i, h := range rates {
		n := 3 + i
		d := ctrl.Observe(at(n), h)
		c := cut.Observe(at(n), h)
		if d.Changed || d.Limit != 1000 {
			t.Fatalf("interval %d, hit rate %v: %+v; want the limit of 1000 untouched", n, h, d)
		}
		if d.HeldSurge == 0 {
			if c.Limit < 1000 || !strings.HasSuffix(d.Reason, ": the boot surge is over") {
				t.Fatalf("interval %d: the surge ended (%q) with a cut limit at %v", n, d.Reason, c.Limit)
			}
			break
		}
		if d.HeldSurge != c.Limit {
			t.Fatalf("interval %d, hit rate %v: held at %v, a limit cut to 40 at %v", n, h, d.HeldSurge, c.Limit)
		}
		levels = append(levels, d.HeldSurge)
	}
	want := []float64{40, 40, 80, 80, 80, 160, 160, 160, 260, 260, 260, 360, 360, 360, 460}
	if len(levels) < len(want) || !equalFloats(levels[:len(want)], want) {
		t.Fatalf("held levels %v, want them to start %v", levels, want)
	}
	if ctrl.HeldSurge() != 0 {
		t.Fatalf("the surge still held at %v after reaching the limit", ctrl.HeldSurge())
	}
}

// TestHeldSurgeHandsOverBelowTheTarget: the first rate below the target
// while a surge is held may cut: the limit starts from the held level.
func TestHeldSurgeHandsOverBelowTheTarget(t *testing.T) {
	for _, tc := range []struct {
		name  string
		hit   float64
		limit float64
		says  string
	}{
		{"a slow fall", 0.89, 40, "hit rate 0.89 fell below target 0.90 while a boot surge was held at 40 boots/s: the limit starts from there: hit rate 0.89 between 0.80 and 0.90: holding at 40"},
		{"a collapse", 0.85, 10, "hit rate 0.85 fell below target 0.90 while a boot surge was held at 40 boots/s: the limit starts from there: hit rate fell from 0.91 to 0.85 within 10s: cut from 40 to the floor of 10"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctrl := heldAt40(t)
			d := ctrl.Observe(at(3), tc.hit)
			if !d.Changed || d.Limit != tc.limit || d.AutoLimit != tc.limit || d.HeldSurge != 0 || d.Reason != tc.says {
				t.Fatalf("got %+v, want limit %v, %q", d, tc.limit, tc.says)
			}
			if doc := ctrl.Document(); doc.Limit != tc.limit || doc.Burst != DefaultBurst(tc.limit) || doc.Reason != tc.says || !doc.UpdatedAt.Equal(at(3)) {
				t.Fatalf("document %+v", doc)
			}
		})
	}
}

// TestHeldSurgeEndsOnAnotherDocument: an operator's setting or another
// leader's document ends the held surge: its limit is admitted as it is.
func TestHeldSurgeEndsOnAnotherDocument(t *testing.T) {
	ctrl := heldAt40(t)
	ctrl.Adopt(ctrl.Document(), at(2))
	if ctrl.HeldSurge() != 40 {
		t.Fatalf("adopting its own document ended the held surge")
	}
	ctrl.Adopt(autoDoc(700, at(3)), at(3))
	if ctrl.HeldSurge() != 0 {
		t.Fatalf("held at %v after another document, want none", ctrl.HeldSurge())
	}
	if d := ctrl.Observe(at(4), 0.95); d.HeldSurge != 0 || d.Limit != 700 {
		t.Fatalf("after another document: %+v", d)
	}
}

// TestLimiterHoldsASurgeAtOrAboveTheTarget: the whole pipeline. A boot
// surge whose reading fell fast but stays at or above the target keeps
// the document's limit and is held: the slow start admits at the held
// level, the document says so, and the level rises after the raise wait.
func TestLimiterHoldsASurgeAtOrAboveTheTarget(t *testing.T) {
	lim := NewLimiter(testConfig, autoDoc(1000, t0))
	lim.Lead()
	g := &gets{stepHits: 970, stepMisses: 30}
	lim.Observe(at(0), g.next(), Slots{})
	lim.Observe(at(1), g.next(), Slots{})
	lim.Observe(at(2), g.next(), Slots{})
	admit := func(from time.Time, n int) int {
		ok := 0
		for k := range n {
			if a, _ := lim.Admit(from.Add(time.Duration(k) * time.Second / time.Duration(n))); a {
				ok++
			}
		}
		return ok
	}
	admit(at(2).Add(time.Millisecond), 2000) // a surge: 10, 20, then 40 boots/s
	g.stepHits, g.stepMisses = 910, 90
	r := lim.Observe(at(3), g.next(), Slots{})
	if raw, _ := lim.input.Interval(); raw != 0.91 || !r.InputKnown {
		t.Fatalf("reading %+v, interval %v: want 0.91", r, raw)
	}
	doc := lim.Document(at(3))
	if doc.Limit != 1000 || !doc.SlowStart || doc.EffectiveLimit != 40 || lim.Limit(at(3)) != 40 ||
		!strings.HasPrefix(doc.Reason, "boot surge: held at 40 boots/s, rising while the hit rate stays at or above the target; ") {
		t.Fatalf("after the reading: %+v, limit in force %v; want the limit of 1000 kept and the surge held at 40", doc, lim.Limit(at(3)))
	}
	if got := admit(at(3).Add(time.Millisecond), 2000); got < 40 || got > 45 {
		t.Fatalf("%d boots admitted in the second after the hold, want 40 (and a burst of 4)", got)
	}
	lim.Observe(at(4), g.next(), Slots{})
	lim.Observe(at(5), g.next(), Slots{})
	if l := lim.Limit(at(5)); l != 40 {
		t.Fatalf("limit in force %v inside the raise wait, want 40", l)
	}
	lim.Observe(at(6), g.next(), Slots{})
	if l, d := lim.Limit(at(6)), lim.Document(at(6)); l != 80 || d.Limit != 1000 {
		t.Fatalf("after the raise wait: limit in force %v, document %v; want 80 and 1000", l, d.Limit)
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSlowStartHoldsAJudgedSurge: the reading that judges a surge keeps it
// capped at its level until the controller's verdict (Hold): a level
// holds it there, without the unjudged release and without being judged
// again; 0 ends it. A verdict that never comes ends it at the next
// reading, and Hold leaves a surge not yet judged alone.
func TestSlowStartHoldsAJudgedSurge(t *testing.T) {
	s := quietSlowStart(0)
	start := at(1).Add(time.Millisecond)
	s.Hold(80) // no surge: nothing to hold
	if _, on := s.State(start); on {
		t.Fatal("Hold began a surge")
	}
	flood(s, start, 2000, time.Second, 0)
	s.Hold(0) // a surge not judged yet is left alone
	if a, on := s.State(start.Add(time.Second)); !on || s.Held() || a != 10 {
		t.Fatalf("a surge not yet judged after Hold(0): allowance %v, on %v, held %v; want 10, on, not held", a, on, s.Held())
	}
	level, judge := s.Reading(at(2), true)
	if !judge || level != 40 || !s.Held() {
		t.Fatalf("the judging reading: %v %v, held %v", level, judge, s.Held())
	}
	s.Hold(40)
	// Held past the unjudged release, and not judged again.
	for n := 3; n <= 2+SlowStartUnjudged; n++ {
		if _, judge := s.Reading(at(n), true); judge {
			t.Fatalf("reading %d judged a held surge again", n)
		}
	}
	end := at(2 + SlowStartUnjudged).Add(time.Millisecond)
	if a, on := s.State(end); !on || a != 40 {
		t.Fatalf("a held surge after %d intervals: allowance %v, on %v; want 40", SlowStartUnjudged, a, on)
	}
	if got := flood(s, end, 2000, time.Second, 0); got[0] < 40 || got[0] > 45 {
		t.Fatalf("%d boots passed a surge held at 40 in a second", got[0])
	}
	s.Hold(80)
	if a, _ := s.State(end.Add(time.Second)); a != 80 {
		t.Fatalf("raised to 80: allowance %v", a)
	}
	s.Hold(0)
	if _, on := s.State(end.Add(time.Second)); on {
		t.Fatal("Hold(0) did not end the held surge")
	}
	if got := flood(s, end.Add(time.Second), 2000, time.Second, 0); got[0] != 2000 {
		t.Fatalf("after the end: %d of 2000 boots passed before the next reading, want all", got[0])
	}

	// A judged surge whose verdict never comes ends at the next reading.
	s = quietSlowStart(0)
	flood(s, start, 2000, time.Second, 0)
	if _, judge := s.Reading(at(2), true); !judge {
		t.Fatal("no judging reading")
	}
	if _, on := s.State(at(2).Add(time.Second)); !on {
		t.Fatal("the judged surge was released before its verdict")
	}
	s.Reading(at(3), true)
	if _, on := s.State(at(3)); on || s.Held() {
		t.Fatal("a judged surge without a verdict outlived the next reading")
	}
}
