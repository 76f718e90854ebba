package controlloop

import (
	"time"

	"github.com/mcrib/mcrib/slotplan"
)

// Metrics receives the loop's events. Gauges (generation, freeze, last
// reconcile) are read from Status by the metrics exporter instead. The
// implementation must be safe for concurrent use.
type Metrics interface {
	// Pass counts one reconcile pass by result: "ok", "error",
	// "conflict", "follower" or "waiting".
	Pass(result string, d time.Duration)
	// Replacement counts one node taken out of its slot, by reason:
	// "hold_expired", "maintenance" or "replace" (an operator's replace).
	Replacement(reason string)
	// Flush counts one flush_all, by reason: "placement" (a spare placed
	// into a slot) or "returned" (a slot holder answering again after it
	// was unreachable).
	Flush(reason string)
	// ConfigWrite records one write of a config file kept in step with the
	// slot map, by kind (ConfigKinds): a failure when err is not nil, else
	// a success at the time at.
	ConfigWrite(kind string, at time.Time, err error)
	// SlotMove counts one slot given to a new holder by a move (a
	// replacement, a drain or return step, a replace), by kind: "warm"
	// (the old holder warms the new one) or "cold".
	SlotMove(kind string)
}

// Label values the loop uses, so an exporter can create each at 0.
var (
	PassResults        = []string{OutcomeOK, OutcomeError, OutcomeConflict, OutcomeFollower, OutcomeWaiting}
	ReplacementReasons = []string{"hold_expired", "maintenance", slotplan.ReasonReplace}
	FlushReasons       = []string{"placement", "returned"}
)

type nopMetrics struct{}

func (nopMetrics) Pass(string, time.Duration)           {}
func (nopMetrics) Replacement(string)                   {}
func (nopMetrics) Flush(string)                         {}
func (nopMetrics) ConfigWrite(string, time.Time, error) {}
func (nopMetrics) SlotMove(string)                      {}
