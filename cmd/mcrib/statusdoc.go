package main

import (
	"github.com/mcrib/mcrib/controlloop"
	"github.com/mcrib/mcrib/ratelimit"
)

// statusDocument is the status document of GET /v1/status (CONTRACT.md
// section 3): the control loop's status with the boot limiter's hit rate
// and boot-limit document. The API composes it with newStatusDocument and
// `mcrib status` decodes it; it is a plain value.
type statusDocument struct {
	controlloop.Status
	// HitRate and BootLimit take the place of the loop's fields of the same
	// JSON names, which the loop does not fill.
	// HitRate is null while no interval with traffic has been measured.
	HitRate   *float64           `json:"hit_rate"`
	BootLimit ratelimit.Document `json:"boot_limit"`
}

// newStatusDocument composes the status document from the loop's status and
// the boot limiter's document.
func newStatusDocument(st controlloop.Status, boot ratelimit.Document) statusDocument {
	return statusDocument{Status: st, HitRate: boot.HitRate, BootLimit: boot}
}

// hitRateSource tells whether a hit rate was measured; *ratelimit.Service
// implements it.
type hitRateSource interface {
	HitRate() (rate float64, ok bool)
}

// withKnownHitRate makes doc's hit rate null while boot has measured no
// interval with traffic (before any traffic, on a follower), so that it
// does not read as a cold cache.
func withKnownHitRate(doc statusDocument, boot bootLimiter) statusDocument {
	if hr, ok := boot.(hitRateSource); ok {
		if _, known := hr.HitRate(); !known {
			doc.HitRate = nil
		}
	}
	return doc
}
