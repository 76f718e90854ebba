package slotplan

import (
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
)

// history returns a warming that began at start, with one interval of
// every 5 s from start+e to end, each from fill(i) (its index from 0).
func history(start time.Time, e, until time.Duration, split bool, fill func(i int) WarmInterval) *WarmHistory {
	h := &WarmHistory{Start: start, Split: split}
	for i, at := 0, e; at+5*time.Second <= until; i, at = i+1, at+5*time.Second {
		iv := fill(i)
		iv.Start, iv.End = start.Add(at), start.Add(at+5*time.Second)
		h.Intervals = append(h.Intervals, iv)
	}
	return h
}

// gets is an interval in which B saw n gets, hit a fraction rate of them,
// and A had srcHits hits of srcGets.
func gets(n uint64, rate float64, srcGets, srcHits uint64) WarmInterval {
	return WarmInterval{HolderGets: n, HolderHits: uint64(float64(n) * rate), SourceGets: srcGets, SourceHits: srcHits}
}

// TestWarmRuleJudge: each clause of the convergence rule, with the time
// of the reads as input.
func TestWarmRuleJudge(t *testing.T) {
	rule := WarmRule{WarmMin: 30 * time.Second, StatsInterval: 5 * time.Second}
	start := assignNow
	warm := func(int) WarmInterval { return gets(10_000, 0.97, 150, 120) } // A's hits 1.2% of B's gets
	for _, tt := range []struct {
		name  string
		h     *WarmHistory
		want  bool
		quiet bool
		why   string
	}{
		{name: "no reading", h: &WarmHistory{Start: start}},
		{name: "the 2% rule holds over the window after --warm-min", h: history(start, 2*time.Second, 37*time.Second, false, warm), want: true, why: "at most 1.20% of the new holder's gets"},
		{name: "never before --warm-min", h: history(start, 2*time.Second, 27*time.Second, false, warm)},
		{name: "A's hits at 2% of B's gets: not converged", h: history(start, 2*time.Second, 60*time.Second, false, func(int) WarmInterval { return gets(10_000, 0.9, 400, 200) })},
		{name: "one interval of the window over 2%", h: history(start, 2*time.Second, 60*time.Second, false, func(i int) WarmInterval {
			if i == 9 {
				return gets(10_000, 0.9, 400, 300)
			}
			return warm(i)
		})},
		{name: "an interval over 2% before the window does not count", h: history(start, 2*time.Second, 60*time.Second, false, func(i int) WarmInterval {
			if i < 4 {
				return gets(10_000, 0.5, 6000, 5000)
			}
			return warm(i)
		}), want: true},
		{name: "a quiet slot converges at --warm-min", h: history(start, 2*time.Second, 32*time.Second, false, func(int) WarmInterval { return gets(40, 0.5, 20, 20) }), want: true, quiet: true, why: "under 100 gets"},
		{name: "a quiet slot not before --warm-min", h: history(start, 2*time.Second, 27*time.Second, false, func(int) WarmInterval { return gets(40, 0.5, 20, 20) })},
		{name: "a quiet interval passes beside warm ones", h: history(start, 2*time.Second, 42*time.Second, false, func(i int) WarmInterval {
			if i == 5 {
				return gets(99, 0.1, 90, 90)
			}
			return warm(i)
		}), want: true},
		{name: "a split within 0.02 of slot s", h: history(start, 2*time.Second, 37*time.Second, true, func(int) WarmInterval { return gets(10_000, 0.95, 20_000, 19_300) }), want: true, why: "95.0% against slot s's 96.5%"},
		{name: "a split warmer than slot s (a full cache split)", h: history(start, 2*time.Second, 37*time.Second, true, func(int) WarmInterval { return gets(10_000, 0.99, 20_000, 18_000) }), want: true},
		{name: "a split 0.03 below slot s", h: history(start, 2*time.Second, 60*time.Second, true, func(int) WarmInterval { return gets(10_000, 0.93, 20_000, 19_200) })},
		{name: "a split is not held to the 2% rule", h: history(start, 2*time.Second, 37*time.Second, true, func(int) WarmInterval { return gets(10_000, 0.96, 20_000, 19_400) }), want: true},
		{name: "the window not covered yet (a gap in the reads)", h: &WarmHistory{Start: start, Intervals: []WarmInterval{
			{Start: start.Add(50 * time.Second), End: start.Add(55 * time.Second), HolderGets: 10_000, HolderHits: 9_900}}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := rule.Judge(tt.h)
			if v.Converged != tt.want || (tt.want && v.Quiet != tt.quiet) {
				t.Fatalf("Judge = %+v, want converged %v (quiet %v)", v, tt.want, tt.quiet)
			}
			if tt.want && !v.At.Equal(tt.h.Intervals[len(tt.h.Intervals)-1].End) {
				t.Errorf("At = %v, want the last read", v.At)
			}
			if why := v.Why(rule, tt.h.Split); tt.why != "" && !strings.Contains(why, tt.why) {
				t.Errorf("Why = %q, want it to contain %q", why, tt.why)
			}
		})
	}
}

