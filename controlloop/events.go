package controlloop

import (
	"fmt"
	"log/slog"
	"time"

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

// changeLog adds the log lines of a written map: its replacements, its
// announces (or the placements of a first fill), the moves served, the
// announces dropped, the warmings that ended or went, and the generation
// when it rose.
func (l *Loop) changeLog(r *report, prev, next *cachenodes.SlotMap, plan slotplan.Plan, done []slotplan.Placement) {
	for _, ev := range plan.Evictions {
		if !ev.Move {
			r.log(slog.LevelWarn, "slot replacement", "slot", ev.Slot, "node", ev.Node.ID, "reason", ev.Reason, "why", ev.Why)
		}
	}
	for _, p := range done {
		if plan.FirstFill {
			r.log(slog.LevelInfo, "slot placement", "slot", p.Slot, "node", p.Node.ID, "addr", p.Node.Addr, "flushed", false)
			continue
		}
		args := []any{"slot", p.Slot, "from", p.From.ID, "to", p.Node.ID, "reason", p.Reason, "why", p.Why}
		if ni := next.Incoming(p.Slot); ni != nil {
			args = append(args, "serves_at", ni.ServesAt)
		}
		r.log(slog.LevelInfo, "slot move announced", args...)
	}
	for _, p := range plan.Serves {
		if p.From.IsZero() || p.Reason == mcribapi.EvictionHoldExpired || (p.Reason == mcribapi.EvictionMaintenance && !p.Warm) {
			r.log(slog.LevelInfo, "slot placement", "slot", p.Slot, "node", p.Node.ID, "addr", p.Node.Addr, "flushed", true)
			continue
		}
		r.log(slog.LevelInfo, "slot move", "slot", p.Slot, "from", p.From.ID, "to", p.Node.ID, "reason", p.Reason, "kind", moveKind(p.Warm))
	}
	for _, d := range plan.Drops {
		r.log(slog.LevelInfo, "slot move dropped", "slot", d.Slot, "from", d.From.ID, "to", d.Node.ID, "reason", d.Reason, "why", d.Why)
	}
	for _, e := range plan.EndWarming {
		r.log(slog.LevelInfo, "warming over", "slot", e.Slot, "node", e.Node.ID, "why", e.Why)
	}
	for _, i := range plan.RemovedWarming {
		r.log(slog.LevelInfo, "warming object removed", "slot", i)
	}
	if prev == nil || prev.Generation() != next.Generation() {
		r.log(slog.LevelInfo, "slot map written", "generation", next.Generation())
	}
}

// changeEvents adds the events of a written map next: its replacements,
// announces, moves, placements, dropped announces and warmings, decided
// from in (replace: the operator's replace the pass carried out, nil when
// none).
func (l *Loop) changeEvents(r *report, in *slotplan.Input, plan slotplan.Plan, done []slotplan.Placement, next *cachenodes.SlotMap, replace *replaceRequest) {
	for _, ev := range plan.Evictions {
		if ev.Move {
			continue // told with its announce
		}
		slot := ev.Slot
		r.tracedEvent(mcribapi.Event{Kind: mcribapi.EventReplacement, Node: ev.Node.ID, Slot: &slot, Reason: ev.Why + "; no spare can take it: it stays vacant until one comes"})
	}
	for _, p := range done {
		slot := p.Slot
		if plan.FirstFill {
			r.tracedEvent(mcribapi.Event{Kind: mcribapi.EventPlacement, Node: p.Node.ID, Slot: &slot, Reason: "the first fill of a new pool"})
			continue
		}
		e := mcribapi.Event{Kind: mcribapi.EventSlotMoveAnnounced, Node: p.Node.ID, Slot: &slot, From: p.From.ID, To: p.Node.ID}
		reason := p.Why
		if p.Reason == mcribapi.EvictionReplace && replace != nil {
			reason += ": " + replace.reason
			e.Who = replace.by
		}
		if ni := next.Incoming(p.Slot); ni != nil {
			at := ni.ServesAt.UTC()
			e.ServesAt = &at
			reason += fmt.Sprintf("; %s is flushed and announced, and serves slot %d from %s", p.Node.ID, p.Slot, at.Format(time.RFC3339))
		}
		e.Reason = reason
		r.tracedEvent(e)
	}
	for _, p := range plan.Serves {
		slot := p.Slot
		kind, reason := mcribapi.EventPlacement, fmt.Sprintf("a spare takes vacant slot %d, flushed at its announce", p.Slot)
		switch p.Reason {
		case mcribapi.EvictionDrain:
			kind, reason = mcribapi.EventDrainStep, p.Why
		case mcribapi.EvictionReturn:
			kind, reason = mcribapi.EventReturnStep, p.Why
		case mcribapi.EvictionSplit:
			kind, reason = mcribapi.EventSplitStep, p.Why
		case mcribapi.EvictionReplace:
			kind, reason = mcribapi.EventReplace, p.Why
		case mcribapi.EvictionHoldExpired, mcribapi.EvictionMaintenance:
			r.tracedEvent(mcribapi.Event{Kind: mcribapi.EventReplacement, Node: p.From.ID, Slot: &slot,
				Reason: fmt.Sprintf("node %s leaves slot %d (%s)", p.From.ID, p.Slot, p.Reason)})
			reason = fmt.Sprintf("a spare takes slot %d of node %s, flushed at its announce", p.Slot, p.From.ID)
		}
		if !p.From.IsZero() {
			reason += fmt.Sprintf("; %s takes it, %s", p.Node.ID, moveKind(p.Warm))
		}
		r.tracedEvent(mcribapi.Event{Kind: kind, Node: p.Node.ID, Slot: &slot, Reason: reason})
		if p.Warm {
			r.tracedEvent(mcribapi.Event{Kind: mcribapi.EventWarmStart, Node: p.From.ID, Slot: &slot,
				Reason: fmt.Sprintf("node %s warms slot %d's new holder %s until %s", p.From.ID, p.Slot, p.Node.ID, p.Until.UTC().Format(time.RFC3339))})
		}
	}
	for _, d := range plan.Drops {
		slot := d.Slot
		at := d.ServesAt.UTC()
		r.tracedEvent(mcribapi.Event{Kind: mcribapi.EventSlotMoveDropped, Node: d.Node.ID, Slot: &slot, From: d.From.ID, To: d.Node.ID, ServesAt: &at,
			Reason: fmt.Sprintf("the announce of node %s to slot %d is dropped: %s; nothing moves, and the move is tried again by the rules that chose it", d.Node.ID, d.Slot, d.Why)})
	}
	for _, e := range plan.EndWarming {
		slot := e.Slot
		reason := fmt.Sprintf("node %s no longer warms slot %d (%s)", e.Node.ID, e.Slot, e.Why)
		if w := next.Warming(e.Slot); w != nil {
			reason += fmt.Sprintf("; clients still send it the slot's writes until %s, when its warming object is removed", w.WritesUntil().UTC().Format(time.RFC3339))
		}
		r.tracedEvent(mcribapi.Event{Kind: mcribapi.EventWarmEnd, Node: e.Node.ID, Slot: &slot, Reason: reason})
	}
	for _, i := range plan.RemovedWarming {
		w := in.Prev.Warming(i)
		if w == nil || w.Ended() {
			continue // told when it ended
		}
		slot := i
		r.tracedEvent(mcribapi.Event{Kind: mcribapi.EventWarmEnd, Node: w.NodeID, Slot: &slot,
			Reason: fmt.Sprintf("node %s no longer warms slot %d (--warm-for passed at %s; its warming object is removed %s later)", w.NodeID, i, w.Until.UTC().Format(time.RFC3339), cachenodes.WarmWriteGrace)})
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
