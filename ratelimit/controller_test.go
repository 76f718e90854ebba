package ratelimit

import (
	"errors"
	"math"
	"testing"
	"time"
)

// testConfig is the flags' defaults with a 5s stats interval: floor 10,
// ceiling 1000, first step 100, smallest step 10.
var testConfig = ControllerConfig{Floor: 10, Ceiling: 1000, Low: 0.80, Target: 0.90, Interval: 5 * time.Second}

// t0 is the fake clock's origin.
var t0 = time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)

// at returns the fake time n stats intervals after t0.
func at(n int) time.Time { return t0.Add(time.Duration(n) * testConfig.Interval) }

// autoDoc is an auto-mode document at limit, last changed at changed.
func autoDoc(limit float64, changed time.Time) Document {
	return Document{Mode: ModeAuto, Limit: limit, Burst: DefaultBurst(limit), Floor: testConfig.Floor,
		Ceiling: testConfig.Ceiling, UpdatedAt: changed, Reason: "start", AutoLimit: limit}
}

// manualDoc is a manual-mode document pinned at limit/burst whose
// controller limit is auto.
func manualDoc(limit float64, burst int, auto float64, changed time.Time) Document {
	return Document{Mode: ModeManual, Limit: limit, Burst: burst, Floor: testConfig.Floor,
		Ceiling: testConfig.Ceiling, UpdatedAt: changed, Reason: "set to manual by alice", AutoLimit: auto}
}

// ctrlStep is one observation of a controller test: at interval n the
// hit rate is hit (after adopting adopt, when set), and the decision must
// leave the enforced limit at limit (and the controller's own at auto, when
// auto is not 0), report changed, and give reason exactly.
type ctrlStep struct {
	n       int
	adopt   *Document
	hit     float64
	limit   float64
	auto    float64
	changed bool
	reason  string
}