// TestWarmRuleWindow: the window is max(30 s, 3 stats intervals).
func TestWarmRuleWindow(t *testing.T) {
	for iv, want := range map[time.Duration]time.Duration{time.Second: 30 * time.Second, 5 * time.Second: 30 * time.Second, 20 * time.Second: time.Minute} {
		if got := (WarmRule{StatsInterval: iv}).Window(); got != want {
			t.Errorf("Window with %s intervals = %s, want %s", iv, got, want)
		}
	}
	// With 20 s intervals, 40 s of warm intervals after --warm-min is not
	// the 60 s window.
	rule := WarmRule{WarmMin: 30 * time.Second, StatsInterval: 20 * time.Second}
	h := &WarmHistory{Start: assignNow}
	for i := range 2 {
		h.Intervals = append(h.Intervals, WarmInterval{Start: assignNow.Add(time.Duration(20*i) * time.Second), End: assignNow.Add(time.Duration(20*i+20) * time.Second), HolderGets: 1000, HolderHits: 990})
	}
	if !rule.Judge(h).Converged {
		t.Fatalf("40 s of warm reads since the move, after --warm-min: not converged")
	}
	h.Intervals[1].SourceHits = 500
	if rule.Judge(h).Converged {
		t.Fatalf("converged with the warm source's hits at 50%% of the new holder's gets")
	}
	// An interval that began before the move is not the warming's.
	h.Intervals[1].SourceHits = 0
	h.Intervals[0].Start, h.Intervals[0].SourceHits = assignNow.Add(-time.Second), 500
	if !rule.Judge(h).Converged {
		t.Fatalf("an interval that began before the move was judged")
	}
}

// TestWarmingEndsWhenConverged: Decide ends a warming whose new holder
// converged (ended_at, the why with its figures), one from a drained zone
// at DrainedCap, and one at its until whatever was read.
func TestWarmingEndsWhenConverged(t *testing.T) {
	spec := slotMapOf(t, 4, []string{"a1", "b3"}, nil).Spec()
	moved := assignNow
	spec.Warming = []*cachenodes.Warming{nil, {NodeID: "b2", Addr: cacheNode("b2").Addr, Until: moved.Add(30 * time.Minute)}}
	prev, err := cachenodes.NewSlotMap(spec)
	if err != nil {
		t.Fatal(err)
	}
	rule := WarmRule{WarmMin: 30 * time.Second, StatsInterval: 5 * time.Second}
	cold := func(int) WarmInterval { return gets(10_000, 0.6, 4000, 3800) }
	warm := func(int) WarmInterval { return gets(10_000, 0.97, 100, 50) }
	for _, tt := range []struct {
		name    string
		h       *WarmHistory
		now     time.Duration
		drained bool
		warmFor time.Duration
		want    string // "" : it goes on
		gone    bool
	}{
		{name: "cold: it goes on", h: history(moved, 0, 5*time.Minute, false, cold), now: 5 * time.Minute},
		{name: "converged", h: history(moved, 0, 40*time.Second, false, warm), now: 41 * time.Second, want: "converged"},
		{name: "no reading: it goes on", now: 5 * time.Minute},
		{name: "a drained zone's source: cold but over at 2m", h: history(moved, 0, 2*time.Minute, false, cold), now: 2 * time.Minute, drained: true, want: "lasts at most 2m0s"},
		{name: "a drained zone's source before 2m", h: history(moved, 0, 119*time.Second, false, cold), now: 119 * time.Second, drained: true},
		{name: "a drained zone's source under a shorter --warm-for", h: history(moved, 0, time.Minute, false, cold), now: time.Minute, drained: true, warmFor: time.Minute, want: "lasts at most 1m0s"},
		{name: "at until, cold: over by until (nothing written early)", h: history(moved, 0, 30*time.Minute, false, cold), now: 30 * time.Minute},
		{name: "12 s after until: the object goes", h: history(moved, 0, 30*time.Minute, false, cold), now: 30*time.Minute + cachenodes.WarmWriteGrace, gone: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			warmFor := cmpOr(tt.warmFor, 30*time.Minute)
			in := Input{Pool: assignPool, NumSlots: 2, Prev: prev, Nodes: []NodeView{vUp("a1"), vUp("b2"), vUp("b3")},
				WarmFor: warmFor, Now: moved.Add(tt.now), WarmRule: rule}
			if tt.h != nil {
				in.Warmth = map[int]*WarmHistory{1: tt.h}
			}
			if tt.drained {
				in.Drained = map[string]bool{"az-b": true}
			}
			plan := Decide(in)
			switch {
			case tt.want == "" && len(plan.EndWarming) > 0:
				t.Fatalf("ended %+v, want it to go on", plan.EndWarming)
			case tt.want != "" && (len(plan.EndWarming) != 1 || !strings.Contains(plan.EndWarming[0].Why, tt.want)):
				t.Fatalf("ended %+v, want one ended with %q", plan.EndWarming, tt.want)
			}
			if gone := len(plan.RemovedWarming) == 1; gone != tt.gone {
				t.Fatalf("removed %v, want gone %v", plan.RemovedWarming, tt.gone)
			}
			next, err := Build(in, plan, nil, in.Now)
			if err != nil {
				t.Fatal(err)
			}
			if ws := next.Warming(1); tt.want != "" && (ws == nil || !ws.EndedAt.Equal(in.Now)) {
				t.Errorf("warming %+v, want ended_at %v", ws, in.Now)
			}
		})
	}
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}
