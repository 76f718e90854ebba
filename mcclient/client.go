package mcclient

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"go.opentelemetry.io/otel/metric"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/clock"
)

// Defaults of the zero fields of Options.
const (
	DefaultMaxQueue       = 100_000
	DefaultRetryMin       = 100 * time.Millisecond
	DefaultRetryMax       = 2 * time.Second
	DefaultReplayInterval = 100 * time.Millisecond
)

// ErrVacantSlot is returned by Set, Add and Replace for a key whose slot
// has no node (Get and Delete answer memcache.ErrCacheMiss instead). It is
// cachenodes.ErrVacantSlot.
var ErrVacantSlot = cachenodes.ErrVacantSlot

// Source delivers the slot map: Run follows it until ctx ends, calling
// onRead with every successful read of a valid map (changed or not: the
// reading says how fresh the map is) and onError with every failure.
// *cachenodes.SlotMapFollower (Consul KV) and *HTTPFollower (mcrib's API)
// are sources.
type Source interface {
	Run(ctx context.Context, onRead func(cachenodes.SlotMapReading), onError func(error))
}

// Options configures a Client. The zero value of every field selects its
// default.
type Options struct {
	// Source is followed by Run; nil means the caller sets maps with
	// SetSlotMap or TakeReading.
	Source Source
	// Timeout is the socket read/write timeout of every node; zero means
	// gomemcache's (500ms). It is how long an unreachable node holds up
	// the operation that finds it so.
	Timeout time.Duration
	// MaxIdleConns is the idle connections kept per node; zero means
	// gomemcache's (2).
	MaxIdleConns int
	// MaxQueue bounds each node's replay queue, in keys; zero means
	// DefaultMaxQueue.
	MaxQueue int
	// RetryMin and RetryMax bound the backoff between replays to a node
	// that does not answer; zero means DefaultRetryMin, DefaultRetryMax.
	RetryMin, RetryMax time.Duration
	// ReplayInterval is how often Run looks for queues to replay in the
	// background; zero means DefaultReplayInterval.
	ReplayInterval time.Duration
	// Meter receives the replay metrics; nil means a no-op meter.
	Meter metric.Meter
	// Clock times the replay backoff and the background replays, the
	// map's freshness and the phases of a slot's move (until, ended_at,
	// the writes' end); nil means the real clock.
	Clock clock.Clock
	// Logger receives the source's failures and slot map changes; nil
	// discards them.
	Logger *slog.Logger
	// WarmTTL is the expiry given to a value read from a warming slot's
	// old holder and copied into its new holder; zero means
	// DefaultWarmTTL. Set it to the --warm-ttl mcrib serves with, so the
	// Go client and mcrouter's WarmUpRoute fill alike.
	WarmTTL time.Duration

	// Dial makes the connection of one node address; nil means a
	// gomemcache client with Timeout and MaxIdleConns. Tests and
	// simulators set it to reach nodes of their own.
	Dial func(addr string) (Conn, error)
}

// shared is what every node of a client needs.
type shared struct {
	clock   clock.Clock
	metrics *clientMetrics
}

// Client routes keys by the slot map over gomemcache and replays failed
// deletes. Build one with New; it is safe for concurrent use. No operation
// needs a goroutine of its own (a replay runs in the caller's), and no
// lock is held while a node is called.
type Client struct {
	opts  Options
	sh    *shared
	route atomic.Pointer[routing]
	// durable, order, tombstones, freshReads and writeGrace are the
	// fixes revert.WarmWriteDurable, revert.GenerationOrder,
	// revert.Tombstones, revert.FreshWarmReads and
	// revert.EndedWarmingGrace, in place.
	durable, order, tombstones, freshReads, writeGrace bool
	// first is closed when the client takes its first map.
	first chan struct{}

	mu    sync.Mutex       // serializes SetSlotMap and guards nodes
	nodes map[string]*node // every node with a slot, or parked with a queue, by ID
}

// New returns a client with no slot map: every operation fails with
// ErrNoSlotMap until Run receives one or SetSlotMap sets one.
func New(opts Options) (*Client, error) {
	if opts.MaxQueue < 0 || opts.Timeout < 0 || opts.RetryMin < 0 || opts.RetryMax < 0 || opts.ReplayInterval < 0 || opts.WarmTTL < 0 {
		return nil, errors.New("mcclient: Options must not be negative")
	}
	opts.MaxQueue = cmp.Or(opts.MaxQueue, DefaultMaxQueue)
	opts.RetryMin = cmp.Or(opts.RetryMin, DefaultRetryMin)
	opts.RetryMax = cmp.Or(opts.RetryMax, DefaultRetryMax)
	opts.ReplayInterval = cmp.Or(opts.ReplayInterval, DefaultReplayInterval)
	opts.WarmTTL = cmp.Or(opts.WarmTTL, DefaultWarmTTL)
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Dial == nil {
		o := opts
		opts.Dial = func(addr string) (Conn, error) { return dialBackend(addr, o) }
	}
	c := &Client{opts: opts, nodes: map[string]*node{}, first: make(chan struct{}),
		durable: true, order: true, tombstones: true, freshReads: true, writeGrace: true}
	m, err := newMetrics(opts.Meter, c.queueLengths, c.MapAge)
	if err != nil {
		return nil, err
	}
	c.sh = &shared{clock: clock.Or(opts.Clock), metrics: m}
	return c, nil
}