func TestController(t *testing.T) {
	tests := []struct {
		name  string
		start Document
		steps []ctrlStep
	}{
		{
			name:  "cold cache: cut by half, at most once per cooldown of two intervals",
			start: autoDoc(1000, time.Time{}),
			steps: []ctrlStep{
				{n: 1, hit: 0.30, limit: 500, changed: true, reason: "hit rate 0.30 below 0.80: cut from 1000 to 500"},
				{n: 2, hit: 0.30, limit: 500, reason: "hit rate 0.30 below 0.80: holding at 500 until 10s after the last cut"},
				{n: 3, hit: 0.30, limit: 250, changed: true, reason: "hit rate 0.30 below 0.80: cut from 500 to 250"},
				{n: 4, hit: 0.75, limit: 250, reason: "hit rate 0.75 below 0.80: holding at 250 until 10s after the last cut"},
				{n: 5, hit: 0.75, limit: 125, changed: true, reason: "hit rate 0.75 below 0.80: cut from 250 to 125"},
				// A fall of less than half the gap between low and target
				// within two intervals is no collapse: an ordinary cut.
				{n: 7, hit: 0.71, limit: 62.5, changed: true, reason: "hit rate 0.71 below 0.80: cut from 125 to 62.5"},
			},
		},
		{
			name:  "collapse: a fall of half the gap between low and target within two intervals, to below the target, cuts straight to the floor",
			start: autoDoc(1000, time.Time{}),
			steps: []ctrlStep{
				{n: 1, hit: 0.97, limit: 1000, reason: "hit rate 0.97 at or above target 0.90: at the ceiling of 1000"},
				// Above Low, but below the target and the misses have
				// more than quadrupled.
				{n: 2, hit: 0.87, limit: 10, changed: true, reason: "hit rate fell from 0.97 to 0.87 within 10s: cut from 1000 to the floor of 10"},
				// The fall the cut answered is not counted again.
				{n: 3, hit: 0.90, limit: 10, reason: "hit rate 0.90 at or above target 0.90: holding at 10 until 15s after the last change"},
				{n: 4, hit: 0.92, limit: 10, reason: "hit rate 0.92 at or above target 0.90: holding at 10 until 15s after the last change"},
				// Raises add a step (100) but at most double the limit.
				{n: 5, hit: 0.93, limit: 20, changed: true, reason: "hit rate 0.93 at or above target 0.90: raised from 10 to 20"},
				{n: 8, hit: 0.93, limit: 40, changed: true},
				{n: 11, hit: 0.94, limit: 80, changed: true},
				{n: 14, hit: 0.94, limit: 160, changed: true},
				{n: 17, hit: 0.95, limit: 260, changed: true, reason: "hit rate 0.95 at or above target 0.90: raised from 160 to 260"},
			},
		},
		{
			name:  "a fast fall that stays at or above the target is never cut; below it, it is a collapse",
			start: autoDoc(500, time.Time{}),
			steps: []ctrlStep{
				{n: 1, hit: 0.99, limit: 600, changed: true, reason: "hit rate 0.99 at or above target 0.90: raised from 500 to 600"},
				// A fall of 0.08 in one interval, as a dead holder of one
				// slot in twelve makes it: at or above the target, no cut.
				{n: 2, hit: 0.91, limit: 600, reason: "hit rate 0.91 at or above target 0.90: holding at 600 until 15s after the last change"},
				// A fall from 0.99 within two intervals to below the
				// target: the floor.
				{n: 3, hit: 0.88, limit: 10, changed: true, reason: "hit rate fell from 0.99 to 0.88 within 10s: cut from 600 to the floor of 10"},
			},
		},
		{
			name:  "a collapse over two intervals",
			start: autoDoc(1000, time.Time{}),
			steps: []ctrlStep{
				{n: 1, hit: 0.97, limit: 1000},
				{n: 2, hit: 0.94, limit: 1000},
				{n: 3, hit: 0.89, limit: 10, changed: true, reason: "hit rate fell from 0.97 to 0.89 within 10s: cut from 1000 to the floor of 10"},
			},
		},
		{
			name:  "a fall spread over more than two intervals is no collapse",
			start: autoDoc(1000, time.Time{}),
			steps: []ctrlStep{
				{n: 1, hit: 0.97, limit: 1000},
				{n: 2, hit: 0.95, limit: 1000},
				{n: 3, hit: 0.93, limit: 1000},
				{n: 4, hit: 0.91, limit: 1000, reason: "hit rate 0.91 at or above target 0.90: at the ceiling of 1000"},
				{n: 5, hit: 0.89, limit: 1000, reason: "hit rate 0.89 between 0.80 and 0.90: holding at 1000"},
				// A skipped observation: the last one is older than the window.
				{n: 8, hit: 0.70, limit: 500, changed: true, reason: "hit rate 0.70 below 0.80: cut from 1000 to 500"},
			},
		},
		{
			name:  "a collapse at the floor holds and does not raise",
			start: autoDoc(10, time.Time{}),
			steps: []ctrlStep{
				{n: 1, hit: 0.99, limit: 20, changed: true},
				{n: 2, hit: 0.89, limit: 10, changed: true, reason: "hit rate fell from 0.99 to 0.89 within 10s: cut from 20 to the floor of 10"},
				{n: 3, hit: 0.97, limit: 10},
				{n: 4, hit: 0.88, limit: 10, reason: "hit rate fell from 0.97 to 0.88 within 10s: already at the floor of 10"},
			},
		},
		{
			name:  "manual mode: a collapse moves only the controller's own limit",
			start: manualDoc(5, 5, 1000, time.Time{}),
			steps: []ctrlStep{
				{n: 1, hit: 0.97, limit: 5, auto: 1000},
				{n: 2, hit: 0.50, limit: 5, auto: 10, changed: true, reason: "hit rate fell from 0.97 to 0.50 within 10s: would have cut from 1000 to the floor of 10"},
			},
		},
		{
			name:  "a relapse after a raise is not a collapse: cut below the pre-raise level",
			start: autoDoc(30, at(0)),
			steps: []ctrlStep{
				{n: 3, hit: 0.97, limit: 60, changed: true, reason: "hit rate 0.97 at or above target 0.90: raised from 30 to 60"},
				{n: 4, hit: 0.70, limit: 27, changed: true, reason: "hit rate 0.70 fell below 0.80 after raising from 30 to 60: cut to 27, next steps 50"},
			},
		},
		{
			name:  "between low and target: hold",
			start: autoDoc(500, time.Time{}),
			steps: []ctrlStep{
				{n: 1, hit: 0.85, limit: 500, reason: "hit rate 0.85 between 0.80 and 0.90: holding at 500"},
				{n: 5, hit: 0.80, limit: 500, reason: "hit rate 0.80 between 0.80 and 0.90: holding at 500"},
				{n: 9, hit: 0.895, limit: 500, reason: "hit rate 0.895 between 0.80 and 0.90: holding at 500"},
			},
		},
		{
			name:  "healthy: raise by a tenth of the ceiling, waiting three intervals after each change",
			start: autoDoc(250, at(0)),
			steps: []ctrlStep{
				{n: 1, hit: 0.95, limit: 250, reason: "hit rate 0.95 at or above target 0.90: holding at 250 until 15s after the last change"},
				{n: 2, hit: 0.95, limit: 250, reason: "hit rate 0.95 at or above target 0.90: holding at 250 until 15s after the last change"},
				{n: 3, hit: 0.95, limit: 350, changed: true, reason: "hit rate 0.95 at or above target 0.90: raised from 250 to 350"},
				{n: 4, hit: 0.91, limit: 350, reason: "hit rate 0.91 at or above target 0.90: holding at 350 until 15s after the last change"},
				{n: 5, hit: 0.99, limit: 350},
				{n: 6, hit: 0.99, limit: 450, changed: true, reason: "hit rate 0.99 at or above target 0.90: raised from 350 to 450"},
				{n: 9, hit: 0.99, limit: 550, changed: true},
			},
		},
		{
			name:  "relapse after a raise: cut below the pre-raise level, halve the next steps",
			start: autoDoc(250, at(0)),
			steps: []ctrlStep{
				{n: 3, hit: 0.95, limit: 350, changed: true, reason: "hit rate 0.95 at or above target 0.90: raised from 250 to 350"},
				{n: 4, hit: 0.70, limit: 175, changed: true, reason: "hit rate 0.70 fell below 0.80 after raising from 250 to 350: cut to 175, next steps 50"},
				{n: 5, hit: 0.95, limit: 175},
				{n: 6, hit: 0.95, limit: 175},
				{n: 7, hit: 0.95, limit: 225, changed: true, reason: "hit rate 0.95 at or above target 0.90: raised from 175 to 225"},
				{n: 10, hit: 0.95, limit: 275, changed: true},
				// A second relapse halves again: min(275/2, 225*0.9).
				{n: 11, hit: 0.50, limit: 137.5, changed: true, reason: "hit rate 0.50 fell below 0.80 after raising from 225 to 275: cut to 137.5, next steps 25"},
				{n: 14, hit: 0.95, limit: 162.5, changed: true},
			},
		},
		{
			name:  "relapse where the pre-raise level is the lower bound",
			start: autoDoc(100, at(0)),
			steps: []ctrlStep{
				{n: 3, hit: 0.95, limit: 200, changed: true},
				{n: 9, hit: 0.70, limit: 90, changed: true, reason: "hit rate 0.70 fell below 0.80 after raising from 100 to 200: cut to 90, next steps 50"},
			},
		},
		{
			name:  "steps never shrink below a hundredth of the ceiling",
			start: autoDoc(100, at(0)),
			steps: []ctrlStep{
				{n: 3, hit: 0.95, limit: 200, changed: true},
				{n: 4, hit: 0.70, limit: 90, changed: true, reason: "hit rate 0.70 fell below 0.80 after raising from 100 to 200: cut to 90, next steps 50"},
				{n: 7, hit: 0.95, limit: 140, changed: true},
				{n: 8, hit: 0.70, limit: 70, changed: true, reason: "hit rate 0.70 fell below 0.80 after raising from 90 to 140: cut to 70, next steps 25"},
				{n: 11, hit: 0.95, limit: 95, changed: true},
				{n: 12, hit: 0.70, limit: 47.5, changed: true, reason: "hit rate 0.70 fell below 0.80 after raising from 70 to 95: cut to 47.5, next steps 12.5"},
				{n: 15, hit: 0.95, limit: 60, changed: true},
				{n: 16, hit: 0.70, limit: 30, changed: true, reason: "hit rate 0.70 fell below 0.80 after raising from 47.5 to 60: cut to 30, next steps 10"},
				{n: 19, hit: 0.95, limit: 40, changed: true},
				{n: 20, hit: 0.70, limit: 20, changed: true, reason: "hit rate 0.70 fell below 0.80 after raising from 30 to 40: cut to 20, next steps 10"},
			},
		},
		{
			name:  "a fall long after the last raise is an ordinary cut and keeps the step",
			start: autoDoc(250, at(0)),
			steps: []ctrlStep{
				{n: 3, hit: 0.95, limit: 350, changed: true},
				{n: 6, hit: 0.85, limit: 350},
				{n: 10, hit: 0.70, limit: 175, changed: true, reason: "hit rate 0.70 below 0.80: cut from 350 to 175"},
				{n: 13, hit: 0.95, limit: 275, changed: true, reason: "hit rate 0.95 at or above target 0.90: raised from 175 to 275"},
			},
		},
		{
			name:  "the floor holds",
			start: autoDoc(15, time.Time{}),
			steps: []ctrlStep{
				{n: 1, hit: 0.10, limit: 10, changed: true, reason: "hit rate 0.10 below 0.80: cut from 15 to 10"},
				{n: 3, hit: 0.10, limit: 10, reason: "hit rate 0.10 below 0.80: already at the floor of 10"},
				{n: 30, hit: 0.00, limit: 10, reason: "hit rate 0.00 below 0.80: already at the floor of 10"},
			},
		},
		{
			name:  "the ceiling holds, and reaching it restores full steps",
			start: autoDoc(950, time.Time{}),
			steps: []ctrlStep{
				{n: 1, hit: 0.95, limit: 1000, changed: true, reason: "hit rate 0.95 at or above target 0.90: raised from 950 to 1000"},
				{n: 4, hit: 0.99, limit: 1000, reason: "hit rate 0.99 at or above target 0.90: at the ceiling of 1000"},
				{n: 40, hit: 1.00, limit: 1000, reason: "hit rate 1.00 at or above target 0.90: at the ceiling of 1000"},
			},
		},
		{
			name:  "a limit outside changed bounds is moved inside first",
			start: autoDoc(2000, time.Time{}),
			steps: []ctrlStep{
				{n: 1, hit: 0.95, limit: 1000, changed: true, reason: "the ceiling is 1000 boots/s: lowered from 2000 to 1000"},
			},
		},
		{
			name:  "manual mode freezes the limit while the controller keeps computing",
			start: manualDoc(5, 5, 1000, time.Time{}),
			steps: []ctrlStep{
				{n: 1, hit: 0.30, limit: 5, auto: 500, changed: true, reason: "hit rate 0.30 below 0.80: would have cut from 1000 to 500"},
				{n: 2, hit: 0.30, limit: 5, auto: 500},
				{n: 3, hit: 0.30, limit: 5, auto: 250, changed: true, reason: "hit rate 0.30 below 0.80: would have cut from 500 to 250"},
				{n: 6, hit: 0.95, limit: 5, auto: 350, changed: true, reason: "hit rate 0.95 at or above target 0.90: would have raised from 250 to 350"},
			},
		},
		{
			name:  "back to auto: resume from the operator's limit and wait before raising",
			start: manualDoc(5, 5, 800, time.Time{}),
			steps: []ctrlStep{
				{n: 1, adopt: ptr(autoDoc(10, at(1))), hit: 0.95, limit: 10, reason: "hit rate 0.95 at or above target 0.90: holding at 10 until 15s after the last change"},
				{n: 4, hit: 0.95, limit: 20, changed: true, reason: "hit rate 0.95 at or above target 0.90: raised from 10 to 20"},
			},
		},
		{
			name:  "no usable hit rate holds",
			start: autoDoc(500, time.Time{}),
			steps: []ctrlStep{
				{n: 1, hit: math.NaN(), limit: 500, reason: "no usable hit rate: holding at 500"},
				{n: 2, hit: 1.5, limit: 500, reason: "no usable hit rate: holding at 500"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewController(testConfig, tt.start)
			for _, s := range tt.steps {
				runCtrlStep(t, c, tt.start, s)
			}
		})
	}
}

// runCtrlStep feeds one observation to c and checks the decision and the
// document the controller now holds.
func runCtrlStep(t *testing.T, c *Controller, start Document, s ctrlStep) {
	t.Helper()
	now := at(s.n)
	if s.adopt != nil {
		c.Adopt(*s.adopt, now)
	}
	before := c.Document()
	d := c.Observe(now, s.hit)
	doc := c.Document()
	wantAuto := s.auto
	if wantAuto == 0 {
		wantAuto = s.limit
	}
	if d.Limit != s.limit || d.AutoLimit != wantAuto || d.Changed != s.changed {
		t.Fatalf("interval %d, hit rate %v: got limit %v, auto %v, changed %v (%q); want limit %v, auto %v, changed %v",
			s.n, s.hit, d.Limit, d.AutoLimit, d.Changed, d.Reason, s.limit, wantAuto, s.changed)
	}
	if s.reason != "" && d.Reason != s.reason {
		t.Fatalf("interval %d: reason %q, want %q", s.n, d.Reason, s.reason)
	}
	if doc.Limit != d.Limit || doc.Burst != d.Burst || doc.AutoLimit != d.AutoLimit {
		t.Fatalf("interval %d: document %+v disagrees with decision %+v", s.n, doc, d)
	}
	switch doc.Mode {
	case ModeAuto:
		if doc.Burst != DefaultBurst(doc.Limit) {
			t.Fatalf("interval %d: auto burst %d, want %d", s.n, doc.Burst, DefaultBurst(doc.Limit))
		}
		if d.Changed && (doc.Reason != d.Reason || !doc.UpdatedAt.Equal(now) || (doc.HitRate == nil || *doc.HitRate != s.hit)) {
			t.Fatalf("interval %d: changed document %+v does not carry the decision %q at %v", s.n, doc, d.Reason, now)
		}
		if !d.Changed && doc != before {
			t.Fatalf("interval %d: unchanged decision changed the document from %+v to %+v", s.n, before, doc)
		}
	case ModeManual:
		if doc.Limit != start.Limit || doc.Burst != start.Burst || doc.Reason != start.Reason {
			t.Fatalf("interval %d: manual document moved: %+v", s.n, doc)
		}
		if d.Changed && doc.AutoReason != d.Reason {
			t.Fatalf("interval %d: auto_reason %q, want %q", s.n, doc.AutoReason, d.Reason)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestControllerAdoptOwnDocumentChangesNothing(t *testing.T) {
	c := NewController(testConfig, autoDoc(250, at(0)))
	if d := c.Observe(at(3), 0.95); d.Limit != 350 {
		t.Fatalf("raise: got %v, want 350", d.Limit)
	}
	// The Service reads its own write back; that must not restart the
	// relapse watch or the raise wait.
	c.Adopt(c.Document(), at(4))
	if d := c.Observe(at(4), 0.70); d.Limit != 175 {
		t.Fatalf("after adopting its own document, a fall gave %v (%q), want the relapse cut to 175", d.Limit, d.Reason)
	}
}

func TestControllerRecordsNewBounds(t *testing.T) {
	start := autoDoc(500, time.Time{})
	start.Floor, start.Ceiling = 5, 2000
	c := NewController(testConfig, start)
	d := c.Observe(at(1), 0.85)
	if !d.Changed || d.Limit != 500 {
		t.Fatalf("got %+v; want an unchanged limit written with the new bounds", d)
	}
	if doc := c.Document(); doc.Floor != 10 || doc.Ceiling != 1000 || doc.Reason != "start" {
		t.Fatalf("document %+v: want floor 10, ceiling 1000 and the old reason", doc)
	}
	if d := c.Observe(at(2), 0.85); d.Changed {
		t.Fatalf("second observation changed again: %+v", d)
	}
}

func TestControllerConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*ControllerConfig)
	}{
		{"negative floor", func(c *ControllerConfig) { c.Floor = -1 }},
		{"zero ceiling", func(c *ControllerConfig) { c.Ceiling = 0 }},
		{"infinite ceiling", func(c *ControllerConfig) { c.Ceiling = math.Inf(1) }},
		{"floor above ceiling", func(c *ControllerConfig) { c.Floor = 2000 }},
		{"low above target", func(c *ControllerConfig) { c.Low = 0.95 }},
		{"target above 1", func(c *ControllerConfig) { c.Target = 1.5 }},
		{"NaN low", func(c *ControllerConfig) { c.Low = math.NaN() }},
		{"zero interval", func(c *ControllerConfig) { c.Interval = 0 }},
	}
	if err := testConfig.Validate(); err != nil {
		t.Fatalf("defaults refused: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig
			tt.edit(&cfg)
			if err := cfg.Validate(); !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("Validate() = %v, want ErrInvalidConfig", err)
			}
		})
	}
}

