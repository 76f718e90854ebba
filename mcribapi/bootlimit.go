package mcribapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// The two modes of the boot limit.
const (
	// BootModeAuto lets the controller move the limit with the hit rate.
	BootModeAuto = "auto"
	// BootModeManual pins the limit to the operator's value; the
	// controller keeps computing its own limit (BootLimit.AutoLimit) but
	// does not enforce it.
	BootModeManual = "manual"
)

// MaxBurst bounds every burst, so a huge limit cannot overflow an int.
const MaxBurst = 1_000_000_000

// ErrBadBootLimit is wrapped by the errors of ParseBootLimit and
// BootLimit.Validate for a document that is not valid JSON or breaks the
// document's rules.
var ErrBadBootLimit = errors.New("mcribapi: invalid boot-limit document")

// BootLimit is the boot-limit document: stored in Consul KV, served by
// GET and PUT /v1/ratelimit and as the status's boot_limit, and followed by
// ratelimit.Client. The zero value is not a valid document (see
// ratelimit.InitialDocument and ParseBootLimit). A BootLimit is a plain
// value.
type BootLimit struct {
	// Mode is BootModeAuto or BootModeManual.
	Mode string `json:"mode"`
	// Limit is the enforced boot limit in boots per second (finite, >= 0).
	Limit float64 `json:"limit"`
	// Burst is the number of boots admitted at once after a quiet spell
	// (>= 1). In auto mode it is AutoBurst when an operator pinned one,
	// else ratelimit.DefaultBurst(Limit).
	Burst int `json:"burst"`
	// AutoBurst, when above 0, is the burst an operator pinned for auto
	// mode ({"mode": "auto", "burst": B}); the controller keeps it as it
	// moves the limit.
	AutoBurst int `json:"auto_burst,omitempty"`
	// HitRate is the pool's smoothed hit rate (0..1) when the document was
	// last written; nil (JSON null) when it was not known then.
	// ratelimit.Service.Document shows the live value instead, null while
	// unknown, as the status document does. It is never written through:
	// a new value is a new pointer (ratelimit.RateOf), so copies of a
	// BootLimit stay independent.
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
	// below Limit (ratelimit.SlowStart); EffectiveLimit is then that cap,
	// in boots per second. Both are the leader's live state, shown by GET
	// /v1/ratelimit and never stored in Consul; Limit stays the
	// controller's (or the operator's) limit.
	SlowStart      bool    `json:"slow_start,omitempty"`
	EffectiveLimit float64 `json:"effective_limit,omitempty"`
}

// Equal reports whether d and o are the same document: every field equal,
// the hit rates by value (both unknown, or both known and equal).
func (d BootLimit) Equal(o BootLimit) bool {
	dh, oh := d.HitRate, o.HitRate
	d.HitRate, o.HitRate = nil, nil
	if d != o || (dh == nil) != (oh == nil) {
		return false
	}
	return dh == nil || *dh == *oh
}

// ParseBootLimit decodes and checks a stored boot-limit document. Unknown
// fields are ignored (a newer mcrib may add some); a bad mode, a negative or
// missing limit, or a burst below 1 is refused with an error wrapping
// ErrBadBootLimit.
func ParseBootLimit(b []byte) (BootLimit, error) {
	var d BootLimit
	if err := json.Unmarshal(b, &d); err != nil {
		return BootLimit{}, fmt.Errorf("%w: %v", ErrBadBootLimit, err)
	}
	if err := d.Validate(); err != nil {
		return BootLimit{}, err
	}
	return d, nil
}

// Validate reports whether d obeys the document's rules, with an error
// wrapping ErrBadBootLimit when it does not.
func (d BootLimit) Validate() error {
	switch {
	case d.Mode != BootModeAuto && d.Mode != BootModeManual:
		return fmt.Errorf("%w: mode %q is neither %q nor %q", ErrBadBootLimit, d.Mode, BootModeAuto, BootModeManual)
	case !finite(d.Limit) || d.Limit < 0:
		return fmt.Errorf("%w: limit %v is not a finite number at least 0", ErrBadBootLimit, d.Limit)
	case d.Burst < 1 || d.Burst > MaxBurst:
		return fmt.Errorf("%w: burst %d is not between 1 and %d", ErrBadBootLimit, d.Burst, MaxBurst)
	case d.AutoBurst < 0 || d.AutoBurst > MaxBurst:
		return fmt.Errorf("%w: auto_burst %d is not between 0 and %d", ErrBadBootLimit, d.AutoBurst, MaxBurst)
	case d.HitRate != nil && !(*d.HitRate >= 0 && *d.HitRate <= 1):
		return fmt.Errorf("%w: hit_rate %v is not between 0 and 1", ErrBadBootLimit, *d.HitRate)
	case !finite(d.AutoLimit) || d.AutoLimit < 0:
		return fmt.Errorf("%w: auto_limit %v is not a finite number at least 0", ErrBadBootLimit, d.AutoLimit)
	}
	return nil
}

// finite reports whether x is neither NaN nor infinite.
func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// BootLimitRequest is the body of PUT /v1/ratelimit, which
// ratelimit.ParseSetting reads: {"mode": "manual", "limit": N} or
// {"mode": "auto"}, with an optional burst. A field left nil is not sent.
type BootLimitRequest struct {
	Mode  string   `json:"mode"`
	Limit *float64 `json:"limit,omitempty"`
	Burst *int     `json:"burst,omitempty"`
}
