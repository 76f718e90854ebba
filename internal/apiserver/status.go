package apiserver

import (
	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/ratelimit"
)

// mcribapi.Status completes the loop's status st into the status document
// of GET /v1/status with the boot limiter's hit rate and boot-limit
// document.
func statusDocument(st mcribapi.Status, boot ratelimit.Document) mcribapi.Status {
	st.HitRate, st.BootLimit = boot.HitRate, boot
	return st
}

// hitRateSource tells whether a hit rate was measured; *ratelimit.Service
// implements it.
type hitRateSource interface {
	HitRate() (rate float64, ok bool)
}

// withKnownHitRate makes doc's hit rate null while boot has measured no
// interval with traffic (before any traffic, on a follower), so that it
// does not read as a cold cache.
func withKnownHitRate(doc mcribapi.Status, boot BootLimiter) mcribapi.Status {
	if hr, ok := boot.(hitRateSource); ok {
		if _, known := hr.HitRate(); !known {
			doc.HitRate = nil
		}
	}
	return doc
}
