package ratelimit

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/clock"
)

// quietSlowStart returns a SlowStart at the ceiling of testConfig whose
// last two readings, at t0 and at(1), saw admitted boots a second between
// them.
func quietSlowStart(admitted int) *SlowStart {
	s := NewSlowStart(testConfig)
	s.SetLimit(testConfig.Ceiling, false)
	s.Reading(t0, true)
	for range admitted {
		s.Admitted()
	}
	s.Reading(at(1), true)
	return s
}

// flood asks for n boots a second from start to end, spread evenly, and
// returns how many the slow start let through in each of the windows
// that begin at the given offsets from start (the last one runs to end).
func flood(s *SlowStart, start time.Time, n int, end time.Duration, windows ...time.Duration) []int {
	got := make([]int, len(windows))
	step := time.Second / time.Duration(n)
	for d := time.Duration(0); d < end; d += step {
		now := start.Add(d)
		if ok, _ := s.Allow(now); ok {
			s.Admitted()
			w := 0
			for i, from := range windows {
				if d >= from {
					w = i
				}
			}
			got[w]++
		}
	}
	return got
}

// TestSlowStartCapsASurgeAndDoubles: 2000 boots a second after a quiet
// interval start a surge once more than the floor ask within a second;
// from then on the allowance is the floor, doubling every third of the
// interval (10, 20, 40) and holding at 40 until a reading judges it.
func TestSlowStartCapsASurgeAndDoubles(t *testing.T) {
	s := quietSlowStart(2)
	start := at(1).Add(time.Millisecond)
	third := testConfig.Interval / 3
	got := flood(s, start, 2000, 2*testConfig.Interval, 0, third, 2*third, 3*third)
	// Window 0: 10 before the surge, then 10/s for 1.67 s plus one token;
	// then 20/s and 40/s for 1.67 s each, and 40/s for the last 5 s.
	want := []struct{ lo, hi int }{{10 + 15, 10 + 18}, {32, 35}, {65, 68}, {199, 201}}
	for i, w := range want {
		if got[i] < w.lo || got[i] > w.hi {
			t.Errorf("window %d admitted %d, want %d to %d (all windows: %v)", i, got[i], w.lo, w.hi, got)
		}
	}
	if a, on := s.State(start.Add(time.Second)); !on || a != 10 {
		t.Errorf("state 1s into the surge: %v %v, want 10 true", a, on)
	}
	if a, on := s.State(start.Add(2*third + 100*time.Millisecond)); !on || a != 40 {
		t.Errorf("state 2/3 of an interval into the surge: %v %v, want 40 true", a, on)
	}
	if a, on := s.State(start.Add(2 * testConfig.Interval)); !on || a != 40 {
		t.Errorf("state 2 intervals into the surge: %v %v, want 40 (held) true", a, on)
	}
	if ok, retry := s.Allow(start.Add(2 * testConfig.Interval)); ok || retry != time.Second {
		t.Errorf("a refusal by the slow start: %v %v, want false 1s", ok, retry)
	}
}

// TestSlowStartNoSurgeNoCap: boots at the recent rate, and a burst of up
// to max(floor, 4 × the recent rate) within a second, pass untouched.
func TestSlowStartNoSurgeNoCap(t *testing.T) {
	s := quietSlowStart(5 * 25) // 25 boots/s in the last interval: a surge is more than 100 in a second
	start := at(1).Add(time.Millisecond)
	if got := flood(s, start, 100, 3*time.Second, 0); got[0] != 300 {
		t.Errorf("100 boots a second for 3s: %d passed, want all 300", got[0])
	}
	if _, on := s.State(start.Add(3 * time.Second)); on {
		t.Error("a surge began at 4 × the recent rate")
	}
	// A pool sitting at a limit near the slow-start level has nothing to
	// slow: the limit itself caps the boots.
	s = quietSlowStart(0)
	s.SetLimit(15, false)
	if got := flood(s, start, 2000, time.Second, 0); got[0] != 2000 {
		t.Errorf("2000 boots under a limit of 15: %d passed the slow start, want all", got[0])
	}
}

