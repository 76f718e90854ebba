package ratelimit

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The two modes of the boot limit.
const (
	// ModeAuto lets the controller move the limit with the hit rate.
	ModeAuto = "auto"
	// ModeManual pins the limit to the operator's value; the controller
	// keeps computing its own limit (Document.AutoLimit) but does not
	// enforce it.
	ModeManual = "manual"
)

// maxBurst bounds every burst, so a huge limit cannot overflow an int.
const maxBurst = 1_000_000_000

// ErrBadDocument is wrapped by the errors ParseDocument returns for a stored
// boot-limit document that is not valid JSON or breaks the document's rules.
var ErrBadDocument = errors.New("ratelimit: invalid boot-limit document")

// Document is the boot-limit document of CONTRACT.md section 5. It is stored
// in Consul KV at Key(kvPrefix, pool), served by GET /v1/ratelimit and
// followed by Client. The zero value is not a valid document; build one with
// InitialDocument or ParseDocument. A Document is a plain value.
type Document struct {
	// Mode is ModeAuto or ModeManual.
	Mode string `json:"mode"`
	// Limit is the enforced boot limit in boots per second (finite, >= 0).
	Limit float64 `json:"limit"`
	// Burst is the number of boots admitted at once after a quiet spell
	// (>= 1). In auto mode it is AutoBurst when an operator pinned one,
	// else DefaultBurst(Limit).
	Burst int `json:"burst"`
	// AutoBurst, when above 0, is the burst an operator pinned for auto
	// mode ({"mode": "auto", "burst": B}); the controller keeps it as it
	// moves the limit.
	AutoBurst int `json:"auto_burst,omitempty"`
	// HitRate is the pool's smoothed hit rate (0..1) when the document was
	// last written; nil (JSON null) when it was not known then.
	// Service.Document shows the live value instead, null while unknown,
	// as the status document does. It is never written through: a new
	// value is a new pointer (RateOf), so copies of a Document stay
	// independent.
	HitRate *float64 `json:"hit_rate"`
	// Floor and Ceiling bound the limit in auto mode.
	Floor   float64 `json:"floor"`
	Ceiling float64 `json:"ceiling"`
	// UpdatedAt is when the document last changed.
	UpdatedAt time.Time `json:"updated_at"`
	// Reason is one sentence saying why the limit has its value.
	Reason string `json:"reason"`
	// AutoLimit is the limit the controller would enforce. It equals Limit
	// in auto mode; in manual mode it keeps moving with the hit rate.
	AutoLimit float64 `json:"auto_limit"`
	// AutoReason says why AutoLimit has its value while the mode is manual;
	// it is empty in auto mode.
	AutoReason string `json:"auto_reason,omitempty"`
	// SlowStart is true while a boot surge's slow start caps admissions
	// below Limit (see SlowStart); EffectiveLimit is then that cap, in
	// boots per second. Both are the leader's live state, shown by
	// Service.Document (GET /v1/ratelimit) and never stored in Consul;
	// Limit stays the controller's (or the operator's) limit.
	SlowStart      bool    `json:"slow_start,omitempty"`
	EffectiveLimit float64 `json:"effective_limit,omitempty"`
}

// Key returns the Consul KV key of the boot-limit document of pool under
// kvPrefix: "<kv-prefix>/<pool>/bootlimit".
func Key(kvPrefix, pool string) string {
	prefix := strings.Trim(kvPrefix, "/")
	if prefix == "" {
		return pool + "/bootlimit"
	}
	return prefix + "/" + pool + "/bootlimit"
}

// RateOf returns a pointer to a copy of h, for Document.HitRate.
func RateOf(h float64) *float64 { return &h }

// Equal reports whether d and o are the same document: every field equal,
// the hit rates by value (both unknown, or both known and equal).
func (d Document) Equal(o Document) bool {
	dh, oh := d.HitRate, o.HitRate
	d.HitRate, o.HitRate = nil, nil
	if d != o || (dh == nil) != (oh == nil) {
		return false
	}
	return dh == nil || *dh == *oh
}

// autoBurst returns the burst that goes with limit in auto mode for d.
func (d Document) autoBurst(limit float64) int {
	if d.AutoBurst > 0 {
		return d.AutoBurst
	}
	return DefaultBurst(limit)
}

