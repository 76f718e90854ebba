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
	HitRate   float64            `json:"hit_rate"`
	BootLimit ratelimit.Document `json:"boot_limit"`
}

// newStatusDocument composes the status document from the loop's status and
// the boot limiter's document.
func newStatusDocument(st controlloop.Status, boot ratelimit.Document) statusDocument {
	return statusDocument{Status: st, HitRate: boot.HitRate, BootLimit: boot}
}
