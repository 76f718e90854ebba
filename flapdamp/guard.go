package flapdamp

import (
	"fmt"
	"strconv"
)

// MassGuard is the mass-disruption guard: when more than MaxAbsentFraction of
// the serving nodes are absent at once, the observer (Consul, the network,
// mcrib itself) is more likely broken than the fleet, and replacements stop
// (an automatic freeze). It follows mcrouter's maximum_soft_tkos and the
// Kubernetes node lifecycle controller, which stops evicting when most of a
// zone is unready.
//
// The zero value (MaxAbsentFraction 0) trips as soon as one serving node is
// absent; a MaxAbsentFraction of 1 or more never trips. MassGuard is a value
// with no state and is safe for concurrent use.
type MassGuard struct {
	// MaxAbsentFraction is the largest fraction of serving nodes that may
	// be absent at once without tripping (mcrib serve --max-absent-fraction),
	// in 0..1. Exactly this fraction does not trip; anything above does.
	MaxAbsentFraction float64
}

// Check reports whether replacements must stop because absent of the serving
// slot-holding nodes are absent at once, more than MaxAbsentFraction of them.
// When tripped, reason is one sentence for the status document's
// auto_freeze_reason, for example "3 of 4 serving nodes (75%) are absent,
// above the 25% limit: replacements stop until fewer are absent"; otherwise
// reason is "". With no serving nodes (serving <= 0) or none absent the guard
// never trips.
func (g MassGuard) Check(serving, absent int) (tripped bool, reason string) {
	if serving <= 0 || absent <= 0 {
		return false, ""
	}
	// Division is correctly rounded, so a ratio equal to the limit as a
	// decimal (1 of 4 against 0.25, 3 of 10 against 0.3) compares equal;
	// comparing absent with MaxAbsentFraction*serving would not.
	frac := float64(absent) / float64(serving)
	if !(frac > g.MaxAbsentFraction) {
		return false, ""
	}
	got, limit := percents(frac, g.MaxAbsentFraction)
	noun, verb := "nodes", "are"
	if serving == 1 {
		noun = "node"
	}
	if absent == 1 {
		verb = "is"
	}
	return true, fmt.Sprintf("%d of %d serving %s (%s%%) %s absent, above the %s%% limit: replacements stop until fewer are absent",
		absent, serving, noun, got, verb, limit)
}

// percents formats two fractions as percentages with the fewest decimals
// (at most 6) that keep them apart, so the reason never reads "33% … above
// the 33% limit".
func percents(a, b float64) (string, string) {
	var sa, sb string
	for prec := 0; prec <= 6; prec++ {
		sa = strconv.FormatFloat(a*100, 'f', prec, 64)
		sb = strconv.FormatFloat(b*100, 'f', prec, 64)
		if sa != sb {
			break
		}
	}
	return sa, sb
}

// CheckUnreachable is the same guard over the slot holders that mcrib's
// probes (by the pool's verdict) cannot reach: when more than
// MaxAbsentFraction of them are unreachable at once, the observer (mcrib's
// host, its network) is more likely at fault than the nodes (invariant 7),
// and none of them may lose its slot or its contents because of it. The
// reason is one sentence for auto_freeze_reason. One node alone is never a
// mass episode: a single unreachable holder is judged on its own, whatever
// the pool's size.
func (g MassGuard) CheckUnreachable(holders, unreachable int) (tripped bool, reason string) {
	if holders <= 0 || unreachable < 2 {
		return false, ""
	}
	frac := float64(unreachable) / float64(holders)
	if !(frac > g.MaxAbsentFraction) {
		return false, ""
	}
	got, limit := percents(frac, g.MaxAbsentFraction)
	return true, fmt.Sprintf("%d of %d slot holders (%s%%) are unreachable at once, above the %s%% limit: taken as a fault of the observer or the network between, nothing is flushed or replaced because of it",
		unreachable, holders, got, limit)
}