// DefaultBurst returns the burst that goes with limit when none is given:
// a tenth of a second's worth of boots, at least 1 (1000 -> 100, 250 -> 25,
// 5 -> 1).
func DefaultBurst(limit float64) int {
	if !(limit > 0) {
		return 1
	}
	b := math.Ceil(limit / 10)
	if b > maxBurst {
		return maxBurst
	}
	return max(1, int(b))
}

// InitialDocument returns the document of a new pool: auto mode at the
// ceiling, because a healthy cache is not throttled.
func InitialDocument(cfg ControllerConfig, now time.Time) Document {
	return Document{
		Mode:      ModeAuto,
		Limit:     cfg.Ceiling,
		Burst:     DefaultBurst(cfg.Ceiling),
		Floor:     cfg.Floor,
		Ceiling:   cfg.Ceiling,
		UpdatedAt: stamp(now),
		Reason:    fmt.Sprintf("new pool: starting in auto mode at the ceiling of %s boots/s", fmtLimit(cfg.Ceiling)),
		AutoLimit: cfg.Ceiling,
	}
}

// ParseDocument decodes and checks a stored boot-limit document. Unknown
// fields are ignored (a newer mcrib may add some); a bad mode, a negative or
// missing limit, or a burst below 1 is refused with an error wrapping
// ErrBadDocument.
func ParseDocument(b []byte) (Document, error) {
	var d Document
	if err := json.Unmarshal(b, &d); err != nil {
		return Document{}, fmt.Errorf("%w: %v", ErrBadDocument, err)
	}
	if err := d.Validate(); err != nil {
		return Document{}, err
	}
	return d, nil
}

// Validate reports whether d obeys the document's rules, with an error
// wrapping ErrBadDocument when it does not.
func (d Document) Validate() error {
	switch {
	case d.Mode != ModeAuto && d.Mode != ModeManual:
		return fmt.Errorf("%w: mode %q is neither %q nor %q", ErrBadDocument, d.Mode, ModeAuto, ModeManual)
	case !finite(d.Limit) || d.Limit < 0:
		return fmt.Errorf("%w: limit %v is not a finite number at least 0", ErrBadDocument, d.Limit)
	case d.Burst < 1 || d.Burst > maxBurst:
		return fmt.Errorf("%w: burst %d is not between 1 and %d", ErrBadDocument, d.Burst, maxBurst)
	case d.AutoBurst < 0 || d.AutoBurst > maxBurst:
		return fmt.Errorf("%w: auto_burst %d is not between 0 and %d", ErrBadDocument, d.AutoBurst, maxBurst)
	case d.HitRate != nil && !(*d.HitRate >= 0 && *d.HitRate <= 1):
		return fmt.Errorf("%w: hit_rate %v is not between 0 and 1", ErrBadDocument, *d.HitRate)
	case !finite(d.AutoLimit) || d.AutoLimit < 0:
		return fmt.Errorf("%w: auto_limit %v is not a finite number at least 0", ErrBadDocument, d.AutoLimit)
	}
	return nil
}

// finite reports whether x is neither NaN nor infinite.
func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// stamp turns a clock reading into the form stored in documents: UTC,
// millisecond precision, no monotonic reading.
func stamp(now time.Time) time.Time { return now.UTC().Truncate(time.Millisecond) }

// fmtLimit formats a limit for a reason sentence: 250, 62.5, 0.25.
func fmtLimit(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// fmtRate formats hit rate h for a sentence that compares it with
// threshold: two decimals, more when two would make them look equal
// ("0.795 below 0.80", not "0.80 below 0.80").
func fmtRate(h, threshold float64) string {
	for prec := 2; prec < 6; prec++ {
		s := strconv.FormatFloat(h, 'f', prec, 64)
		if s != strconv.FormatFloat(threshold, 'f', prec, 64) || h == threshold {
			return s
		}
	}
	return strconv.FormatFloat(h, 'f', -1, 64)
}

// fmtThreshold formats a configured hit-rate threshold: 0.80, 0.9 -> 0.90.
func fmtThreshold(t float64) string {
	s := strconv.FormatFloat(t, 'f', -1, 64)
	if two := strconv.FormatFloat(t, 'f', 2, 64); len(s) < len(two) {
		return two
	}
	return s
}
