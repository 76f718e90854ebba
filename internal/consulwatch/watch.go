// Package consulwatch is mcrib's one blocking-query loop. It follows one
// Consul read (a KV key, a service's health, anything Consul's HTTP API
// answers with an X-Consul-Index) and calls back with every answer that
// changed, in the manner of consul-template's watch/view.go.
//
// Each query passes the index of the last answer as WaitIndex, so that
// Consul holds it until the data changes or WaitTime passes. The index rule
// is Consul's documented one:
//
//   - an index that goes backwards resets to 0, so that the next query
//     answers at once with the new truth (Consul restarted with a lost or
//     restored state, or a key was deleted and written again; waiting on
//     the old, higher index would block for the whole WaitTime);
//   - an index of 0 after an answer becomes 1, because a WaitIndex of 0
//     never blocks: every query would answer at once, a busy loop that
//     loads the client and the Consul servers;
//   - after an error the next query starts from 0 as well: the Consul that
//     answers next may have restarted with lower indexes.
//
// An answer whose index did not move (the wait timed out), or that
// Options.Equal finds equal to the last value delivered, is not delivered;
// an answer of index 0, which tells nothing, is judged by Equal alone.
// The starts of two queries are at least a jittered MinInterval apart;
// failed queries are retried after a capped, jittered backoff
// (internal/backoff), forever. Every query runs under a deadline of
// WaitTime, plus the WaitTime/16 of jitter Consul adds to it, plus a
// margin, so that a Consul that accepts a request and never answers cannot
// stall a watch. Every wait is timed by an injected clock (package clock).
package consulwatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/internal/backoff"
)

// Defaults of the zero fields of Options.
const (
	DefaultWaitTime    = time.Minute
	DefaultMinInterval = 50 * time.Millisecond
	DefaultMargin      = 10 * time.Second
)

// ErrTimeout is wrapped by the error of a query that Consul did not answer
// within its deadline.
var ErrTimeout = errors.New("consulwatch: consul did not answer in time")

// errNoMeta is the error of a query that returned neither metadata nor an
// error: a bug in the query, which the watch retries like any error.
var errNoMeta = errors.New("consulwatch: the query returned no query metadata")

// Query is one Consul read. Run calls it with q set up for one blocking
// query: WaitIndex, WaitTime (only when WaitIndex is not 0) and a context,
// ctx, that carries the query's deadline. The query may set other fields
// of q (AllowStale, Datacenter, …) before it passes q to the API; q is its
// own. It returns the value read and the answer's metadata, whose
// LastIndex (X-Consul-Index) drives the watch.
type Query[T any] func(ctx context.Context, q *api.QueryOptions) (T, *api.QueryMeta, error)

// Options configures one watch. The zero value of every field selects its
// default.
type Options[T any] struct {
	// Name names the watch in log lines: the key or the service watched.
	Name string
	// WaitTime is how long one query may wait in Consul for a change;
	// zero means DefaultWaitTime. Consul caps it at 10 minutes.
	WaitTime time.Duration
	// MinInterval is the least time between the starts of two queries,
	// stretched at random by up to half again so that many watchers do
	// not query in step; zero means DefaultMinInterval. It never delays
	// the delivery of an answer.
	MinInterval time.Duration
	// Jitter returns a number in [0, 1) that stretches MinInterval; nil
	// means math/rand/v2.Float64. Tests pass a constant.
	Jitter func() float64
	// Backoff spaces out the retries after failures; its zero value waits
	// about 100ms, doubling up to 5s. Run works on a copy.
	Backoff backoff.Backoff
	// Margin is the time a query may take beyond WaitTime and Consul's
	// jitter before it is abandoned with ErrTimeout; zero means
	// DefaultMargin. A query with WaitIndex 0, which does not block, has
	// Margin alone.
	Margin time.Duration
	// Equal reports whether two values read are the same for the
	// watcher's purpose; an answer equal to the last value delivered is
	// not delivered. Nil compares only indexes.
	Equal func(a, b T) bool
	// Clock times every wait; nil means the real clock.
	Clock clock.Clock
	// Logger receives a warning for every failure and a line for every
	// index reset; nil discards them.
	Logger *slog.Logger
}

