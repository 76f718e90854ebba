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
	"github.com/mcrib/mcrib/mcribapi"
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
	// WaitTime is the ?wait= of each blocking read; zero, or anything
	// above cachenodes.FollowWait (5s), means FollowWait: a map that does
	// not change is read again that often, so that the client knows it is
	// still fresh.
	WaitTime time.Duration
	// MinInterval is the least time between the starts of two reads
	// (jittered up by as much as half); zero means 50ms.
	MinInterval time.Duration
	// Clock times the waits between reads, the retry backoff and the
	// readings' ReadAt; nil means the real clock.
	Clock clock.Clock
	// Logger receives a warning for every failed read; nil discards.
	Logger *slog.Logger
}

// ErrStaleReplica is wrapped by the error an HTTPFollower reports for an
// answer whose map is older than cachenodes.FollowWait by its
// X-Mcrib-Map-Age, or that carries no valid age: a replica reads the map
// from Consul at least every cachenodes.MapReadEvery, so it is cut off
// from Consul (or too old a mcrib to say). The reading is delivered all
// the same, with the age it had (none: not fresh), and a follower of
// several replicas moves on to the next.
var ErrStaleReplica = errors.New("mcclient: the replica's slot map is not fresh")

// HTTPFollower follows the slot map through mcrib's
// GET /v1/slotmap?index=N&wait=D, for applications without Consul access.
// It runs on internal/consulwatch, the same loop as the Consul follower:
// each read passes the X-Mcrib-Index of the last answer, so mcrib holds it
// until the map changes or the wait (at most cachenodes.FollowWait) passes;
// failures are retried after a capped, jittered backoff, forever.
// X-Mcrib-Index is a content hash, not a counter: when it happens to go
// down the loop asks once more without blocking, which costs one request
// and delivers nothing twice. It keeps the last valid map.
//
// Every successful read delivers a reading, changed or not, whose ReadAt
// is the time the answer arrived less its X-Mcrib-Map-Age (how long
// before the answer the replica last read the map from Consul): the
// client counts its map's freshness from it. An answer without a valid
// age is delivered with a zero ReadAt (age unknown: not fresh).
//
// With several replica URLs it reads one at a time and sticks to it while
// it answers with a fresh map; it moves on to the next (in the order
// given, round) when a read fails, the replica serves a map of a lower
// (generation, revision) than one already taken (a replica cut off from
// Consul serves its last map), or the replica's map is older than
// cachenodes.FollowWait or of unknown age (ErrStaleReplica: a replica
// reads the map every cachenodes.MapReadEvery while it reaches Consul); the
// next read, to the new replica, does not block. A map of a lower
// (generation, revision) is never delivered (cachenodes.MapOrder).
//
// Build one with NewHTTPFollower; Current is safe for concurrent use, Run
// must not be called twice at a time.
type HTTPFollower struct {
	urls    []string // each replica's /v1/slotmap
	at      int      // the replica read now; Run's goroutine only
	order   bool     // the generation order holds (not reverted: revert.go)
	hc      *http.Client
	clock   clock.Clock
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
	if opts.WaitTime == 0 || opts.WaitTime > cachenodes.FollowWait {
		opts.WaitTime = cachenodes.FollowWait
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
		order: true,
		hc:    hc,
		clock: clock.Or(opts.Clock),
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

// Run follows the map until ctx ends. It calls onRead after every read of
// a valid map not older than the current one, with the current map (the
// one read, when cachenodes.MapOrder takes it) and when the replica last
// read it from Consul. It calls onError with every failed read (a refused
// connection, a status other than 200, a document that is not a valid
// slot map, a map of a lower (generation, revision) than the current
// one, wrapping ErrOlderGeneration: the current map stays, and the next
// read goes to the next replica) and every answer that is not fresh
// (ErrStaleReplica, after its reading; with several replicas the next
// read goes to the next). Both run on Run's goroutine; either may be nil.
func (f *HTTPFollower) Run(ctx context.Context, onRead func(cachenodes.SlotMapReading), onError func(error)) {
	query := func(ctx context.Context, q *api.QueryOptions) (*cachenodes.SlotMap, *api.QueryMeta, error) {
		m, meta, readAt, err := f.get(ctx, q)
		if err != nil {
			return nil, nil, err
		}
		if onRead != nil {
			onRead(cachenodes.SlotMapReading{Map: f.current.Load(), ReadAt: readAt})
		}
		if readAt.IsZero() || f.clock.Now().Sub(readAt) > cachenodes.FollowWait {
			err := fmt.Errorf("reading the slot map from %s: %w (%s)", f.urls[f.at], ErrStaleReplica, ageText(readAt, f.clock.Now()))
			if len(f.urls) > 1 {
				f.at = (f.at + 1) % len(f.urls)
				return nil, nil, err // the loop's next read starts over, on the next replica
			}
			if onError != nil {
				onError(err) // one replica: follow it all the same
			}
		}
		return m, meta, nil
	}
	consulwatch.Run(ctx, f.watch, query, func(*cachenodes.SlotMap, uint64) error { return nil }, onError)
}

// ageText says how old a map read at readAt is at now, for an error.
func ageText(readAt, now time.Time) string {
	if readAt.IsZero() {
		return "the answer carries no valid " + mcribapi.MapAgeHeader
	}
	return "read from Consul " + now.Sub(readAt).Round(time.Millisecond).String() + " ago"
}

// get is one read of the map from the replica in use: blocking when
// q.WaitIndex is not 0. It makes the map read current when
// cachenodes.MapOrder takes it, and returns when the replica last read it
// (zero: unknown). When it fails, or answers a map of a lower (generation,
// revision) than the current one, the follower moves on to the next
// replica (the error makes the loop's next read start over, without
// blocking).
func (f *HTTPFollower) get(ctx context.Context, q *api.QueryOptions) (*cachenodes.SlotMap, *api.QueryMeta, time.Time, error) {
	m, meta, readAt, err := f.read(ctx, f.urls[f.at], q)
	take := false
	if err == nil {
		cur := f.current.Load()
		take = !m.Equal(cur)
		if f.order {
			if take, err = cachenodes.MapOrder(cur, m); err != nil {
				err = fmt.Errorf("reading the slot map from %s: %w", f.urls[f.at], err)
			}
		}
	}
	if err != nil {
		f.at = (f.at + 1) % len(f.urls)
		return nil, nil, time.Time{}, err
	}
	if take {
		f.current.Store(m)
	}
	return m, meta, readAt, nil
}

// read is one GET of u. It returns the map, the answer's index and when
// the replica last read the map from Consul: the time the answer arrived
// less its X-Mcrib-Map-Age (zero when the header is missing or bad).
func (f *HTTPFollower) read(ctx context.Context, u string, q *api.QueryOptions) (*cachenodes.SlotMap, *api.QueryMeta, time.Time, error) {
	full := u
	if q.WaitIndex != 0 {
		full += "?index=" + strconv.FormatUint(q.WaitIndex, 10) + "&wait=" + q.WaitTime.String()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, full, nil)
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	resp, err := f.hc.Do(req)
	if err != nil {
		return nil, nil, time.Time{}, fmt.Errorf("reading the slot map from %s: %w", u, err)
	}
	arrived := f.clock.Now()
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxSlotMapBody))
	if err != nil {
		return nil, nil, time.Time{}, fmt.Errorf("reading the slot map from %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, time.Time{}, fmt.Errorf("reading the slot map from %s: %s: %s", u, resp.Status, strings.TrimSpace(string(body)))
	}
	index, err := strconv.ParseUint(resp.Header.Get(mcribapi.IndexHeader), 10, 64)
	if err != nil {
		return nil, nil, time.Time{}, fmt.Errorf("reading the slot map from %s: no valid %s: %q", u, mcribapi.IndexHeader, resp.Header.Get(mcribapi.IndexHeader))
	}
	m, err := cachenodes.ParseSlotMap(body)
	if err != nil {
		return nil, nil, time.Time{}, fmt.Errorf("reading the slot map from %s: %w", u, err)
	}
	var readAt time.Time
	if ms, err := strconv.ParseUint(resp.Header.Get(mcribapi.MapAgeHeader), 10, 32); err == nil {
		readAt = arrived.Add(-time.Duration(ms) * time.Millisecond)
	}
	return m, &api.QueryMeta{LastIndex: index}, readAt, nil
}