// TestSlowStartReleasedAfterAHealthyReading: the first reading half an
// interval or more into the surge judges it; a hit rate that did not fall
// releases it to the controller's limit, and no new surge begins before
// the next reading.
func TestSlowStartReleasedAfterAHealthyReading(t *testing.T) {
	s := quietSlowStart(2)
	ctrl := NewController(testConfig, autoDoc(1000, t0))
	ctrl.Observe(at(1), 0.97)
	start := at(1).Add(time.Millisecond)
	flood(s, start, 2000, 2*time.Second, 0)
	if _, judge := s.Reading(start.Add(2*time.Second), true); judge {
		t.Fatal("a reading 2s into the surge judged it; want half an interval (2.5s) at least")
	}
	level, judge := s.Reading(at(2), true)
	if !judge || level != 40 {
		t.Fatalf("the reading at 5s: judge %v level %v, want true 40", judge, level)
	}
	if got := flood(s, at(2).Add(time.Millisecond), 2000, time.Second, 0); got[0] > 45 {
		t.Errorf("before the verdict on the surge %d boots passed in a second, want it still capped at 40 (and its burst of 4)", got[0])
	}
	d, v := ctrl.ObserveSurge(at(2), 0.97, 0.965, level)
	if v != SurgeReleased || d.Limit != 1000 || d.Changed || d.HeldSurge != 0 {
		t.Fatalf("a healthy reading: %+v verdict %v, want the limit of 1000 unchanged, released", d, v)
	}
	s.Hold(d.HeldSurge)
	s.SetLimit(d.Limit, false)
	if got := flood(s, at(2).Add(time.Second+time.Millisecond), 2000, time.Second, 0); got[0] != 2000 {
		t.Errorf("after the release 2000 boots in a second: %d passed, want all", got[0])
	}
}

// TestSlowStartFallHandsOverFromTheSlowStartLevel: a reading that shows a
// fall hands over to the controller from the slow-start level, not from
// the ceiling: a collapse between Low and the target holds there, a rate
// below Low halves it.
func TestSlowStartFallHandsOverFromTheSlowStartLevel(t *testing.T) {
	for _, tc := range []struct {
		name  string
		raw   float64
		limit float64
		says  string
	}{
		{"collapse between low and target", 0.85, 40, "boot surge slowed to 40 boots/s: hit rate fell from 0.97 to 0.85 within 10s: holding at the slow-start level of 40"},
		{"below low", 0.70, 20, "boot surge slowed to 40 boots/s: hit rate 0.70 below 0.80: cut from 40 to 20"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctrl := NewController(testConfig, autoDoc(1000, t0))
			ctrl.Observe(at(1), 0.97)
			d, v := ctrl.ObserveSurge(at(2), 0.955, tc.raw, 40)
			if v != SurgeFell || !d.Changed || d.Limit != tc.limit || d.AutoLimit != tc.limit || d.Reason != tc.says {
				t.Fatalf("got %+v verdict %v, want limit %v, %q", d, v, tc.limit, tc.says)
			}
			doc := ctrl.Document()
			if doc.Limit != tc.limit || doc.Burst != DefaultBurst(tc.limit) || doc.Reason != tc.says || !doc.UpdatedAt.Equal(at(2)) {
				t.Fatalf("document %+v", doc)
			}
			// The smoothed rate catching up with the fall the surge
			// answered is not a new collapse.
			if d := ctrl.Observe(at(3), 0.88); d.Changed || d.Limit != tc.limit {
				t.Fatalf("the fall counted again: %+v", d)
			}
			// The raises resume from there after the raise wait.
			if d := ctrl.Observe(at(4), 0.95); d.Changed {
				t.Fatalf("raised inside the raise wait: %+v", d)
			}
			if d := ctrl.Observe(at(5), 0.95); !d.Changed || d.Limit != 2*tc.limit {
				t.Fatalf("after the raise wait: %+v, want %v", d, 2*tc.limit)
			}
		})
	}
	// Without a surge the same collapse goes to the floor.
	ctrl := NewController(testConfig, autoDoc(1000, t0))
	ctrl.Observe(at(1), 0.97)
	if d := ctrl.Observe(at(2), 0.85); d.Limit != testConfig.Floor {
		t.Fatalf("a collapse outside a surge: %+v, want the floor", d)
	}
}

