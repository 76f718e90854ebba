package mcclient

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/internal/revert"
)

// errDown is the error of a fake node that does not answer: a timeout, as
// gomemcache reports a paused memcached.
var errDown error = &net.OpError{Op: "read", Net: "tcp", Err: timeoutErr{}}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// fakeNode is an in-memory memcached that can be taken down.
type fakeNode struct {
	mu       sync.Mutex
	addr     string
	down     bool
	items    map[string][]byte
	exps     map[string]int32  // the expiry each item was stored with
	cas      map[string]uint64 // each item's CAS unique
	casSeq   uint64
	deletes  []string    // every delete that reached the node, in order
	calls    int         // every call, answered or not
	onDelete chan string // when set, gets every delete that reached the node
	// beforeAdd, when set, runs at the start of every Add, outside the
	// lock: tests race other operations with a warm fill there.
	beforeAdd func(key string)
	// afterAdd, when set, runs after every Add that stored, outside the
	// lock, before the Add returns.
	afterAdd func(key string)
	// afterGet, when set, runs after every Get that answered, outside
	// the lock, before the Get returns.
	afterGet func(key string)
}

func (f *fakeNode) setDown(d bool) { f.mu.Lock(); f.down = d; f.mu.Unlock() }

func (f *fakeNode) call() error {
	f.calls++
	if f.down {
		return errDown
	}
	return nil
}

func (f *fakeNode) Get(key string) (*memcache.Item, error) {
	it, err := f.get(key)
	if f.afterGet != nil && (err == nil || err == memcache.ErrCacheMiss) {
		f.afterGet(key)
	}
	return it, err
}

func (f *fakeNode) get(key string) (*memcache.Item, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(); err != nil {
		return nil, err
	}
	v, ok := f.items[key]
	if !ok {
		return nil, memcache.ErrCacheMiss
	}
	return &memcache.Item{Key: key, Value: v, CasID: f.cas[key]}, nil
}

func (f *fakeNode) GetMulti(keys []string) (map[string]*memcache.Item, error) {
	out := map[string]*memcache.Item{}
	for _, k := range keys {
		it, err := f.Get(k)
		switch {
		case err == nil:
			out[k] = it
		case err != memcache.ErrCacheMiss:
			return out, err
		}
	}
	return out, nil
}

func (f *fakeNode) Set(it *memcache.Item) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(); err != nil {
		return err
	}
	f.items[it.Key] = it.Value
	if f.exps == nil {
		f.exps, f.cas = map[string]int32{}, map[string]uint64{}
	}
	f.exps[it.Key] = it.Expiration
	f.casSeq++
	f.cas[it.Key] = f.casSeq
	return nil
}

// CompareAndSwap stores it when the key's CAS unique is still it.CasID.
func (f *fakeNode) CompareAndSwap(it *memcache.Item) error {
	f.mu.Lock()
	if err := f.call(); err != nil {
		f.mu.Unlock()
		return err
	}
	f.calls-- // counted again by Set
	_, ok := f.items[it.Key]
	cas := f.cas[it.Key]
	f.mu.Unlock()
	switch {
	case !ok:
		return memcache.ErrCacheMiss
	case cas != it.CasID:
		return memcache.ErrCASConflict
	}
	return f.Set(it)
}

// tombstoned reports whether the node holds key's tombstone.
func (f *fakeNode) tombstoned(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.items[key]
	return ok && string(v) == cachenodes.TombstoneValue
}

func (f *fakeNode) Add(it *memcache.Item) error {
	if f.beforeAdd != nil {
		f.beforeAdd(it.Key)
	}
	f.mu.Lock()
	_, ok := f.items[it.Key]
	f.mu.Unlock()
	if ok {
		return memcache.ErrNotStored
	}
	if err := f.Set(it); err != nil {
		return err
	}
	if f.afterAdd != nil {
		f.afterAdd(it.Key)
	}
	return nil
}

func (f *fakeNode) Replace(it *memcache.Item) error { return f.Set(it) }

