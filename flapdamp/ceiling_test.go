package flapdamp

import (
	"testing"
	"time"
)

// ceilingStep is one call on a Ceiling and what it must answer.
type ceilingStep struct {
	op   string // "record", "allow", "remaining" or "nextat"
	at   time.Duration
	want any // bool for allow, int for remaining, time.Duration from t0 (nil: the zero Time) for nextat
}

// runCeiling applies steps to c in order and checks every answer.
func runCeiling(t *testing.T, c *Ceiling, steps []ceilingStep) {
	t.Helper()
	for i, s := range steps {
		now := at(s.at)
		switch s.op {
		case "record":
			c.Record(now)
		case "allow":
			if got := c.Allow(now); got != s.want.(bool) {
				t.Errorf("step %d: Allow(t0+%v) = %v, want %v", i, s.at, got, s.want)
			}
		case "remaining":
			if got := c.Remaining(now); got != s.want.(int) {
				t.Errorf("step %d: Remaining(t0+%v) = %d, want %d", i, s.at, got, s.want)
			}
		case "nextat":
			got := c.NextAt(now)
			if s.want == nil {
				if !got.IsZero() {
					t.Errorf("step %d: NextAt(t0+%v) = %v, want the zero Time", i, s.at, got)
				}
				continue
			}
			if want := at(s.want.(time.Duration)); !got.Equal(want) {
				t.Errorf("step %d: NextAt(t0+%v) = t0+%v, want t0+%v", i, s.at, got.Sub(t0), s.want)
			}
		default:
			t.Fatalf("step %d: unknown op %q", i, s.op)
		}
	}
}

