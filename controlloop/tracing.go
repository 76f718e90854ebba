package controlloop

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcrib/mcrib/leader"
	"github.com/mcrib/mcrib/mcribapi"
)

// Span names of the loop's traces.
const (
	SpanReconcile     = "mcrib.reconcile"
	SpanConsulRead    = "consul.kv.read"
	SpanConsulWrite   = "consul.kv.write_slotmap"
	SpanConsulVote    = "consul.kv.put_vote"
	SpanConsulFreeze  = "consul.kv.freeze"
	SpanLeaderConfirm = "consul.lock.confirm"
	SpanFlush         = "memcached.flush_all"
)

// traced returns o with Store, Leadership and Prober wrapped so that each
// Consul call and each flush is a span, when o.Tracer is set; o as it is
// otherwise. The wrappers start child spans of the span in their context
// (a reconcile pass).
func (o Options) traced() Options {
	if o.Tracer == nil {
		return o
	}
	o.Store = tracedStore{Store: o.Store, tr: o.Tracer}
	o.Leadership = tracedLeadership{Leadership: o.Leadership, tr: o.Tracer}
	o.Prober = tracedProber{Prober: o.Prober, tr: o.Tracer}
	return o
}

// endSpan records err on span and ends it.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

type tracedStore struct {
	Store
	tr trace.Tracer
}

func (s tracedStore) Read(ctx context.Context) (Snapshot, error) {
	ctx, span := s.tr.Start(ctx, SpanConsulRead, trace.WithSpanKind(trace.SpanKindClient))
	st, err := s.Store.Read(ctx)
	if st.SlotMap != nil {
		span.SetAttributes(attribute.Int64("mcrib.stored_generation", int64(st.SlotMap.Generation())))
	}
	endSpan(span, err)
	return st, err
}

func (s tracedStore) WritePool(ctx context.Context, read Snapshot, lease leader.Lease, w PoolWrite) (bool, error) {
	var attrs []attribute.KeyValue
	if w.SlotMap != nil {
		attrs = append(attrs, attribute.Int64("mcrib.generation", int64(w.SlotMap.Generation())))
	}
	if w.Flushes != nil {
		attrs = append(attrs, attribute.Int("mcrib.flushes_owed", len(w.Flushes.Flushes)))
	}
	ctx, span := s.tr.Start(ctx, SpanConsulWrite, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	ok, err := s.Store.WritePool(ctx, read, lease, w)
	span.SetAttributes(attribute.Bool("mcrib.cas_ok", ok))
	endSpan(span, err)
	return ok, err
}

func (s tracedStore) PutFreeze(ctx context.Context, f mcribapi.FreezeDoc) error {
	ctx, span := s.tr.Start(ctx, SpanConsulFreeze, trace.WithSpanKind(trace.SpanKindClient))
	err := s.Store.PutFreeze(ctx, f)
	endSpan(span, err)
	return err
}

func (s tracedStore) DeleteFreeze(ctx context.Context) error {
	ctx, span := s.tr.Start(ctx, SpanConsulFreeze, trace.WithSpanKind(trace.SpanKindClient))
	err := s.Store.DeleteFreeze(ctx)
	endSpan(span, err)
	return err
}

func (s tracedStore) PutVote(ctx context.Context, replica string, v Vote, member leader.Lease) error {
	ctx, span := s.tr.Start(ctx, SpanConsulVote, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.Int("mcrib.unreachable", len(v.Unreachable))))
	err := s.Store.PutVote(ctx, replica, v, member)
	endSpan(span, err)
	return err
}

type tracedLeadership struct {
	Leadership
	tr trace.Tracer
}

func (l tracedLeadership) Confirm(ctx context.Context) (leader.Lease, error) {
	ctx, span := l.tr.Start(ctx, SpanLeaderConfirm, trace.WithSpanKind(trace.SpanKindClient))
	lease, err := l.Leadership.Confirm(ctx)
	endSpan(span, err)
	return lease, err
}

type tracedProber struct {
	Prober
	tr trace.Tracer
}

func (p tracedProber) Flush(ctx context.Context, addr string) error {
	ctx, span := p.tr.Start(ctx, SpanFlush, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("mcrib.addr", addr)))
	err := p.Prober.Flush(ctx, addr)
	endSpan(span, err)
	return err
}

// passKey marks the context of a traced pass: publish sets the pass's
// attributes on its span.
type passKey struct{}

// tracedReconcile runs Reconcile inside a pass span: its decisions are
// events of the span, their counts and the pass's outcome, generation and
// freezes its attributes (publish.go).
func (l *Loop) tracedReconcile(ctx context.Context) (Result, error) {
	if l.opts.Tracer == nil {
		return l.Reconcile(ctx)
	}
	ctx, span := l.opts.Tracer.Start(context.WithValue(ctx, passKey{}, true), SpanReconcile,
		trace.WithAttributes(attribute.String("mcrib.pool", l.opts.Pool)))
	res, err := l.Reconcile(ctx)
	endSpan(span, err)
	return res, err
}

func (s tracedStore) PutDrain(ctx context.Context, doc mcribapi.DrainDoc, index uint64) (bool, error) {
	ctx, span := s.tr.Start(ctx, SpanConsulWrite, trace.WithSpanKind(trace.SpanKindClient))
	ok, err := s.Store.(DrainStore).PutDrain(ctx, doc, index)
	span.SetAttributes(attribute.Bool("mcrib.cas_ok", ok))
	endSpan(span, err)
	return ok, err
}

// asDrainStore returns s as a DrainStore when it (or the store it traces)
// keeps the drain document.
func asDrainStore(s Store) (DrainStore, bool) {
	if t, ok := s.(tracedStore); ok {
		if _, inner := t.Store.(DrainStore); !inner {
			return nil, false
		}
		return t, true
	}
	ds, ok := s.(DrainStore)
	return ds, ok
}