// Run follows Options.Source (if any) and replays queued deletes in the
// background, until ctx ends.
func (c *Client) Run(ctx context.Context) {
	var wg sync.WaitGroup
	if c.opts.Source != nil {
		wg.Go(func() {
			c.opts.Source.Run(ctx, func(r cachenodes.SlotMapReading) {
				if err := c.TakeReading(r); err != nil {
					c.opts.Logger.Warn("mcclient: cannot route by the new slot map; keeping the last", "generation", r.Map.Generation(), "revision", r.Map.Revision(), "err", err)
				}
			}, func(err error) {
				c.opts.Logger.Warn("mcclient: following the slot map failed", "err", err)
			})
		})
	}
	t := c.sh.clock.NewTicker(c.opts.ReplayInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-t.C():
			c.replayAll(&wg)
		}
	}
}

// WaitForSlotMap returns nil once the client has a slot map (Run took one
// from Options.Source, or SetSlotMap set one); until then every operation
// fails with ErrNoSlotMap. When ctx ends first the error wraps
// ErrNoSlotMap and ctx's cause. Run must be running (or SetSlotMap be
// called) for the wait to end.
func (c *Client) WaitForSlotMap(ctx context.Context) error {
	select {
	case <-c.first:
		return nil
	default:
	}
	select {
	case <-c.first:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("mcclient: waiting for the first slot map: %w (%w)", ErrNoSlotMap, context.Cause(ctx))
	}
}

// Replay sends the queued deletes of every node that has some, in the
// caller's goroutine: slot holders, warm sources, and nodes parked
// without a slot (a client with an older map may still read them). A
// node still backing off, or replayed by another goroutine, is skipped.
// Run does this in the background every ReplayInterval; a caller that
// drives the client without Run (a simulation) calls Replay instead.
func (c *Client) Replay() {
	for _, n := range c.queued() {
		n.replay()
	}
}

// replayAll starts a replay of every node with a queue, as Replay does,
// each on a goroutine of wg.
func (c *Client) replayAll(wg *sync.WaitGroup) {
	for _, n := range c.queued() {
		wg.Go(func() { n.replay() })
	}
}

// queued returns the known nodes with deletes queued, by ID (so that a
// simulation's Replay calls the nodes in the same order every time).
func (c *Client) queued() []*node {
	c.mu.Lock()
	var out []*node
	for _, n := range c.nodes {
		if n.q.Len() > 0 {
			out = append(out, n)
		}
	}
	c.mu.Unlock()
	slices.SortFunc(out, func(a, b *node) int { return strings.Compare(a.id, b.id) })
	return out
}

// slotOf is cachenodes.KeySlot.
func slotOf(key string, slots int) int { return cachenodes.KeySlot(key, slots) }

// Get reads key from the node of its slot. A vacant slot answers
// memcache.ErrCacheMiss, and so does a tombstone (see tombstone.go) and a
// node with queued deletes that are not replayed first: the node still
// fails, its backoff has not passed, or another goroutine is replaying
// them (a Get never waits for a replay). While the slot warms and the
// map is fresh, a miss is read again from the slot's old holder and a hit
// there is copied into the node (see the package doc).
func (c *Client) Get(key string) (*memcache.Item, error) {
	r := c.route.Load()
	if r == nil {
		return nil, ErrNoSlotMap
	}
	i := slotOf(key, len(r.slots))
	n := r.slots[i]
	if n == nil || !n.ready() {
		return nil, memcache.ErrCacheMiss
	}
	w := r.warmOf(i)
	if w == nil {
		return missIfTombstone(n.be.Get(key))
	}
	mark := c.markFills(w, key)
	it, err := n.be.Get(key)
	if err == nil {
		if cachenodes.IsTombstone(it) {
			return nil, memcache.ErrCacheMiss // a delete's: the old holder is not read
		}
		if !c.suspectHit(mark) {
			return it, nil
		}
		it, err = nil, memcache.ErrCacheMiss // ask the old holder, below
	}
	if errors.Is(err, memcache.ErrCacheMiss) {
		if now := c.sh.clock.Now(); c.readsSource(r, w, now) {
			return c.warmGet(r, n, w, key)
		}
	}
	return it, err
}

