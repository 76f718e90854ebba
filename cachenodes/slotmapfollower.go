package cachenodes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/internal/consulwatch"
)

// ErrSlotMapNotStored is wrapped by the error SlotMapFollower.Run reports
// when the followed key does not exist: the pool has no map yet, or its
// map was deleted.
var ErrSlotMapNotStored = errors.New("cachenodes: no slot map is stored")

// ErrOlderGeneration is wrapped by the error reported for a slot map whose
// (generation, revision) is lower than that of a map already taken
// (MapOrder). By this order a client following the slot map never takes
// such a map: it may route a slot back to a node that nobody invalidates
// any more (a replica cut off from Consul serves its last map, or Consul's
// KV was restored from an older snapshot), or forget an incoming node or
// an ended warming it must still write.
var ErrOlderGeneration = errors.New("cachenodes: the slot map is older than one already taken")

// CheckGeneration returns nil when a client that routes by current (nil:
// no map yet) may take next or already has it, else the error of MapOrder
// (wrapping ErrOlderGeneration).
func CheckGeneration(current, next *SlotMap) error {
	_, err := MapOrder(current, next)
	return err
}

// SlotMapFollowerOptions configures a SlotMapFollower. Client and Key are
// required; the zero value of every other field selects its default.
type SlotMapFollowerOptions struct {
	// Client is the Consul API client. Its HTTP client must not time out
	// requests sooner than WaitTime plus WaitTime/16 plus 10s.
	Client *api.Client
	// Key is the KV key of the slot map document,
	// "<kv-prefix>/<pool>/slotmap".
	Key string
	// WaitTime bounds how long one blocking query waits for a change;
	// zero, or anything above FollowWait (5s), means FollowWait: a map
	// that does not change is read again that often, so that the client
	// knows it is still fresh.
	WaitTime time.Duration
	// MinInterval is the least time between the starts of two queries
	// (jittered up by as much as half); zero means
	// consulwatch.DefaultMinInterval (50ms).
	MinInterval time.Duration
	// Clock times Run's waits and the readings' ReadAt; nil means the
	// real clock.
	Clock clock.Clock
	// Logger receives a warning for every failed query; nil discards.
	Logger *slog.Logger
}

// SlotMapFollower follows the slot map document in Consul KV with blocking
// queries (internal/consulwatch), for clients that route keys by it: each
// change of the map reaches them within a query's round trip, and a map
// that does not change is read again every WaitTime (at most FollowWait),
// each successful read delivered as a SlotMapReading so that the client
// knows how fresh its map is. It keeps the last valid map: a value that
// cannot be parsed, or a deleted key, is reported and changes nothing, so
// that clients go on routing by the last good map (which then ages).
//
// Build one with NewSlotMapFollower; the zero value is not usable. Current
// is safe for concurrent use; Run must not be called twice at a time.
type SlotMapFollower struct {
	key     string
	order   bool // the generation order holds (not reverted: revert.go)
	clock   clock.Clock
	get     consulwatch.Query[*api.KVPair]
	watch   consulwatch.Options[kvAnswer]
	current atomic.Pointer[SlotMap]
}

// kvAnswer is one answer of the followed key and what Run made of it.
type kvAnswer struct {
	pair *api.KVPair
	// err says why the answer delivered nothing (no key, not a valid map,
	// an older map); nil when it was delivered.
	err error
}

