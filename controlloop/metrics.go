package controlloop

import (
	"time"

	"github.com/mcrib/mcrib/mcribapi"
)

// Metrics receives the loop's events. Gauges (generation, freeze, last
// reconcile) are read from Loop.Status by the metrics exporter instead. The
// implementation must be safe for concurrent use.
type Metrics interface {
	// Pass counts one reconcile pass by result (mcribapi.Outcomes).
	Pass(result mcribapi.Outcome, d time.Duration)
	// Replacement counts one node taken out of its slot, by reason
	// (mcribapi.ReplacementReasons: "hold_expired", "maintenance" or
	// "replace", an operator's replace).
	Replacement(reason mcribapi.EvictionReason)
	// Flush counts one flush_all, by reason: "placement" (a spare placed
	// into a slot) or "returned" (a slot holder answering again after it
	// was unreachable).
	Flush(reason string)
	// ConfigWrite records one write of a config file kept in step with the
	// slot map, by kind (ConfigKinds): a failure when err is not nil, else
	// a success at the time at.
	ConfigWrite(kind string, at time.Time, err error)
	// SlotMove counts one slot given to a new holder by a move (a
	// replacement, a drain or return step, a replace), by kind:
	// mcribapi.MoveWarm (the old holder warms the new one) or
	// mcribapi.MoveCold.
	SlotMove(kind mcribapi.MoveKind)
}

// FlushReasons lists the reasons of Metrics.Flush, so that an exporter can
// create each at 0; the other label values are mcribapi's vocabularies
// (mcribapi.Outcomes, mcribapi.ReplacementReasons, mcribapi.MoveKinds).
func FlushReasons() []string { return []string{"placement", "returned"} }

type nopMetrics struct{}

func (nopMetrics) Pass(mcribapi.Outcome, time.Duration) {}
func (nopMetrics) Replacement(mcribapi.EvictionReason)  {}
func (nopMetrics) Flush(string)                         {}
func (nopMetrics) ConfigWrite(string, time.Time, error) {}
func (nopMetrics) SlotMove(mcribapi.MoveKind)           {}