func TestCeiling(t *testing.T) {
	const s = time.Second
	tests := []struct {
		name      string
		perMinute int
		steps     []ceilingStep
	}{
		{"two per minute: third refused until 60s after the first", 2, []ceilingStep{
			{"allow", 0, true},
			{"remaining", 0, 2},
			{"nextat", 0, time.Duration(0)},
			{"record", 0, nil},
			{"remaining", 5 * s, 1},
			{"record", 10 * s, nil},
			{"allow", 20 * s, false},
			{"remaining", 20 * s, 0},
			{"nextat", 20 * s, 60 * s},
			{"allow", 60*s - 1, false},
			{"allow", 60 * s, true},
			{"remaining", 60 * s, 1},
			{"nextat", 60 * s, 60 * s},
			{"allow", 70*s - 1, true},
			{"remaining", 70 * s, 2},
		}},
		{"refill after recording again", 2, []ceilingStep{
			{"record", 0, nil},
			{"record", 10 * s, nil},
			{"record", 60 * s, nil}, // first left the window
			{"allow", 60 * s, false},
			{"nextat", 60 * s, 70 * s},
			{"allow", 70 * s, true},
			{"nextat", 70 * s, 70 * s},
			{"remaining", 120 * s, 2},
		}},
		{"backwards record does not date a replacement earlier", 2, []ceilingStep{
			{"record", 50 * s, nil},
			{"record", 0, nil}, // a late, older timestamp: counts as t0+50s
			{"allow", 61 * s, false},
			{"remaining", 61 * s, 0},
			{"nextat", 61 * s, 110 * s},
			{"allow", 110 * s, true},
			{"remaining", 110 * s, 2},
		}},
		{"backwards query does not mint capacity", 1, []ceilingStep{
			{"record", 100 * s, nil},
			{"allow", 0, false},
			{"allow", -time.Hour, false},
			{"remaining", -time.Hour, 0},
			{"nextat", 0, 160 * s},
			{"allow", 160 * s, true},
		}},
		{"forced record beyond the ceiling still counts", 1, []ceilingStep{
			{"record", 0, nil},
			{"record", 1 * s, nil},
			{"allow", 60 * s, false},
			{"nextat", 60 * s, 61 * s},
			{"allow", 61 * s, true},
		}},
		{"backwards forced record keeps NextAt honest", 1, []ceilingStep{
			{"record", 50 * s, nil},
			{"record", 0, nil}, // counts as t0+50s, so both leave at t0+110s
			{"nextat", 61 * s, 110 * s},
			{"allow", 110*s - 1, false},
			{"allow", 110 * s, true},
		}},
		{"NextAt waits for enough to leave", 1, []ceilingStep{
			{"record", 0, nil},
			{"record", 10 * s, nil},
			{"record", 20 * s, nil},
			{"nextat", 30 * s, 80 * s},
			{"allow", 79 * s, false},
			{"allow", 80 * s, true},
		}},
		{"zero allows none", 0, []ceilingStep{
			{"allow", 0, false},
			{"remaining", 0, 0},
			{"nextat", 0, nil}, // nil: the zero Time, never
			{"record", 0, nil},
			{"allow", time.Hour, false},
		}},
		{"negative allows none", -3, []ceilingStep{
			{"allow", 0, false},
			{"remaining", 0, 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runCeiling(t, &Ceiling{PerMinute: tt.perMinute}, tt.steps)
		})
	}
}

func TestCeilingRecordForgetsOldReplacements(t *testing.T) {
	c := Ceiling{PerMinute: 2}
	for i := range 1000 {
		c.Record(at(time.Duration(i) * 61 * time.Second))
	}
	if len(c.recent) != 1 {
		t.Errorf("after 1000 records 61 s apart, %d are kept, want 1", len(c.recent))
	}
	if got := c.Remaining(at(999 * 61 * time.Second)); got != 1 {
		t.Errorf("Remaining right after the last record = %d, want 1", got)
	}
}

// TestCeilingAdoptAndRecent: times stored by a previous leader count once,
// and Recent hands on what is still inside the window.
func TestCeilingAdoptAndRecent(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
	c := Ceiling{PerMinute: 2}
	c.Record(t0.Add(10 * time.Second))
	c.Adopt([]time.Time{t0.Add(10 * time.Second), t0, t0.Add(-2 * time.Minute)})
	if got := c.Remaining(t0.Add(20 * time.Second)); got != 0 {
		t.Fatalf("Remaining after adopting one new time in the window = %d, want 0", got)
	}
	if got := c.Remaining(t0.Add(61 * time.Second)); got != 1 {
		t.Fatalf("Remaining once the adopted time left the window = %d, want 1", got)
	}
	got := c.Recent(t0.Add(30*time.Second), 1)
	want := []time.Time{t0, t0.Add(10 * time.Second), t0.Add(30 * time.Second)}
	if len(got) != len(want) {
		t.Fatalf("Recent = %v, want %v", got, want)
	}
	for i := range want {
		if !got[i].Equal(want[i]) {
			t.Fatalf("Recent = %v, want %v", got, want)
		}
	}
}

// TestCeilingAdoptCountsSameInstantTwice: two replacements made at one
// instant are stored as two equal times; a new leader adopting them counts
// both (it honoured only one before, and exceeded the ceiling), and a
// leader adopting back what it recorded itself counts nothing twice.
func TestCeilingAdoptCountsSameInstantTwice(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
	fresh := Ceiling{PerMinute: 2}
	fresh.Adopt([]time.Time{t0, t0})
	if got := fresh.Remaining(t0.Add(time.Second)); got != 0 {
		t.Fatalf("a new leader adopting two replacements at one instant has %d left, want 0", got)
	}
	own := Ceiling{PerMinute: 3}
	own.Record(t0)
	own.Record(t0)
	own.Adopt(own.Recent(t0, 0))
	own.Adopt([]time.Time{t0})
	if got := own.Remaining(t0.Add(time.Second)); got != 1 {
		t.Fatalf("adopting back its own two records: %d left, want 1", got)
	}
	own.Adopt([]time.Time{t0, t0, t0})
	if got := own.Remaining(t0.Add(time.Second)); got != 0 {
		t.Fatalf("adopting three at an instant it recorded twice: %d left, want 0", got)
	}
}

// TestCeilingGiveBack: a replacement given back (an announce dropped
// before it moved anything) frees its place; a time that matches no
// record gives nothing back, and of two at one instant one is given back.
func TestCeilingGiveBack(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
	c := Ceiling{PerMinute: 2}
	c.Record(t0)
	c.Record(t0)
	if got := c.Remaining(t0.Add(time.Second)); got != 0 {
		t.Fatalf("two recorded: %d left, want 0", got)
	}
	if c.GiveBack(t0.Add(time.Millisecond)) {
		t.Fatal("a time matching no record was given back")
	}
	if !c.GiveBack(t0) {
		t.Fatal("a recorded time was not given back")
	}
	if got := c.Remaining(t0.Add(time.Second)); got != 1 {
		t.Fatalf("after one give-back: %d left, want 1", got)
	}
	if got := c.Recent(t0.Add(time.Second), 0); len(got) != 1 || !got[0].Equal(t0) {
		t.Fatalf("Recent after a give-back = %v, want [%v]", got, t0)
	}
}