func TestControllerWaits(t *testing.T) {
	if got := testConfig.CutCooldown(); got != 10*time.Second {
		t.Errorf("CutCooldown = %v, want 2 intervals", got)
	}
	if got := testConfig.RaiseWait(); got != 15*time.Second {
		t.Errorf("RaiseWait = %v, want 3 intervals", got)
	}
	if got := testConfig.RelapseWindow(); got != 30*time.Second {
		t.Errorf("RelapseWindow = %v, want 6 intervals", got)
	}
	if got := testConfig.InitialStep(); got != 100 {
		t.Errorf("InitialStep = %v, want 100", got)
	}
	if got := testConfig.MinStep(); got != 10 {
		t.Errorf("MinStep = %v, want 10", got)
	}
}

// TestControllerKeepsPinnedAutoBurst: an operator's burst in auto mode
// stays while the controller moves the limit.
func TestControllerKeepsPinnedAutoBurst(t *testing.T) {
	cfg := ControllerConfig{Floor: 10, Ceiling: 1000, Low: 0.8, Target: 0.9, Interval: time.Second}
	doc := applySetting(InitialDocument(cfg, t0), Setting{Mode: ModeAuto, Burst: 7}, "op", t0, cfg, 0, false)
	if doc.Burst != 7 || doc.AutoBurst != 7 {
		t.Fatalf("after {auto, burst 7}: burst %d, auto_burst %d", doc.Burst, doc.AutoBurst)
	}
	c := NewController(cfg, doc)
	d := c.Observe(t0.Add(time.Minute), 0.1)
	if !d.Changed || d.Limit >= 1000 || d.Burst != 7 {
		t.Fatalf("a cut with a pinned burst: %+v, want the limit cut and burst 7", d)
	}
	doc = applySetting(c.Document(), Setting{Mode: ModeAuto}, "op", t0.Add(2*time.Minute), cfg, 0, false)
	if doc.AutoBurst != 0 || doc.Burst != DefaultBurst(doc.Limit) {
		t.Fatalf("{auto} without burst: burst %d auto_burst %d, want the derived burst", doc.Burst, doc.AutoBurst)
	}
}

// TestControllerCopyKeepsItsOwnHitRates: Service tries a step on a copy
// and drops it when the write fails; the hit rates the copy remembered
// must not leak into the original, which must still see the collapse.
func TestControllerCopyKeepsItsOwnHitRates(t *testing.T) {
	c := NewController(testConfig, autoDoc(1000, time.Time{}))
	c.Observe(at(1), 0.97)
	trial := *c
	if d := trial.Observe(at(2), 0.88); d.Limit != 10 {
		t.Fatalf("the copy: %+v, want the collapse cut to 10", d)
	}
	trial.Observe(at(3), 0.99)
	if d := c.Observe(at(2), 0.89); d.Limit != 10 || d.Reason != "hit rate fell from 0.97 to 0.89 within 10s: cut from 1000 to the floor of 10" {
		t.Fatalf("the original after its copy moved on: %+v, want the collapse cut from 0.97", d)
	}
}
