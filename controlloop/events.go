package controlloop

import (
	"fmt"
	"log/slog"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/eventlog"
	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/slotplan"
)

// EventSink receives the loop's decisions and the node transitions it
// observes (GET /v1/events, GET /v1/history); eventlog.Recorder implements
// it. Record is called when a pass or an observation is told (publish.go),
// never with the loop's mutex held: it may read the Loop (Status,
// SlotMap), but must not start a pass (Reconcile, Replace) and must not
// block.
type EventSink interface {
	Record(e mcribapi.Event)
}

var _ EventSink = eventlog.Recorder{}

// changeLog adds the log lines of a written map: its replacements and
// placements, the warmings that ended, and the generation when it rose.
func (l *Loop) changeLog(r *report, prev, next *cachenodes.SlotMap, plan slotplan.Plan, done []slotplan.Placement) {
	for _, ev := range plan.Evictions {
		if !ev.Move {
			r.log(slog.LevelWarn, "slot replacement", "slot", ev.Slot, "node", ev.Node.ID, "reason", ev.Reason, "why", ev.Why)
		}
	}
	for _, p := range done {
		if p.From.IsZero() || p.Reason == slotplan.EvictionHoldExpired || (p.Reason == slotplan.EvictionMaintenance && !p.Warm) {
			r.log(slog.LevelInfo, "slot placement", "slot", p.Slot, "node", p.Node.ID, "addr", p.Node.Addr, "flushed", !plan.FirstFill)
			continue
		}
		r.log(slog.LevelInfo, "slot move", "slot", p.Slot, "from", p.From.ID, "to", p.Node.ID, "reason", p.Reason, "kind", moveKind(p.Warm && l.opts.WarmFor > 0))
	}
	for _, i := range plan.EndWarming {
		r.log(slog.LevelInfo, "warming over", "slot", i)
	}
	if prev == nil || prev.Generation() != next.Generation() {
		r.log(slog.LevelInfo, "slot map written", "generation", next.Generation())
	}
}

// changeEvents adds the events of a written map: its replacements, moves,
// placements and warmings, decided from in (replace: the operator's
// replace the pass carried out, nil when none).
func (l *Loop) changeEvents(r *report, in *slotplan.Input, plan slotplan.Plan, done []slotplan.Placement, replace *replaceRequest) {
	for _, ev := range plan.Evictions {
		if ev.Move {
			continue // told with its placement, if carried out
		}
		slot := ev.Slot
		r.tracedEvent(mcribapi.Event{Kind: mcribapi.EventReplacement, Node: ev.Node.ID, Slot: &slot, Reason: ev.Why})
	}
	why := make(map[int]string, len(plan.Evictions))
	for _, ev := range plan.Evictions {
		why[ev.Slot] = ev.Why
	}
	for _, p := range done {
		slot := p.Slot
		kind, reason := mcribapi.EventPlacement, "a spare takes a vacant slot, flushed first"
		switch {
		case plan.FirstFill:
			reason = "the first fill of a new pool"
		case p.Reason == slotplan.EvictionDrain:
			kind, reason = mcribapi.EventDrainStep, why[p.Slot]
		case p.Reason == slotplan.EvictionReturn:
			kind, reason = mcribapi.EventReturnStep, why[p.Slot]
		case p.Reason == slotplan.EvictionSplit:
			kind, reason = mcribapi.EventSplitStep, why[p.Slot]
		case p.Reason == slotplan.EvictionReplace:
			kind, reason = mcribapi.EventReplace, why[p.Slot]
			if replace != nil {
				reason += ": " + replace.reason
			}
		case !p.From.IsZero():
			reason = fmt.Sprintf("a spare takes slot %d of node %s, flushed first", p.Slot, p.From.ID)
		}
		if !p.From.IsZero() && !plan.FirstFill {
			reason += fmt.Sprintf("; %s takes it, %s", p.Node.ID, moveKind(p.Warm && l.opts.WarmFor > 0))
		}
		e := mcribapi.Event{Kind: kind, Node: p.Node.ID, Slot: &slot, Reason: reason}
		if kind == mcribapi.EventReplace && replace != nil {
			e.Who = replace.by
		}
		r.tracedEvent(e)
		if p.Warm && l.opts.WarmFor > 0 {
			r.tracedEvent(mcribapi.Event{Kind: mcribapi.EventWarmStart, Node: p.From.ID, Slot: &slot,
				Reason: fmt.Sprintf("node %s warms slot %d's new holder %s for %s", p.From.ID, p.Slot, p.Node.ID, l.opts.WarmFor)})
		}
	}
	now := l.clock.Now()
	for _, i := range plan.EndWarming {
		slot := i
		e := mcribapi.Event{Kind: mcribapi.EventWarmEnd, Slot: &slot, Reason: fmt.Sprintf("the warming of slot %d ends", i)}
		if in.Prev != nil {
			if w := in.Prev.Warming(i); w != nil {
				e.Node = w.NodeID
				why := "its warm source stopped answering"
				if !now.Before(in.WarmEnd(i)) {
					why = "--warm-for passed"
				}
				e.Reason = fmt.Sprintf("node %s no longer warms slot %d (%s)", w.NodeID, i, why)
			}
		}
		r.tracedEvent(e)
	}
}

// flushEvent adds a flush that was carried out, and why.
func flushEvent(r *report, node, why string) {
	r.tracedEvent(mcribapi.Event{Kind: mcribapi.EventFlush, Node: node, Reason: why})
}

// autoFreezeEvent adds a change of the automatic freeze: reason is the new
// reason, empty when it lifted.
func autoFreezeEvent(r *report, reason string) {
	if reason == "" {
		r.event(mcribapi.Event{Kind: mcribapi.EventAutoFreezeLifted, Reason: "the automatic freeze lifted"})
		return
	}
	r.event(mcribapi.Event{Kind: mcribapi.EventAutoFreeze, Reason: reason})
}
