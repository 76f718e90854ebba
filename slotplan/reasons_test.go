package slotplan

import (
	"slices"
	"testing"

	"github.com/mcrib/mcrib/mcribapi"
)

// TestEvictionReasonsAreTheWires: the planner's eviction reasons are the
// wire vocabulary's, value for value, and agree on which are replacements.
func TestEvictionReasonsAreTheWires(t *testing.T) {
	wire := []mcribapi.EvictionReason{mcribapi.EvictionHoldExpired, mcribapi.EvictionMaintenance, mcribapi.EvictionReplace,
		mcribapi.EvictionDrain, mcribapi.EvictionReturn, mcribapi.EvictionSplit}
	mine := EvictionReasons()
	if len(mine) != len(wire) {
		t.Fatalf("the planner has %d eviction reasons, the wire %d", len(mine), len(wire))
	}
	for i, r := range mine {
		w := mcribapi.EvictionReason(r)
		if w != wire[i] {
			t.Errorf("reason %d: the planner's %q, the wire's %q", i, r, wire[i])
		}
		if r.IsReplacement() != w.IsReplacement() || r.IsReplacement() != slices.Contains(mcribapi.ReplacementReasons(), w) {
			t.Errorf("%q: a replacement for the planner %v, for the wire %v", r, r.IsReplacement(), w.IsReplacement())
		}
	}
}