func (f *fakeNode) Delete(key string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(); err != nil {
		return err
	}
	f.deletes = append(f.deletes, key)
	if f.onDelete != nil {
		f.onDelete <- key
	}
	if _, ok := f.items[key]; !ok {
		return memcache.ErrCacheMiss
	}
	delete(f.items, key)
	return nil
}

func (f *fakeNode) Close() error { return nil }

// fakeFleet hands out fake nodes by address.
type fakeFleet struct {
	mu    sync.Mutex
	nodes map[string]*fakeNode
}

func (f *fakeFleet) node(addr string) *fakeNode {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.nodes == nil {
		f.nodes = map[string]*fakeNode{}
	}
	n := f.nodes[addr]
	if n == nil {
		n = &fakeNode{addr: addr, items: map[string][]byte{}}
		f.nodes[addr] = n
	}
	return n
}

// expireTombstones takes every tombstone out of every node of the fleet,
// as memcached does once cachenodes.TombstoneTTL has passed.
func (f *fakeFleet) expireTombstones() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range f.nodes {
		n.mu.Lock()
		for k, v := range n.items {
			if string(v) == cachenodes.TombstoneValue {
				delete(n.items, k)
			}
		}
		n.mu.Unlock()
	}
}

// testClient is a client over fake nodes, on a fake clock, with a metric
// reader.
type testClient struct {
	*Client
	fleet  *fakeFleet
	clock  *clock.Fake
	reader *sdkmetric.ManualReader
}

// newTestClient builds a client on a fake fleet and clock; reverted, when
// given, turns fixes off (revert.Apply).
func newTestClient(t *testing.T, opts Options, reverted ...revert.Set) *testClient {
	t.Helper()
	tc := &testClient{fleet: &fakeFleet{}, clock: clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), reader: sdkmetric.NewManualReader()}
	opts.Clock = tc.clock
	opts.Meter = sdkmetric.NewMeterProvider(sdkmetric.WithReader(tc.reader)).Meter("test")
	opts.Dial = func(addr string) (Conn, error) { return tc.fleet.node(addr), nil }
	tc.Client = newClient(t, opts, reverted...)
	return tc
}

// newClient returns New(opts) with the reverted fixes turned off, closed
// when the test ends.
func newClient(t *testing.T, opts Options, reverted ...revert.Set) *Client {
	t.Helper()
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range reverted {
		revert.Apply(c, s)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// slotMap builds a map from node IDs by slot ("" is vacant) and spares;
// node X listens at "X:11211".
func slotMap(t *testing.T, gen uint64, slots []string, spares ...string) *cachenodes.SlotMap {
	t.Helper()
	spec := cachenodes.SlotMapSpec{Pool: "default", Generation: gen}
	for _, id := range slots {
		n := cachenodes.Node{}
		if id != "" {
			n = cachenodes.Node{ID: id, Addr: "127.0.0.1:" + port(id)}
		}
		spec.Slots = append(spec.Slots, n)
	}
	for _, id := range spares {
		spec.Spares = append(spec.Spares, cachenodes.Node{ID: id, Addr: "127.0.0.1:" + port(id)})
	}
	m, err := cachenodes.NewSlotMap(spec)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// port gives each node ID ("a", "b", …) a port of its own.
func port(id string) string { return fmt.Sprint(11000 + int(id[0])) }

// keysOfSlot returns n keys whose slot, of slots, is slot.
func keysOfSlot(slot, slots, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		k := fmt.Sprintf("key-%d", i)
		if cachenodes.KeySlot(k, slots) == slot {
			out = append(out, k)
		}
	}
	return out
}

// counter returns the sum of the counter name's points whose attributes
// include want.
func (tc *testClient) counter(t *testing.T, name string, want ...attribute.KeyValue) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tc.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			var points []metricdata.DataPoint[int64]
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				points = d.DataPoints
			case metricdata.Gauge[int64]:
				points = d.DataPoints
			}
		next:
			for _, p := range points {
				for _, kv := range want {
					if v, ok := p.Attributes.Value(kv.Key); !ok || v != kv.Value {
						continue next
					}
				}
				sum += p.Value
			}
		}
	}
	return sum
}

// cachenodesNew is cachenodes.NewSlotMap.
var cachenodesNew = cachenodes.NewSlotMap