// withDefaults returns o with its zero fields set.
func (o Options[T]) withDefaults() Options[T] {
	if o.WaitTime <= 0 {
		o.WaitTime = DefaultWaitTime
	}
	if o.MinInterval <= 0 {
		o.MinInterval = DefaultMinInterval
	}
	if o.Jitter == nil {
		o.Jitter = rand.Float64
	}
	if o.Margin <= 0 {
		o.Margin = DefaultMargin
	}
	o.Clock = clock.Or(o.Clock)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Run follows query until ctx ends; it never gives up and returns only
// then. It calls onChange with every answer whose index moved and that
// Equal does not find equal to the last value onChange accepted (the first
// answer always), with the answer's X-Consul-Index. When onChange returns
// an error the answer counts as not delivered: Run reports the error to
// onError, backs off as after a failed query and asks again without
// blocking, so that the answer (or a newer one) is offered again. onError
// receives every failure; errors of queries that outlived their deadline
// wrap ErrTimeout. Both callbacks run on Run's goroutine, one at a time,
// as soon as the answer arrives; a slow callback only delays the next
// query. onError may be nil.
func Run[T any](ctx context.Context, opts Options[T], query Query[T], onChange func(value T, index uint64) error, onError func(error)) {
	o := opts.withDefaults()
	bo := o.Backoff
	var (
		w         follower[T]
		notBefore time.Time // when the next query may start
	)
	for {
		if !clock.Sleep(ctx, o.Clock, notBefore.Sub(o.Clock.Now())) {
			return
		}
		notBefore = o.Clock.Now().Add(o.MinInterval + time.Duration(float64(o.MinInterval/2)*unit(o.Jitter())))
		v, meta, err := call(ctx, o, query, w.waitIndex)
		if ctx.Err() != nil {
			return
		}
		what := "consul query failed"
		if err == nil {
			what = "handling a consul answer failed"
			if err = w.accept(o, v, meta.LastIndex, onChange); err == nil {
				bo.Reset()
				continue
			}
		}
		failedAt := o.Clock.Now()
		w.waitIndex = 0
		d := bo.Next()
		o.Logger.Warn(what+"; retrying", "watch", o.Name, "err", err, "retry_in", d)
		if onError != nil {
			onError(err)
		}
		notBefore = failedAt.Add(d)
	}
}

// follower is the state of one watch between its queries.
type follower[T any] struct {
	waitIndex uint64 // WaitIndex of the next query
	lastIndex uint64 // index of the last answer accepted
	seen      bool   // an answer was accepted
	delivered bool   // last holds the last value onChange accepted
	last      T
}

// accept takes one answer of index got: it calls onChange when the answer
// changed and moves the index by nextIndex. When onChange fails it returns
// the error and records nothing.
func (w *follower[T]) accept(o Options[T], v T, got uint64, onChange func(T, uint64) error) error {
	// An index of 0 says nothing about whether the data moved (it is a
	// Consul bug); such an answer is judged by Equal alone.
	moved := !w.seen || got != w.lastIndex || got == 0
	same := w.delivered && o.Equal != nil && o.Equal(w.last, v)
	if moved && !same {
		if err := onChange(v, got); err != nil {
			return err
		}
		w.last, w.delivered = v, true
	}
	next := nextIndex(w.lastIndex, got, w.seen)
	if next == 0 {
		o.Logger.Info("consul index went backwards; starting over", "watch", o.Name, "index", got, "previous", w.lastIndex)
	}
	w.waitIndex, w.lastIndex, w.seen = next, got, true
	return nil
}

// unit returns f, or 0 when f is outside [0, 1).
func unit(f float64) float64 {
	if f < 0 || f >= 1 {
		return 0
	}
	return f
}

// call runs one query under its deadline, timed on o.Clock.
func call[T any](ctx context.Context, o Options[T], query Query[T], waitIndex uint64) (T, *api.QueryMeta, error) {
	q := &api.QueryOptions{WaitIndex: waitIndex}
	limit := o.Margin
	if waitIndex != 0 {
		q.WaitTime = o.WaitTime
		limit += o.WaitTime + o.WaitTime/16
	}
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timer := o.Clock.NewTimer(limit)
	defer timer.Stop()
	answered := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-timer.C():
			cancel(ErrTimeout)
		case <-answered:
		}
	}()
	v, meta, err := query(cctx, q.WithContext(cctx))
	close(answered)
	wg.Wait()
	switch {
	case err == nil && meta == nil:
		err = errNoMeta
	case err != nil && ctx.Err() == nil && errors.Is(context.Cause(cctx), ErrTimeout):
		err = fmt.Errorf("%w: no answer within %v: %w", ErrTimeout, limit, err)
	}
	return v, meta, err
}
