package mcclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/internal/consulwatch"
	"github.com/mcrib/mcrib/internal/revert"
)

// maxSlotMapBody bounds the slot map document read from mcrib.
const maxSlotMapBody = 16 << 20

// HTTPFollowerOptions configures an HTTPFollower. URL or URLs is
// required; the zero value of every other field selects its default.
type HTTPFollowerOptions struct {
	// URL is the base URL of a mcrib replica's API, like
	// "http://mcrib.internal:7070".
	URL string
	// URLs are the base URLs of several replicas of the pool (after URL,
	// when both are set). Every replica answers GET /v1/slotmap, leader
	// or not; give them all, so that the follower does not depend on one.
	URLs []string
	// HTTPClient makes the requests; nil means a client of its own. It
	// must not time out requests sooner than WaitTime plus 10s.
	HTTPClient *http.Client
	// WaitTime is the ?wait= of each blocking read; zero means
	// consulwatch.DefaultWaitTime (1 minute). mcrib accepts at most 5m.
	WaitTime time.Duration
	// MinInterval is the least time between the starts of two reads
	// (jittered up by as much as half); zero means 50ms.
	MinInterval time.Duration
	// Clock times the waits between reads and the retry backoff; nil
	// means the real clock.
	Clock clock.Clock
	// Logger receives a warning for every failed read; nil discards.
	Logger *slog.Logger
	// Reverted turns fixes off, for the simulation's self-test;
	// production leaves it zero. With revert.GenerationOrder the
	// follower takes a map of a lower generation too.
	Reverted revert.Set
}

// HTTPFollower follows the slot map through mcrib's
// GET /v1/slotmap?index=N&wait=D, for applications without Consul access.
// It runs on internal/consulwatch, the same loop as the Consul follower:
// each read passes the X-Mcrib-Index of the last answer, so mcrib holds it
// until the map changes; failures are retried after a capped, jittered
// backoff, forever. X-Mcrib-Index is a content hash, not a counter: when
// it happens to go down the loop asks once more without blocking, which
// costs one request and delivers nothing twice. It keeps the last valid
// map.
//
// With several replica URLs it reads one at a time and sticks to it while
// it answers; it moves on to the next (in the order given, round) when a
// read fails or the replica serves a map of a lower generation than one
// already taken (a replica cut off from Consul serves its last map), and
// the next read, to the new replica, does not block. A map of a lower
// generation is never delivered (the generation order).
//
// Build one with NewHTTPFollower; Current is safe for concurrent use, Run
// must not be called twice at a time.
type HTTPFollower struct {
	urls    []string // each replica's /v1/slotmap
	at      int      // the replica read now; Run's goroutine only
	order   bool     // the generation order holds (not reverted)
	hc      *http.Client
	watch   consulwatch.Options[*cachenodes.SlotMap]
	current atomic.Pointer[cachenodes.SlotMap]
}

var _ Source = (*HTTPFollower)(nil)

// NewHTTPFollower checks opts and returns a follower; nothing is read
// before Run.
func NewHTTPFollower(opts HTTPFollowerOptions) (*HTTPFollower, error) {
	var bases []string
	if opts.URL != "" {
		bases = append(bases, opts.URL)
	}
	bases = append(bases, opts.URLs...)
	if len(bases) == 0 {
		return nil, errors.New("mcclient: HTTPFollowerOptions.URL or URLs is required")
	}
	if opts.WaitTime < 0 || opts.MinInterval < 0 {
		return nil, errors.New("mcclient: HTTPFollowerOptions durations must not be negative")
	}
	urls := make([]string, len(bases))
	for i, b := range bases {
		u, err := url.Parse(b)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("mcclient: HTTPFollowerOptions: a replica URL must be an http(s) URL, got %q", b)
		}
		urls[i] = strings.TrimRight(b, "/") + "/v1/slotmap"
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	return &HTTPFollower{
		urls:  urls,
		order: !opts.Reverted.Reverted(revert.GenerationOrder),
		hc:    hc,
		watch: consulwatch.Options[*cachenodes.SlotMap]{
			Name:        strings.Join(bases, ","),
			WaitTime:    opts.WaitTime,
			MinInterval: opts.MinInterval,
			Equal:       func(a, b *cachenodes.SlotMap) bool { return a.Equal(b) },
			Clock:       opts.Clock,
			Logger:      opts.Logger,
		},
	}, nil
}

// Current returns the last valid map read, or nil before the first.
func (f *HTTPFollower) Current() *cachenodes.SlotMap { return f.current.Load() }

// Run follows the map until ctx ends. It calls onChange with every valid
// map that differs from the current one, and onError with every failed
// read (a refused connection, a status other than 200, a document that is
// not a valid slot map, a map of a lower generation than the current
// one, wrapping ErrOlderGeneration: the current map stays, and the next
// read goes to the next replica). Both run on Run's goroutine; either may
// be nil.
func (f *HTTPFollower) Run(ctx context.Context, onChange func(*cachenodes.SlotMap), onError func(error)) {
	consulwatch.Run(ctx, f.watch, f.get, func(m *cachenodes.SlotMap, _ uint64) error {
		if m.Equal(f.current.Load()) {
			return nil
		}
		f.current.Store(m)
		if onChange != nil {
			onChange(m)
		}
		return nil
	}, onError)
}

// get is one read of the map from the replica in use: blocking when
// q.WaitIndex is not 0. When it fails, or answers a map of a lower
// generation than the current one, the follower moves on to the next
// replica (the error makes the loop's next read start over, without
// blocking).
func (f *HTTPFollower) get(ctx context.Context, q *api.QueryOptions) (*cachenodes.SlotMap, *api.QueryMeta, error) {
	m, meta, err := f.read(ctx, f.urls[f.at], q)
	if err == nil && f.order {
		if err = cachenodes.CheckGeneration(f.current.Load(), m); err != nil {
			err = fmt.Errorf("reading the slot map from %s: %w", f.urls[f.at], err)
		}
	}
	if err != nil {
		f.at = (f.at + 1) % len(f.urls)
		return nil, nil, err
	}
	return m, meta, nil
}

// read is one GET of u.
func (f *HTTPFollower) read(ctx context.Context, u string, q *api.QueryOptions) (*cachenodes.SlotMap, *api.QueryMeta, error) {
	full := u
	if q.WaitIndex != 0 {
		full += "?index=" + strconv.FormatUint(q.WaitIndex, 10) + "&wait=" + q.WaitTime.String()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, full, nil)
	if err != nil {
		return nil, nil, err
	}
	resp, err := f.hc.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the slot map from %s: %w", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxSlotMapBody))
	if err != nil {
		return nil, nil, fmt.Errorf("reading the slot map from %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("reading the slot map from %s: %s: %s", u, resp.Status, strings.TrimSpace(string(body)))
	}
	index, err := strconv.ParseUint(resp.Header.Get("X-Mcrib-Index"), 10, 64)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the slot map from %s: no valid X-Mcrib-Index: %q", u, resp.Header.Get("X-Mcrib-Index"))
	}
	m, err := cachenodes.ParseSlotMap(body)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the slot map from %s: %w", u, err)
	}
	return m, &api.QueryMeta{LastIndex: index}, nil
}