// Delete deletes key from the node of its slot: memcache.ErrCacheMiss when
// it was not there (or the slot is vacant: no node holds it). When the
// node is unreachable the delete is queued for replay and the error wraps
// ErrQueued (and the network error, when there was one). While the slot
// changes holder the delete goes to the slot's holder, or old holder, and
// sets the key's tombstone in the incoming node or new holder (see
// warmwrite.go); when the slot has a warming object it returns nil
// without telling whether the key was there. When the old holder did not
// take it the error wraps ErrWarmSourceMissed, when the incoming node did
// not, ErrIncomingMissed (see the package doc).
func (c *Client) Delete(key string) error {
	return c.write(key, writeDelete, func(be Conn) error { return be.Delete(key) })
}

// Set writes item to the node of its slot. It is an invalidating write:
// when the node is unreachable a delete of the key is queued (the node may
// hold an older value) and the error wraps ErrQueued. While the slot
// changes holder it goes to both holders, or leaves a tombstone (see
// Delete).
func (c *Client) Set(item *memcache.Item) error {
	return c.write(item.Key, writeSet, func(be Conn) error { return be.Set(item) })
}

// Replace is memcached's replace on the node of the item's slot; like Set,
// an invalidating write, sent to a warming slot's old holder too. It is
// stored when either had the key.
func (c *Client) Replace(item *memcache.Item) error {
	return c.write(item.Key, writeReplace, func(be Conn) error { return be.Replace(item) })
}

// Add is memcached's add on the node of the item's slot (memcache.
// ErrNotStored when the key is there): during an announce the slot's
// holder, while the slot warms its new holder. A tombstone is replaced,
// by cas on it, as a miss would be. It only fills a miss, so a failed Add
// queues nothing, and a warming slot's old holder does not get it: the
// node answers reads first, and the old holder's own copy, if any, is
// kept in step by the sets and deletes it gets.
func (c *Client) Add(item *memcache.Item) error {
	r := c.route.Load()
	if r == nil {
		return ErrNoSlotMap
	}
	n := r.slots[slotOf(item.Key, len(r.slots))]
	if n == nil {
		return ErrVacantSlot
	}
	if !n.ready() {
		return memcache.ErrNotStored
	}
	return addOverTombstone(n.be, item)
}

// write runs op, an invalidating write of key of kind, in the key's slot:
// on its holder, queuing a delete of the key when the holder is
// unreachable, and, while the slot changes holder, on the other node as
// warmwrite.go says.
func (c *Client) write(key string, kind warmWriteKind, op func(Conn) error) error {
	r := c.route.Load()
	if r == nil {
		return ErrNoSlotMap
	}
	i := slotOf(key, len(r.slots))
	n := r.slots[i]
	if b := r.incomingOf(i); b != nil {
		return c.writeAnnounced(n, b, key, kind, op)
	}
	if n == nil {
		if kind == writeDelete {
			return memcache.ErrCacheMiss
		}
		return ErrVacantSlot
	}
	if w := r.warmOf(i); w != nil {
		return c.writeMoving(n, w, key, kind, op, c.sh.clock.Now())
	}
	return c.writeNode(n, key, op)
}

// NodeFor returns the node of key's slot, and false when the slot is
// vacant or there is no map.
func (c *Client) NodeFor(key string) (cachenodes.Node, bool) {
	r := c.route.Load()
	if r == nil {
		return cachenodes.Node{}, false
	}
	nd := r.m.Slot(cachenodes.KeySlot(key, len(r.slots)))
	return nd, !nd.IsZero()
}

// SlotMap returns the map the client routes by, or nil.
func (c *Client) SlotMap() *cachenodes.SlotMap {
	if r := c.route.Load(); r != nil {
		return r.m
	}
	return nil
}

// QueueLen returns the number of deletes queued for node id.
func (c *Client) QueueLen(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := c.nodes[id]; n != nil {
		return n.q.Len()
	}
	return 0
}

// queueLengths calls f with every known node's queue length.
func (c *Client) queueLengths(f func(id string, n int)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, n := range c.nodes {
		f(id, n.q.Len())
	}
}

// Close closes every node's idle connections; queued deletes are lost.
func (c *Client) Close() error {
	c.mu.Lock()
	nodes := make([]*node, 0, len(c.nodes))
	for _, n := range c.nodes {
		nodes = append(nodes, n)
	}
	c.mu.Unlock()
	slices.SortFunc(nodes, func(a, b *node) int { return strings.Compare(a.id, b.id) })
	var errs []error
	for _, n := range nodes { // outside the lock: a Conn may call the client
		errs = append(errs, n.be.Close())
	}
	c.sh.metrics.reg.Unregister()
	return errors.Join(errs...)
}
