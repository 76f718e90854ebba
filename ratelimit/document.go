package ratelimit

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/mcrib/mcrib/mcribapi"
)

// The two modes of the boot limit (mcribapi.BootModeAuto and
// mcribapi.BootModeManual).
const (
	// ModeAuto lets the controller move the limit with the hit rate.
	ModeAuto = mcribapi.BootModeAuto
	// ModeManual pins the limit to the operator's value; the controller
	// keeps computing its own limit (Document.AutoLimit) but does not
	// enforce it.
	ModeManual = mcribapi.BootModeManual
)

// maxBurst bounds every burst, so a huge limit cannot overflow an int.
const maxBurst = mcribapi.MaxBurst

// ErrBadDocument is wrapped by the errors ParseDocument returns for a stored
// boot-limit document that is not valid JSON or breaks the document's rules.
var ErrBadDocument = mcribapi.ErrBadBootLimit

// Document is the boot-limit document, mcribapi.BootLimit. It is stored in
// Consul KV at Key(kvPrefix, pool), served by GET /v1/ratelimit and
// followed by Client. The zero value is not a valid document; build one
// with InitialDocument or ParseDocument.
type Document = mcribapi.BootLimit

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

// autoBurst returns the burst that goes with limit in auto mode for d.
func autoBurst(d Document, limit float64) int {
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

// ParseDocument decodes and checks a stored boot-limit document
// (mcribapi.ParseBootLimit). Unknown fields are ignored (a newer mcrib may
// add some); a bad mode, a negative or missing limit, or a burst below 1
// is refused with an error wrapping ErrBadDocument.
func ParseDocument(b []byte) (Document, error) { return mcribapi.ParseBootLimit(b) }

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
