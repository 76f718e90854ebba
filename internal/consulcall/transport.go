// Package consulcall bounds every HTTP call to Consul with a deadline, so
// that a Consul that accepts a connection and never answers cannot stall
// a caller that forgot one: the deadline lives in the client's transport,
// under every package that talks to Consul.
package consulcall

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// DefaultTimeout bounds a call that is not a blocking query.
const DefaultTimeout = 10 * time.Second

// consulMaxWait is Consul's longest (and default) blocking-query wait.
const consulMaxWait = 5 * time.Minute

// ErrTimeout is wrapped by the error of a call that Consul did not answer
// within its deadline.
var ErrTimeout = errors.New("consul did not answer in time")

// Transport is an http.RoundTripper that gives every request a deadline
// of Timeout (DefaultTimeout when zero), and a blocking query (one with an
// index parameter) its wait, plus Consul's jitter of wait/16, plus
// Timeout. The caller's own earlier deadline still wins. The deadline
// covers reading the body: it ends when the body is closed. Base nil is
// http.DefaultTransport. It is safe for concurrent use.
type Transport struct {
	Base    http.RoundTripper
	Timeout time.Duration
}

// Limit returns the deadline Transport gives req.
func (t *Transport) Limit(req *http.Request) time.Duration {
	limit := t.Timeout
	if limit <= 0 {
		limit = DefaultTimeout
	}
	q := req.URL.Query()
	if q.Get("index") == "" {
		return limit
	}
	wait := consulMaxWait
	if w, err := time.ParseDuration(q.Get("wait")); err == nil && w > 0 && w < consulMaxWait {
		wait = w
	}
	return wait + wait/16 + limit
}

// RoundTrip sends req under its deadline.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	limit := t.Limit(req)
	ctx, cancel := context.WithTimeoutCause(req.Context(), limit, ErrTimeout)
	resp, err := base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cause := context.Cause(ctx)
		cancel()
		if errors.Is(cause, ErrTimeout) && req.Context().Err() == nil {
			return nil, fmt.Errorf("%w: no answer to %s within %v", ErrTimeout, req.Method, limit)
		}
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// cancelOnClose ends a call's deadline when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}
