package flapdamp

import (
	"errors"
	"math"
	"testing"
	"time"
)

// tolerance is the allowed error when comparing penalties.
const tolerance = 1e-9

// flapAll records a flap at t0 + each offset.
func flapAll(t *testing.T, p *Penalty, c DampingConfig, offsets ...time.Duration) {
	t.Helper()
	for _, d := range offsets {
		p.Flap(at(d), c)
	}
}

// wantValue checks p's penalty at t0 + d.
func wantValue(t *testing.T, p *Penalty, c DampingConfig, d time.Duration, want float64) {
	t.Helper()
	if got := p.Value(at(d), c); math.Abs(got-want) > tolerance*math.Max(1, want) {
		t.Errorf("Value(t0+%v) = %.9f, want %.9f", d, got, want)
	}
}

// wantSuppressed checks whether p is suppressed at t0 + d.
func wantSuppressed(t *testing.T, p *Penalty, c DampingConfig, d time.Duration, want bool) {
	t.Helper()
	if got := p.Suppressed(at(d), c); got != want {
		t.Errorf("Suppressed(t0+%v) = %v, want %v (value %.3f)", d, got, want, p.Value(at(d), c))
	}
}

func TestDampingConfigWithDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   DampingConfig
		want DampingConfig
	}{
		{"zero", DampingConfig{}, DampingConfig{
			Penalty: 1000, HalfLife: 2 * time.Minute, Suppress: 2000, Reuse: 750,
			MaxSuppress: 8 * time.Minute, BurstWindow: 2 * time.Second,
		}},
		{"max suppress follows a given half-life", DampingConfig{HalfLife: 15 * time.Minute}, DampingConfig{
			Penalty: 1000, HalfLife: 15 * time.Minute, Suppress: 2000, Reuse: 750,
			MaxSuppress: time.Hour, BurstWindow: 2 * time.Second,
		}},
		{"set fields kept", DampingConfig{Penalty: 1, HalfLife: 3, Suppress: 4, Reuse: 2, MaxSuppress: 5, BurstWindow: 6},
			DampingConfig{Penalty: 1, HalfLife: 3, Suppress: 4, Reuse: 2, MaxSuppress: 5, BurstWindow: 6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.WithDefaults(); got != tt.want {
				t.Errorf("WithDefaults() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestDampingConfigCeilingAndValidate(t *testing.T) {
	tests := []struct {
		name        string
		c           DampingConfig
		wantCeiling float64
		wantErr     bool
	}{
		{"defaults", DampingConfig{}, 12000, false},
		{"BGP defaults", DampingConfig{HalfLife: 15 * time.Minute, MaxSuppress: time.Hour}, 12000, false},
		{"max suppress two half-lives", DampingConfig{MaxSuppress: 4 * time.Minute}, 3000, false},
		{"reuse not below suppress", DampingConfig{Reuse: 2000}, 32000, true},
		{"ceiling below suppress", DampingConfig{MaxSuppress: time.Minute}, 750 * math.Sqrt2, true},
		// A node can still reach Suppress, at the ceiling itself.
		{"ceiling exactly at suppress", DampingConfig{Reuse: 1000, MaxSuppress: 2 * time.Minute}, 2000, false},
		{"negative penalty", DampingConfig{Penalty: -1}, 12000, true},
		{"NaN suppress", DampingConfig{Suppress: math.NaN()}, 12000, true},
		{"infinite reuse", DampingConfig{Reuse: math.Inf(1)}, math.Inf(1), true},
		{"negative burst window", DampingConfig{BurstWindow: -time.Second}, 12000, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.c.Ceiling(); !(math.Abs(got-tt.wantCeiling) <= tolerance*tt.wantCeiling) && got != tt.wantCeiling {
				t.Errorf("Ceiling() = %v, want %v", got, tt.wantCeiling)
			}
			err := tt.c.Validate()
			if (err != nil) != tt.wantErr {
				t.Fatalf("Validate() = %v, want error %v", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("Validate() = %v, does not wrap ErrInvalidConfig", err)
			}
		})
	}
}

func TestPenaltyDecay(t *testing.T) {
	c := DampingConfig{}
	var zero Penalty
	wantValue(t, &zero, c, time.Hour, 0)
	wantSuppressed(t, &zero, c, time.Hour, false)
	if zero.Flaps() != 0 {
		t.Errorf("zero Penalty Flaps() = %d, want 0", zero.Flaps())
	}

	var p Penalty
	p.Flap(t0, c)
	tests := []struct {
		name string
		at   time.Duration
		want float64
	}{
		{"at the flap", 0, 1000},
		{"half a half-life", time.Minute, 1000 / math.Sqrt2},
		{"one half-life", 2 * time.Minute, 500},
		{"two half-lives", 4 * time.Minute, 250},
		{"ten half-lives", 20 * time.Minute, 1000.0 / 1024},
		{"clock went backwards", -time.Hour, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantValue(t, &p, c, tt.at, tt.want)
		})
	}

	// A second flap adds to the decayed value.
	p.Flap(at(2*time.Minute), c)
	wantValue(t, &p, c, 2*time.Minute, 1500)
	wantValue(t, &p, c, 4*time.Minute, 750)
	if p.Flaps() != 2 {
		t.Errorf("Flaps() = %d, want 2", p.Flaps())
	}
}

func TestPenaltySuppressAtThreshold(t *testing.T) {
	tests := []struct {
		name    string
		c       DampingConfig
		offsets []time.Duration
		check   time.Duration
		want    bool
	}{
		{"one flap exactly at suppress", DampingConfig{Penalty: 2000}, []time.Duration{0}, 0, true},
		{"one flap just below suppress", DampingConfig{Penalty: 1999.999}, []time.Duration{0}, 0, false},
		{"defaults: two quick flaps stay below 2000", DampingConfig{}, []time.Duration{0, 2 * time.Second}, 2 * time.Second, false},
		{"defaults: a third quick flap suppresses", DampingConfig{}, []time.Duration{0, 2 * time.Second, 4 * time.Second}, 4 * time.Second, true},
		{"defaults: three flaps a half-life apart do not", DampingConfig{}, []time.Duration{0, 2 * time.Minute, 4 * time.Minute}, 4 * time.Minute, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p Penalty
			flapAll(t, &p, tt.c, tt.offsets...)
			wantSuppressed(t, &p, tt.c, tt.check, tt.want)
			// Asking again with the same now gives the same answer.
			wantSuppressed(t, &p, tt.c, tt.check, tt.want)
		})
	}
}

func TestPenaltyStaysSuppressedUntilBelowReuse(t *testing.T) {
	c := DampingConfig{}
	var p Penalty
	flapAll(t, &p, c, 0, 2*time.Second, 4*time.Second)
	peak := p.Value(at(4*time.Second), c)
	wantValue(t, &p, c, 4*time.Second, 1000*math.Exp2(-4.0/120)+1000*math.Exp2(-2.0/120)+1000)
	// The penalty falls below Reuse this long after the last flap.
	below := time.Duration(float64(2*time.Minute) * math.Log2(peak/750))
	reuseAt := 4*time.Second + below
	if reuseAt >= 8*time.Minute {
		t.Fatalf("test setup: reuse at t0+%v is not inside max suppress", reuseAt)
	}

	wantSuppressed(t, &p, c, 4*time.Second, true)
	// Below Suppress but above Reuse: still suppressed (hysteresis).
	mid := 4*time.Second + time.Duration(float64(2*time.Minute)*math.Log2(peak/1000))
	wantValue(t, &p, c, mid, 1000)
	wantSuppressed(t, &p, c, mid, true)
	wantSuppressed(t, &p, c, reuseAt-time.Millisecond, true)
	wantSuppressed(t, &p, c, reuseAt+time.Millisecond, false)
	wantSuppressed(t, &p, c, time.Hour, false)
	// Released by Reuse well before MaxSuppress: the penalty just decays on,
	// with no reset when MaxSuppress would have run out.
	wantValue(t, &p, c, 10*time.Minute, peak*math.Exp2(-float64(10*time.Minute-4*time.Second)/float64(2*time.Minute)))

	// The other side of the hysteresis: a node never suppressed with a
	// penalty between Reuse and Suppress is not suppressed.
	var q Penalty
	flapAll(t, &q, c, 0, 2*time.Second)
	if v := q.Value(at(2*time.Second), c); v < 750 || v >= 2000 {
		t.Fatalf("test setup: value %v not between reuse and suppress", v)
	}
	wantSuppressed(t, &q, c, 2*time.Second, false)
}

func TestPenaltyMaxSuppressReleases(t *testing.T) {
	c := DampingConfig{} // half-life 2 min, max suppress 8 min
	var p Penalty
	// A flap every 30 s from t0 to t0+8m30s keeps the penalty far above
	// Reuse; the suppression begins at the third flap (t0+60s).
	for d := time.Duration(0); d <= 8*time.Minute+30*time.Second; d += 30 * time.Second {
		p.Flap(at(d), c)
	}
	if p.Flaps() != 18 {
		t.Fatalf("Flaps() = %d, want 18", p.Flaps())
	}
	wantSuppressed(t, &p, c, 30*time.Second, true) // a now before the last flap counts as the last flap
	release := time.Minute + 8*time.Minute
	wantSuppressed(t, &p, c, release-time.Nanosecond, true)
	if v := p.Value(at(release-time.Nanosecond), c); v < 2000 {
		t.Fatalf("test setup: value before release %v, want well above reuse", v)
	}
	wantSuppressed(t, &p, c, release, false)
	// Released with the penalty reset to Reuse, decaying from there.
	wantValue(t, &p, c, release, 750)
	wantValue(t, &p, c, release+2*time.Minute, 375)
	wantSuppressed(t, &p, c, release+2*time.Minute, false)

	// The next flap after the release starts from Reuse, not from the old
	// penalty, so it does not suppress at once.
	next := release + 10*time.Second
	p.Flap(at(next), c)
	wantValue(t, &p, c, next, 750*math.Exp2(-10.0/120)+1000)
	wantSuppressed(t, &p, c, next, false)
	// One more quick flap does, and a new suppression starts from it.
	p.Flap(at(next+3*time.Second), c)
	wantSuppressed(t, &p, c, next+3*time.Second, true)
}

func TestPenaltyCeiling(t *testing.T) {
	c := DampingConfig{Suppress: 1200, MaxSuppress: 2 * time.Minute} // ceiling 1500
	var p Penalty
	flapAll(t, &p, c, 0, 2*time.Second, 4*time.Second, 6*time.Second)
	wantValue(t, &p, c, 6*time.Second, 1500)
	wantValue(t, &p, c, 6*time.Second+time.Minute, 1500/math.Sqrt2)
	// Suppressed from the second flap (t0+2s), so MaxSuppress ends it at
	// t0+2m2s, when the penalty (1500 decayed for 1m56s) is still just
	// above Reuse: it is reset to Reuse.
	wantSuppressed(t, &p, c, 2*time.Second, true)
	wantSuppressed(t, &p, c, 2*time.Minute+2*time.Second-time.Nanosecond, true)
	wantSuppressed(t, &p, c, 2*time.Minute+2*time.Second, false)
	wantValue(t, &p, c, 2*time.Minute+2*time.Second, 750)
}

func TestPenaltyBurstCollapse(t *testing.T) {
	const s = time.Second
	tests := []struct {
		name      string
		c         DampingConfig
		offsets   []time.Duration
		wantFlaps int
		wantValue float64 // at the last offset
	}{
		{"three events within the window count once", DampingConfig{},
			[]time.Duration{0, s / 2, 3 * s / 2}, 1, 1000 * math.Exp2(-1.5/120)},
		{"events exactly a window apart count separately", DampingConfig{},
			[]time.Duration{0, 2 * s, 4 * s}, 3, 1000*math.Exp2(-4.0/120) + 1000*math.Exp2(-2.0/120) + 1000},
		{"events spaced beyond the window count separately", DampingConfig{},
			[]time.Duration{0, 10 * s, 20 * s}, 3, 1000*math.Exp2(-20.0/120) + 1000*math.Exp2(-10.0/120) + 1000},
		{"window measured from the last counted flap, not slid", DampingConfig{},
			[]time.Duration{0, 1 * s, 2 * s, 3 * s}, 2, 1000*math.Exp2(-3.0/120) + 1000*math.Exp2(-1.0/120)},
		{"an older, late event is part of the burst", DampingConfig{},
			[]time.Duration{10 * s, 0}, 1, 1000},
		{"custom window", DampingConfig{BurstWindow: 10 * s},
			[]time.Duration{0, 9 * s, 10 * s}, 2, 1000*math.Exp2(-10.0/120) + 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p Penalty
			flapAll(t, &p, tt.c, tt.offsets...)
			if p.Flaps() != tt.wantFlaps {
				t.Errorf("Flaps() = %d, want %d", p.Flaps(), tt.wantFlaps)
			}
			wantValue(t, &p, tt.c, tt.offsets[len(tt.offsets)-1], tt.wantValue)
		})
	}
}

// TestPenaltyPollingDoesNotMatter checks that asking often and asking rarely
// give the same answers: the state is a function of the flaps and now.
func TestPenaltyPollingDoesNotMatter(t *testing.T) {
	c := DampingConfig{}
	flaps := []time.Duration{0, 20 * time.Second, 40 * time.Second, 60 * time.Second, 5 * time.Minute, 5*time.Minute + 30*time.Second}
	var polled, quiet Penalty
	next := 0
	for d := time.Duration(0); d <= 30*time.Minute; d += 500 * time.Millisecond {
		for next < len(flaps) && flaps[next] <= d {
			polled.Flap(at(flaps[next]), c)
			quiet.Flap(at(flaps[next]), c)
			next++
		}
		s1, v1 := polled.Suppressed(at(d), c), polled.Value(at(d), c)
		s2, v2 := polled.Suppressed(at(d), c), polled.Value(at(d), c)
		if s1 != s2 || v1 != v2 {
			t.Fatalf("t0+%v: two calls disagree: (%v, %v) then (%v, %v)", d, s1, v1, s2, v2)
		}
		if d%(7*time.Minute) == 0 { // ask the quiet one rarely
			if s3, v3 := quiet.Suppressed(at(d), c), quiet.Value(at(d), c); s3 != s1 || v3 != v1 {
				t.Fatalf("t0+%v: rarely polled (%v, %v) differs from often polled (%v, %v)", d, s3, v3, s1, v1)
			}
		}
	}
	if polled != quiet {
		t.Errorf("polling changed the state: %+v vs %+v", polled, quiet)
	}
	if polled.Suppressed(at(30*time.Minute), c) {
		t.Error("still suppressed after 30 quiet minutes")
	}
}
