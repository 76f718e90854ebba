package consulwatch

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/internal/leakcheck"
)

var epoch = time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)

// guard bounds every wait of a test for the code under test (real time,
// only to fail instead of hanging; nothing waits for it to pass).
const guard = 5 * time.Second

// request is one query the watch made; the test answers it.
type request struct {
	ctx       context.Context
	waitIndex uint64
	waitTime  time.Duration
	at        time.Time // fake time when the query started
	reply     chan reply
}

type reply struct {
	value  string
	index  uint64
	err    error
	noMeta bool
}

// answer replies with value at index.
func (c *request) answer(value string, index uint64) { c.reply <- reply{value: value, index: index} }

// answerAfter lets the query take d of fake time (its MinInterval, so
// that the next one may start at once), then answers it.
func (h *harness) answerAfter(c *request, d time.Duration, value string, index uint64) {
	h.clk.Advance(d)
	c.answer(value, index)
}

// fail replies with err.
func (c *request) fail(err error) { c.reply <- reply{err: err} }

type change struct {
	value string
	index uint64
}

// harness runs one watch on a fake clock with a fake query and records
// what it delivers.
type harness struct {
	clk     *clock.Fake
	calls   chan *request
	changes chan change
	errs    chan error
	reject  func(value string) error // onChange's error for value; nil accepts all
	cancel  context.CancelFunc
	done    chan struct{}
}

// start runs Run with opts (Clock set to the harness's fake) until the
// test ends; it checks that Run returns and leaks nothing.
func start(t *testing.T, opts Options[string], reject func(string) error) *harness {
	t.Helper()
	leakcheck.Check(t)
	h := &harness{
		clk:     clock.NewFake(epoch),
		calls:   make(chan *request),
		changes: make(chan change, 100),
		errs:    make(chan error, 100),
		reject:  reject,
		done:    make(chan struct{}),
	}
	opts.Clock = h.clk
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() {
		defer close(h.done)
		Run(ctx, opts, h.query, h.onChange, func(err error) { h.errs <- err })
	}()
	t.Cleanup(func() { h.stop(t) })
	return h
}

func (h *harness) query(ctx context.Context, q *api.QueryOptions) (string, *api.QueryMeta, error) {
	if q.Context() != ctx {
		return "", nil, errors.New("q does not carry the query's context")
	}
	c := &request{ctx: ctx, waitIndex: q.WaitIndex, waitTime: q.WaitTime, at: h.clk.Now(), reply: make(chan reply, 1)}
	select {
	case h.calls <- c:
	case <-ctx.Done():
		return "", nil, ctx.Err()
	}
	select {
	case r := <-c.reply:
		if r.err != nil || r.noMeta {
			return "", nil, r.err
		}
		return r.value, &api.QueryMeta{LastIndex: r.index}, nil
	case <-ctx.Done():
		return "", nil, fmt.Errorf("fake query: %w", ctx.Err())
	}
}

func (h *harness) onChange(value string, index uint64) error {
	h.changes <- change{value, index}
	if h.reject != nil {
		return h.reject(value)
	}
	return nil
}

// stop cancels Run and waits for it to return.
func (h *harness) stop(t *testing.T) {
	t.Helper()
	h.cancel()
	select {
	case <-h.done:
	case <-time.After(guard):
		t.Fatal("Run did not return after its context ended")
	}
}

// receive returns the next value on ch, or fails the test when none
// comes.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(guard):
		t.Fatalf("%s did not come", what)
		var zero T
		return zero
	}
}

// next returns the next query.
func (h *harness) next(t *testing.T) *request {
	t.Helper()
	return receive(t, h.calls, "a query")
}

// noQuery fails the test if a query is pending now.
func (h *harness) noQuery(t *testing.T, when string) {
	t.Helper()
	select {
	case c := <-h.calls:
		t.Fatalf("%s: a query came (index %d)", when, c.waitIndex)
	default:
	}
}

// delivered returns the next delivery.
func (h *harness) delivered(t *testing.T) change {
	t.Helper()
	return receive(t, h.changes, "a delivery")
}

// failed returns the next error reported.
func (h *harness) failed(t *testing.T) error {
	t.Helper()
	return receive(t, h.errs, "an error")
}

// nothingDelivered fails the test if a delivery or an error is pending.
func (h *harness) nothingDelivered(t *testing.T, when string) {
	t.Helper()
	select {
	case c := <-h.changes:
		t.Fatalf("%s: delivered %q at %d", when, c.value, c.index)
	case err := <-h.errs:
		t.Fatalf("%s: reported %v", when, err)
	default:
	}
}

// waitArmed waits until the watch waits on the fake clock.
func (h *harness) waitArmed(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	if !h.clk.BlockUntil(ctx, 1) {
		t.Fatal("the watch never waited on the clock")
	}
}

// noJitter makes every wait exact.
func noJitter() float64 { return 0 }

func equalStrings(a, b string) bool { return a == b }
