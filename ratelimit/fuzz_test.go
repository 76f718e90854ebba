package ratelimit

import (
	"math"
	"testing"
	"time"
)

var fuzzT0 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// fuzzConfig is the controller configuration of the fuzz targets: the
// defaults of mcrib serve.
var fuzzConfig = ControllerConfig{Floor: 10, Ceiling: 1000, Low: 0.8, Target: 0.9, Interval: 5 * time.Second}

// FuzzAdmitter checks that an admitter never admits more than its burst
// plus its limit times the time elapsed, whatever the limit, the burst and
// the pattern of calls.
func FuzzAdmitter(f *testing.F) {
	f.Add(100.0, 10, []byte{0, 0, 0, 5, 200, 0})
	f.Add(0.5, 1, []byte{1, 2, 3, 255, 255})
	f.Add(1e6, 1000, []byte{0, 0, 0, 0, 1})
	f.Add(0.0, 3, []byte{9, 9})
	f.Fuzz(func(t *testing.T, limit float64, burst int, steps []byte) {
		if math.IsNaN(limit) || limit < 0 || limit > 1e7 || burst < 1 || burst > 10000 || len(steps) > 4096 {
			return
		}
		a := NewAdmitter(limit, burst)
		now := fuzzT0
		admitted := 0
		for _, s := range steps {
			// The low bits move the clock (0..31 ms), the high bits say how
			// many boots ask at once (1..8).
			now = now.Add(time.Duration(s&31) * time.Millisecond)
			for range 1 + int(s>>5) {
				if ok, _ := a.Admit(now); ok {
					admitted++
				}
			}
			bound := float64(burst) + limit*now.Sub(fuzzT0).Seconds()
			if float64(admitted) > bound+1e-6*bound+1e-9 {
				t.Fatalf("limit %v burst %d: %d admitted after %v, bound %v", limit, burst, admitted, now.Sub(fuzzT0), bound)
			}
		}
	})
}

// FuzzParseSetting checks that a PUT /v1/ratelimit body that is accepted
// yields a valid document, which stays valid after controller steps.
func FuzzParseSetting(f *testing.F) {
	f.Add([]byte(`{"mode": "manual", "limit": 2.5, "burst": 3}`))
	f.Add([]byte(`{"mode": "auto"}`))
	f.Add([]byte(`{"mode": "auto", "burst": 1000000000}`))
	f.Add([]byte(`{"mode": "manual", "limit": 1e308}`))
	f.Add([]byte(`{"mode": "manual", "limit": 0}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		st, err := ParseSetting(body)
		if err != nil {
			return
		}
		if err := st.Validate(); err != nil {
			t.Fatalf("ParseSetting accepted %s, Validate refuses it: %v", body, err)
		}
		for _, base := range []Document{InitialDocument(fuzzConfig, fuzzT0), applySetting(InitialDocument(fuzzConfig, fuzzT0), Setting{Mode: ModeManual, Limit: 3}, "", fuzzT0, fuzzConfig, 0, false)} {
			if st.Mode == ModeAuto && base.Mode == ModeAuto {
				continue // callers do not apply auto to auto
			}
			doc := applySetting(base, st, "operator", fuzzT0.Add(time.Second), fuzzConfig, 0.5, true)
			if err := doc.Validate(); err != nil {
				t.Fatalf("setting %s gives an invalid document: %v\n%+v", body, err, doc)
			}
			stepController(t, doc)
		}
	})
}

// FuzzParseDocument checks that a stored boot-limit document that is
// accepted stays valid after controller steps.
func FuzzParseDocument(f *testing.F) {
	f.Add([]byte(`{"mode": "auto", "limit": 250.0, "burst": 25, "hit_rate": 0.72, "floor": 10, "ceiling": 1000, "updated_at": "2026-11-29T13:00:00Z", "reason": "cut"}`))
	f.Add([]byte(`{"mode": "manual", "limit": 0, "burst": 1, "auto_limit": 5}`))
	f.Add([]byte(`{"mode": "auto", "limit": 1e300, "burst": 1000000000, "auto_burst": 1000000000}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		doc, err := ParseDocument(b)
		if err != nil {
			return
		}
		stepController(t, doc)
	})
}

// stepController runs a controller from doc over hit rates that cut, hold
// and raise, and fails when a document it produces is invalid.
func stepController(t *testing.T, doc Document) {
	t.Helper()
	c := NewController(fuzzConfig, doc)
	now := fuzzT0
	for _, h := range []float64{0.5, 0.5, 0.85, 0.95, 0.95, 0.99, math.NaN(), 2, 0.1} {
		now = now.Add(fuzzConfig.Interval * 7)
		c.Observe(now, h)
		if err := c.Document().Validate(); err != nil {
			t.Fatalf("from %+v, a step at hit rate %v gives an invalid document: %v\n%+v", doc, h, err, c.Document())
		}
	}
}