// NewSlotMapFollower checks opts and returns a follower; nothing is read
// before Run.
func NewSlotMapFollower(opts SlotMapFollowerOptions) (*SlotMapFollower, error) {
	switch {
	case opts.Client == nil:
		return nil, errors.New("cachenodes: SlotMapFollowerOptions.Client is required")
	case opts.Key == "":
		return nil, errors.New("cachenodes: SlotMapFollowerOptions.Key is required")
	case opts.WaitTime < 0 || opts.MinInterval < 0:
		return nil, errors.New("cachenodes: SlotMapFollowerOptions durations must not be negative")
	}
	if opts.WaitTime == 0 || opts.WaitTime > FollowWait {
		opts.WaitTime = FollowWait
	}
	kv := opts.Client.KV()
	return &SlotMapFollower{
		key:   opts.Key,
		order: true,
		clock: clock.Or(opts.Clock),
		get: func(_ context.Context, q *api.QueryOptions) (*api.KVPair, *api.QueryMeta, error) {
			pair, meta, err := kv.Get(opts.Key, q)
			if err != nil {
				return nil, nil, fmt.Errorf("reading the slot map %s from consul: %w", opts.Key, err)
			}
			return pair, meta, nil
		},
		watch: consulwatch.Options[kvAnswer]{
			Name:        opts.Key,
			WaitTime:    opts.WaitTime,
			MinInterval: opts.MinInterval,
			Equal:       func(a, b kvAnswer) bool { return sameValue(a.pair, b.pair) },
			Clock:       opts.Clock,
			Logger:      opts.Logger,
		},
	}, nil
}

// sameValue reports whether two readings of a key hold the same value
// (nil: the key does not exist).
func sameValue(a, b *api.KVPair) bool {
	if a == nil || b == nil {
		return a == b
	}
	return bytes.Equal(a.Value, b.Value)
}

// Current returns the last valid slot map read, or nil before the first.
func (f *SlotMapFollower) Current() *SlotMap { return f.current.Load() }

// Run follows the key until ctx ends, retrying failed queries forever. It
// calls onRead after every query that read a valid map not older than the
// current one, changed or not, with the current map (the one read, when
// MapOrder takes it) and the time the answer arrived by Options.Clock:
// the client's map is as fresh as that. It never takes a map whose
// (generation, revision) is lower than the current one's (MapOrder).
// onError receives every failed query, every stored value that is not a
// valid slot map (the error wraps ErrInvalidSlotMap), a missing key
// (ErrSlotMapNotStored) and an older map (ErrOlderGeneration), each once
// while the stored value stays; such an answer delivers no reading, and
// the current map stays. Both callbacks run on Run's goroutine; either may
// be nil.
func (f *SlotMapFollower) Run(ctx context.Context, onRead func(SlotMapReading), onError func(error)) {
	report := func(err error) {
		if onError != nil {
			onError(err)
		}
	}
	query := func(ctx context.Context, q *api.QueryOptions) (kvAnswer, *api.QueryMeta, error) {
		pair, meta, err := f.get(ctx, q)
		if err != nil || meta == nil {
			return kvAnswer{}, meta, err
		}
		at := f.clock.Now()
		a := kvAnswer{pair: pair, err: f.take(pair)}
		if a.err == nil && onRead != nil {
			onRead(SlotMapReading{Map: f.current.Load(), ReadAt: at})
		}
		return a, meta, nil
	}
	consulwatch.Run(ctx, f.watch, query, func(a kvAnswer, _ uint64) error {
		if a.err != nil {
			report(a.err) // once per stored value: consulwatch skips an equal one
		}
		return nil
	}, report)
}

// take makes the map in pair current when MapOrder takes it, and returns
// why it delivers nothing: no key, not a valid map, or a map older than
// the current one; nil for a map that is current now (taken, or the same).
func (f *SlotMapFollower) take(pair *api.KVPair) error {
	if pair == nil {
		return fmt.Errorf("reading %s: %w; keeping the last map", f.key, ErrSlotMapNotStored)
	}
	m, err := ParseSlotMap(pair.Value)
	if err != nil {
		return fmt.Errorf("reading %s: %w; keeping the last map", f.key, err)
	}
	cur := f.current.Load()
	take := !m.Equal(cur)
	if f.order {
		if take, err = MapOrder(cur, m); err != nil {
			return fmt.Errorf("reading %s: %w; keeping the last map", f.key, err)
		}
	}
	if take {
		f.current.Store(m)
	}
	return nil
}
