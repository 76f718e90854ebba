package controlloop

import (
	"context"
	"fmt"

	"github.com/mcrib/mcrib/internal/eventlog"
	"github.com/mcrib/mcrib/slotplan"
)

// EventSink receives the loop's decisions and the node transitions it
// observes, as they happen (GET /v1/events, GET /v1/history);
// eventlog.Recorder implements it. Record is called with the loop's mutex
// sometimes held: it must not call back into the Loop, and must not block.
type EventSink interface {
	Record(e eventlog.Event)
}

var _ EventSink = eventlog.Recorder{}

// emit hands e to Options.Events, when one is set.
func (l *Loop) emit(e eventlog.Event) {
	if l.opts.Events != nil {
		l.opts.Events.Record(e)
	}
}

// emitNodeEvents hands the node transitions evs to Options.Events. A slot
// holder going absent starts its hold and coming back clears it; the
// other transitions keep the tracker's names ("node unreachable", ...).
func (l *Loop) emitNodeEvents(evs []nodeEvent) {
	if l.opts.Events == nil || len(evs) == 0 {
		return
	}
	for _, e := range evs {
		kind := "node " + e.Event
		switch {
		case e.Node == "":
			kind = e.Event // the observer fault and its end
		case e.Event == "absent" && l.holdsSlot(e.Node):
			kind = eventlog.KindHoldStarted
		case e.Event == "present" && l.holdsSlot(e.Node):
			kind = eventlog.KindHoldCleared
		}
		l.emit(eventlog.Event{Kind: kind, Node: e.Node, Reason: e.Detail})
	}
}

// holdsSlot tells whether the current map gives node a slot.
func (l *Loop) holdsSlot(node string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.current != nil && l.current.SlotOf(node) >= 0
}

// Event kinds of the moves of section 7 (CONTRACT.md).
const (
	KindDrainStep  = "drain step"
	KindReturnStep = "return step"
	KindReplace    = "replace"
	KindWarmStart  = "warm start"
	KindWarmEnd    = "warm end"
	// KindDrainOver: a returning zone holds its baseline again and its
	// drain entry is removed.
	KindDrainOver = "drain over"
)

// emitChange hands the replacements, moves, placements and warmings of a
// written map, decided from in, to Options.Events and the pass's span.
func (l *Loop) emitChange(ctx context.Context, in *slotplan.Input, plan slotplan.Plan, done []slotplan.Placement) {
	for _, ev := range plan.Evictions {
		if ev.Move {
			continue // told with its placement, if carried out
		}
		slot := ev.Slot
		l.emitIn(ctx, eventlog.Event{Kind: eventlog.KindReplacement, Node: ev.Node.ID, Slot: &slot, Reason: ev.Why})
	}
	why := make(map[int]string, len(plan.Evictions))
	for _, ev := range plan.Evictions {
		why[ev.Slot] = ev.Why
	}
	for _, p := range done {
		slot := p.Slot
		kind, reason := eventlog.KindPlacement, "a spare takes a vacant slot, flushed first"
		switch {
		case plan.FirstFill:
			reason = "the first fill of a new pool"
		case p.Reason == slotplan.ReasonDrain:
			kind, reason = KindDrainStep, why[p.Slot]
		case p.Reason == slotplan.ReasonReturn:
			kind, reason = KindReturnStep, why[p.Slot]
		case p.Reason == slotplan.ReasonReplace:
			kind, reason = KindReplace, why[p.Slot]
			if r := l.replace.req; r != nil {
				reason += ": " + r.reason
			}
		case !p.From.IsZero():
			reason = fmt.Sprintf("a spare takes slot %d of node %s, flushed first", p.Slot, p.From.ID)
		}
		if !p.From.IsZero() && !plan.FirstFill {
			reason += fmt.Sprintf("; %s takes it, %s", p.Node.ID, moveKind(p.Warm && l.opts.WarmFor > 0))
		}
		e := eventlog.Event{Kind: kind, Node: p.Node.ID, Slot: &slot, Reason: reason}
		if kind == KindReplace && l.replace.req != nil {
			e.Who = l.replace.req.by
		}
		l.emitIn(ctx, e)
		if p.Warm && l.opts.WarmFor > 0 {
			l.emitIn(ctx, eventlog.Event{Kind: KindWarmStart, Node: p.From.ID, Slot: &slot,
				Reason: fmt.Sprintf("node %s warms slot %d's new holder %s for %s", p.From.ID, p.Slot, p.Node.ID, l.opts.WarmFor)})
		}
	}
	now := l.clock.Now()
	for _, i := range plan.EndWarming {
		slot := i
		e := eventlog.Event{Kind: KindWarmEnd, Slot: &slot, Reason: fmt.Sprintf("the warming of slot %d ends", i)}
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
		l.emitIn(ctx, e)
	}
}

// emitFlush hands a flush that was carried out to Options.Events and the
// pass's span.
func (l *Loop) emitFlush(ctx context.Context, node, why string) {
	l.emitIn(ctx, eventlog.Event{Kind: eventlog.KindFlush, Node: node, Reason: why})
}

// emitAutoFreeze hands a change of the automatic freeze to
// Options.Events: reason is the new reason, empty when it lifted.
func (l *Loop) emitAutoFreeze(reason string) {
	if reason == "" {
		l.emit(eventlog.Event{Kind: eventlog.KindAutoFreezeLifted, Reason: "the automatic freeze lifted"})
		return
	}
	l.emit(eventlog.Event{Kind: eventlog.KindAutoFreeze, Reason: reason})
}