// TestSlowStartLeavesManualModeAlone: an operator's limit is exact; the
// controller's surge reading in manual mode is an ordinary observation.
func TestSlowStartLeavesManualModeAlone(t *testing.T) {
	s := quietSlowStart(0)
	s.SetLimit(500, true)
	if got := flood(s, at(1).Add(time.Millisecond), 2000, 2*time.Second, 0); got[0] != 4000 {
		t.Errorf("manual mode: %d of 4000 boots passed the slow start, want all", got[0])
	}
	// A surge in progress ends when an operator pins a limit.
	s = quietSlowStart(0)
	flood(s, at(1).Add(time.Millisecond), 2000, time.Second, 0)
	if _, on := s.State(at(1).Add(time.Second)); !on {
		t.Fatal("no surge in auto mode")
	}
	s.SetLimit(500, true)
	if _, on := s.State(at(1).Add(time.Second)); on {
		t.Error("the surge outlived the switch to manual mode")
	}
	ctrl := NewController(testConfig, manualDoc(500, 50, 1000, t0))
	ctrl.Observe(at(1), 0.97)
	d, v := ctrl.ObserveSurge(at(2), 0.955, 0.6, 40)
	if v != SurgeReleased || d.Limit != 500 || d.Burst != 50 {
		t.Fatalf("manual mode: %+v verdict %v, want the pinned 500/50", d, v)
	}
}

// TestSlowStartWaitsForTwoReadings: before two readings (a new process, a
// new leader after Reset) the admitted rate is unknown and nothing is a
// surge: a new leader's steady boots are not taken for one.
func TestSlowStartWaitsForTwoReadings(t *testing.T) {
	s := NewSlowStart(testConfig)
	s.SetLimit(testConfig.Ceiling, false)
	s.Reading(t0, true)
	if got := flood(s, t0.Add(time.Millisecond), 500, time.Second, 0); got[0] != 500 {
		t.Errorf("after one reading: %d of 500 boots passed, want all", got[0])
	}
	s = quietSlowStart(0)
	s.Reset()
	if got := flood(s, at(1).Add(time.Millisecond), 500, time.Second, 0); got[0] != 500 {
		t.Errorf("after Reset: %d of 500 boots passed, want all", got[0])
	}
	s.Reading(at(2), true)
	s.Reading(at(3), true)
	// 10 before the surge, then 10/s and one token.
	if got := flood(s, at(3).Add(time.Millisecond), 5000, time.Second, 0); got[0] < 20 || got[0] > 22 {
		t.Errorf("two readings after Reset: %d of 5000 boots passed in a second, want 20 to 22 (the surge capped)", got[0])
	}
}

// TestSlowStartEndsWithoutStats: a surge that no reading can judge is
// released after SlowStartUnjudged intervals.
func TestSlowStartEndsWithoutStats(t *testing.T) {
	s := quietSlowStart(0)
	start := at(1).Add(time.Millisecond)
	flood(s, start, 2000, time.Second, 0)
	for n := 2; n <= 3; n++ {
		if _, judge := s.Reading(at(n), false); judge {
			t.Fatalf("a reading without a hit rate judged the surge")
		}
	}
	if _, on := s.State(at(3)); !on {
		t.Fatal("the surge ended before SlowStartUnjudged intervals")
	}
	if _, on := s.State(start.Add(SlowStartUnjudged*testConfig.Interval + time.Second)); on {
		t.Fatal("the surge outlived SlowStartUnjudged intervals without a reading")
	}
}

// TestServiceSlowStartsABootSurge: the Service's admissions (POST
// /v1/boot) go through the slow start, and its document shows it.
func TestServiceSlowStartsABootSurge(t *testing.T) {
	clk := clock.NewFake(t0)
	svc, err := NewService(ServiceOptions{Client: &api.Client{}, Key: "test/surge/bootlimit", Config: testConfig, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	svc.setDoc(InitialDocument(testConfig, t0))
	// Two readings measure the admitted rate (none) first.
	svc.lim.slow.Reading(clk.Now(), true)
	clk.Advance(testConfig.Interval)
	svc.lim.slow.Reading(clk.Now(), true)
	admitted := 0
	for range 200 {
		if ok, _ := svc.Admit(); ok {
			admitted++
		}
		clk.Advance(time.Millisecond)
	}
	// 10 before the surge, then the slow start's one token and 10/s.
	if admitted < 11 || admitted > 13 {
		t.Fatalf("200 boots in 0.2s at a limit of 1000: %d admitted, want 11 to 13", admitted)
	}
	d := svc.Document()
	if !d.SlowStart || d.EffectiveLimit != 10 || d.Limit != 1000 ||
		!strings.HasPrefix(d.Reason, "boot surge: slow start at 10 boots/s until the hit rate is read; ") {
		t.Fatalf("document during the surge: %+v", d)
	}
	if ok, retry := svc.Admit(); ok || retry != time.Second {
		t.Fatalf("a boot refused by the slow start: %v %v, want false 1s", ok, retry)
	}
	// The share path of a follower cut off from the leader is unchanged.
	if ok, _ := svc.AdmitShare(2); !ok {
		t.Fatal("AdmitShare refused the first boot of its share")
	}
}
