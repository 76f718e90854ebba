package controlloop

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/mcribapi"
)

// attrOf returns the value of key among attrs, and whether it is there.
func attrOf(attrs []attribute.KeyValue, key string) (attribute.Value, bool) {
	for _, a := range attrs {
		if string(a.Key) == key {
			return a.Value, true
		}
	}
	return attribute.Value{}, false
}

func TestReconcilePassIsTraced(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())

	w := newWorld(t, 2)
	loop, err := New(Options{
		Pool: assignPool, KVPrefix: "mcrib", NumSlots: 2,
		Hold: time.Minute, ProbeInterval: time.Second, FlushAfterUnreachable: 10 * time.Second,
		MaxAbsentFraction: 0.5, MaxReplacementsPerMinute: 10,
		Store: w.store, Discovery: &fakeDiscovery{}, Leadership: w.lead, Prober: w.prober, Clock: w.clk, Metrics: w.metrics,
		Tracer: tp.Tracer("test"),
	})
	if err != nil {
		t.Fatal(err)
	}
	w.loop = loop
	w.seed(3, []string{"a", "b"}, []string{"c"})
	w.lead.win("s1")
	w.answer("a", "b", "c")
	w.probe()
	takeOut("b")(w)
	// The pass that announces c (flushed: the lock confirmed first), and
	// the one that serves it 12s later.
	passSpan := func(want map[string]attribute.Value, events []string) tracetest.SpanStub {
		t.Helper()
		exp.Reset()
		if res, err := loop.tracedReconcile(context.Background()); res.Outcome != mcribapi.OutcomeOK {
			t.Fatalf("outcome %q (%v)", res.Outcome, err)
		}
		spans := exp.GetSpans()
		var pass tracetest.SpanStub
		for _, s := range spans {
			if s.Name == SpanReconcile {
				pass = s
			}
		}
		if pass.Name == "" {
			t.Fatalf("no %s span among %d spans", SpanReconcile, len(spans))
		}
		for key, want := range want {
			if got, ok := attrOf(pass.Attributes, key); !ok || got != want {
				t.Errorf("pass attribute %s = %v (%v), want %v", key, got.String(), ok, want.String())
			}
		}
		var got []string
		for _, e := range pass.Events {
			node, _ := attrOf(e.Attributes, "mcrib.node")
			reason, _ := attrOf(e.Attributes, "mcrib.reason")
			if reason.AsString() == "" {
				t.Errorf("event %s of %s has no reason", e.Name, node.AsString())
			}
			got = append(got, e.Name+" "+node.AsString())
		}
		for _, want := range events {
			if !slices.Contains(got, want) {
				t.Errorf("pass events %q lack %q", got, want)
			}
		}
		return pass
	}
	pass := passSpan(map[string]attribute.Value{
		"mcrib.outcome":      attribute.StringValue(string(mcribapi.OutcomeOK)),
		"mcrib.generation":   attribute.Int64Value(3),
		"mcrib.announces":    attribute.IntValue(1),
		"mcrib.replacements": attribute.IntValue(0),
		"mcrib.placements":   attribute.IntValue(0),
		"mcrib.flushes":      attribute.IntValue(1),
		"mcrib.pool":         attribute.StringValue(assignPool),
	}, []string{"flush c", "slot move announced c"})
	spans := exp.GetSpans()
	defer func() {
		w.clk.Advance(cachenodes.AnnounceLead)
		w.probe()
		passSpan(map[string]attribute.Value{
			"mcrib.generation":   attribute.Int64Value(4),
			"mcrib.announces":    attribute.IntValue(0),
			"mcrib.replacements": attribute.IntValue(1),
			"mcrib.placements":   attribute.IntValue(1),
			"mcrib.flushes":      attribute.IntValue(0),
		}, []string{"replacement b", "placement c"})
	}()
	children := map[string]bool{}
	for _, s := range spans {
		if s.Parent.SpanID() == pass.SpanContext.SpanID() {
			children[s.Name] = true
		}
	}
	for _, want := range []string{SpanConsulRead, SpanConsulWrite, SpanLeaderConfirm, SpanFlush} {
		if !children[want] {
			t.Errorf("no child span %s of the pass; children %v", want, children)
		}
	}
}

func TestNoTracerNoSpans(t *testing.T) {
	w := newWorld(t, 2)
	if _, ok := w.loop.store.(tracedStore); ok {
		t.Errorf("the store is traced without a Tracer")
	}
	w.seed(3, []string{"a", "b"}, []string{"c"})
	w.answer("a", "b", "c")
	if res, _ := w.loop.tracedReconcile(context.Background()); res.Outcome != mcribapi.OutcomeFollower {
		t.Errorf("outcome %q, want %q", res.Outcome, mcribapi.OutcomeFollower)
	}
}
