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
	"github.com/mcrib/mcrib/internal/revert"
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
	// requests sooner than WaitTime plus WaitTime/16.
	Client *api.Client
	// Key is the KV key of the slot map document,
	// "<kv-prefix>/<pool>/slotmap".
	Key string
	// WaitTime bounds how long one blocking query waits for a change;
	// zero means consulwatch.DefaultWaitTime (1 minute).
	WaitTime time.Duration
	// MinInterval is the least time between the starts of two queries
	// (jittered up by as much as half); zero means
	// consulwatch.DefaultMinInterval (50ms).
	MinInterval time.Duration
	// Clock times Run's waits; nil means the real clock.
	Clock clock.Clock
	// Logger receives a warning for every failed query; nil discards.
	Logger *slog.Logger
	// Reverted turns fixes off, for the simulation's self-test;
	// production leaves it zero. With revert.GenerationOrder the follower
	// delivers a map of a lower generation too.
	Reverted revert.Set
}

// SlotMapFollower follows the slot map document in Consul KV with blocking
// queries (internal/consulwatch), for clients that route keys by it: each
// change of the map reaches them within a query's round trip. It keeps the
// last valid map: a value that cannot be parsed, or a deleted key, is
// reported and changes nothing, so that clients go on routing by the last
// good map.
//
// Build one with NewSlotMapFollower; the zero value is not usable. Current
// is safe for concurrent use; Run must not be called twice at a time.
type SlotMapFollower struct {
	key     string
	order   bool // the generation order holds (not reverted)
	get     consulwatch.Query[*api.KVPair]
	watch   consulwatch.Options[*api.KVPair]
	current atomic.Pointer[SlotMap]
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
	kv := opts.Client.KV()
	return &SlotMapFollower{
		key:   opts.Key,
		order: !opts.Reverted.Reverted(revert.GenerationOrder),
		get: func(_ context.Context, q *api.QueryOptions) (*api.KVPair, *api.QueryMeta, error) {
			pair, meta, err := kv.Get(opts.Key, q)
			if err != nil {
				return nil, nil, fmt.Errorf("reading the slot map %s from consul: %w", opts.Key, err)
			}
			return pair, meta, nil
		},
		watch: consulwatch.Options[*api.KVPair]{
			Name:        opts.Key,
			WaitTime:    opts.WaitTime,
			MinInterval: opts.MinInterval,
			Equal:       sameValue,
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
// calls onChange with every valid map that differs from the current one
// (by SlotMap.Equal: a new updated_at alone does not count), once Current
// returns it. It never delivers a map whose generation is lower than the
// current one's (the generation order). onError receives every failed
// query, every stored value that is not a valid slot map (the error wraps
// ErrInvalidSlotMap), a missing key (ErrSlotMapNotStored) and a map of a
// lower generation (ErrOlderGeneration), each once; the current map stays.
// Both callbacks run on Run's goroutine; either may be nil.
func (f *SlotMapFollower) Run(ctx context.Context, onChange func(*SlotMap), onError func(error)) {
	report := func(err error) {
		if onError != nil {
			onError(err)
		}
	}
	consulwatch.Run(ctx, f.watch, f.get, func(pair *api.KVPair, _ uint64) error {
		if pair == nil {
			report(fmt.Errorf("reading %s: %w; keeping the last map", f.key, ErrSlotMapNotStored))
			return nil
		}
		m, err := ParseSlotMap(pair.Value)
		if err != nil {
			report(fmt.Errorf("reading %s: %w; keeping the last map", f.key, err))
			return nil
		}
		cur := f.current.Load()
		if m.Equal(cur) {
			return nil
		}
		if f.order {
			if err := CheckGeneration(cur, m); err != nil {
				report(fmt.Errorf("reading %s: %w; keeping the last map", f.key, err))
				return nil
			}
		}
		f.current.Store(m)
		if onChange != nil {
			onChange(m)
		}
		return nil
	}, report)
}
