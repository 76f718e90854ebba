package controlloop

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/mcribapi"
)

// Everything the loop tells the world goes through publish: the log lines,
// the events (Options.Events, and the pass's span when it is traced), the
// metrics, the span's attributes, the router configs and the watchers of
// Changed. While a pass decides and writes it only gathers what it will
// tell, in order, in a report; publish tells it once, when the pass ends,
// with no lock held. An answer of discovery or a probe result that changes
// a node is told the same way.

// report is what a pass, or one observation of the nodes, has to tell, in
// the order it happened. Its zero value tells nothing.
type report struct {
	notes []note
	// m is the slot map to hand to the router configs and the watchers of
	// Changed when hasMap is set (a pass that ends without a map to
	// serve, because it failed, hands none).
	m      *cachenodes.SlotMap
	hasMap bool
	// outcome is the pass's outcome, for its span ("": no pass).
	outcome mcribapi.Outcome
}

// note is one thing to tell: a log line (msg not ""), an event, or a count
// of the metrics.
type note struct {
	level slog.Level
	msg   string
	args  []any
	event *mcribapi.Event
	// traced adds the event to the pass's span as well.
	traced bool
	count  func(Metrics)
}

// log adds a log line.
func (r *report) log(level slog.Level, msg string, args ...any) {
	r.notes = append(r.notes, note{level: level, msg: msg, args: args})
}

// event adds an event for Options.Events.
func (r *report) event(e mcribapi.Event) { r.notes = append(r.notes, note{event: &e}) }

// tracedEvent adds an event for Options.Events and the pass's span, where
// it is counted in the pass's attributes.
func (r *report) tracedEvent(e mcribapi.Event) {
	r.notes = append(r.notes, note{event: &e, traced: true})
}

// count adds a count of the metrics.
func (r *report) count(f func(Metrics)) { r.notes = append(r.notes, note{count: f}) }

// serve hands m to the router configs and the watchers of Changed once the
// pass is told.
func (r *report) serve(m *cachenodes.SlotMap) { r.m, r.hasMap = m, true }

// nodeEventsLocked adds the node transitions evs: a log line and an event
// each. A slot holder going absent starts its hold and coming back clears
// it; the other transitions keep the tracker's kinds ("node unreachable",
// ...). l.mu must be held: whether a node holds a slot is read from the
// current map.
func (l *Loop) nodeEventsLocked(r *report, evs []nodeEvent) {
	for _, e := range evs {
		r.log(slog.LevelInfo, string(e.Kind), "node", e.Node, "detail", e.Detail)
	}
	for _, e := range evs {
		kind := e.Kind
		switch {
		case kind == mcribapi.EventNodeAbsent && holdsSlot(l.current, e.Node):
			kind = mcribapi.EventHoldStarted
		case kind == mcribapi.EventNodePresent && holdsSlot(l.current, e.Node):
			kind = mcribapi.EventHoldCleared
		}
		r.event(mcribapi.Event{Kind: kind, Node: e.Node, Reason: e.Detail})
	}
}

// holdsSlot tells whether m (nil: none known) gives node a slot.
func holdsSlot(m *cachenodes.SlotMap, node string) bool {
	return m != nil && m.SlotOf(node) >= 0
}

// publish tells what r gathered, in order: each log line, each event (a
// traced one on the pass's span too), each count; then, for a traced pass,
// the span's attributes; then the map to serve, to the router configs and
// the watchers of Changed. No lock may be held.
func (l *Loop) publish(ctx context.Context, r *report) {
	span := trace.SpanFromContext(ctx)
	var counts map[mcribapi.EventKind]int // traced events by kind, for the span
	for _, n := range r.notes {
		if n.msg != "" {
			l.opts.Logger.Log(context.Background(), n.level, n.msg, n.args...)
		}
		if n.event != nil && l.opts.Events != nil {
			l.opts.Events.Record(*n.event)
		}
		if n.event != nil && n.traced && span.IsRecording() {
			addSpanEvent(span, *n.event)
			if counts == nil {
				counts = map[mcribapi.EventKind]int{}
			}
			counts[n.event.Kind]++
		}
		if n.count != nil {
			n.count(l.opts.Metrics)
		}
	}
	if _, traced := ctx.Value(passKey{}).(bool); traced && r.outcome != "" {
		span.SetAttributes(l.passAttributes(r.outcome, counts)...)
	}
	if r.hasMap {
		l.serveMap(r.m)
	}
}

// passAttributes returns the attributes of a traced pass that ended with
// outcome, whose span got counts events by kind.
func (l *Loop) passAttributes(outcome mcribapi.Outcome, counts map[mcribapi.EventKind]int) []attribute.KeyValue {
	l.mu.Lock()
	attrs := []attribute.KeyValue{
		attribute.String("mcrib.outcome", string(outcome)),
		attribute.Bool("mcrib.frozen", l.freeze.doc != nil),
		attribute.String("mcrib.auto_freeze_reason", l.freeze.auto),
		attribute.Int("mcrib.replacements_blocked", l.health.blocked),
	}
	if l.current != nil {
		attrs = append(attrs, attribute.Int64("mcrib.generation", int64(l.current.Generation())))
	}
	l.mu.Unlock()
	for k, name := range map[mcribapi.EventKind]string{mcribapi.EventReplacement: "mcrib.replacements", mcribapi.EventPlacement: "mcrib.placements", mcribapi.EventFlush: "mcrib.flushes",
		mcribapi.EventSlotMoveAnnounced: "mcrib.announces"} {
		attrs = append(attrs, attribute.Int(name, counts[k]))
	}
	return attrs
}

// addSpanEvent adds e to span as an event.
func addSpanEvent(span trace.Span, e mcribapi.Event) {
	attrs := []attribute.KeyValue{attribute.String("mcrib.node", e.Node), attribute.String("mcrib.reason", e.Reason)}
	if e.Slot != nil {
		attrs = append(attrs, attribute.Int("mcrib.slot", *e.Slot))
	}
	span.AddEvent(string(e.Kind), trace.WithAttributes(attrs...))
}

// serveMap hands m, the loop's map after a pass, to the outputs: the
// mcrouter and twemproxy configs and the watchers of Changed.
func (l *Loop) serveMap(m *cachenodes.SlotMap) {
	l.out.writeRouterConfig(l.opts, m)
	l.out.writeTwemproxyConfig(l.opts, m)
	l.out.notifyChanged(m)
}
