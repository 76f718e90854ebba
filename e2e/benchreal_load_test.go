package e2e

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mcrib/mcrib/cachenodes"
)

// loadGen is the bench-real load generator: cache-aside reads of
// Zipf-distributed keys (get, and set on a miss) with a fraction of writes
// that invalidate their key (delete, as a cache-aside writer does), at a
// bounded rate, routed by the slot map mcrib serves. The writes give the
// pool a stationary hit rate once every key was set: a read misses when the
// last operation on its key was a write, whatever the request rate.
type loadGen struct {
	apiAddr   string  // mcrib's API, host:port
	keys      uint64  // size of the key space
	zipfS     float64 // Zipf exponent (> 1)
	opsPerSec int     // bound on reads plus writes a second
	writeFrac float64 // fraction of operations that are writes
	workers   int

	sel    *cachenodes.Selector
	client *memcache.Client

	gens   sync.Map // slot map generations seen, as uint64 → struct{}
	reads  atomic.Int64
	sets   atomic.Int64
	writes atomic.Int64
	errs   atomic.Int64
}

// newLoadGen reads the served slot map once and builds the client.
func newLoadGen(apiAddr string, keys uint64, opsPerSec int) (*loadGen, error) {
	sm, err := fetchSlotMap(apiAddr)
	if err != nil {
		return nil, err
	}
	sel, err := cachenodes.NewSelector(sm)
	if err != nil {
		return nil, err
	}
	c := memcache.NewFromSelector(sel)
	c.Timeout = 2 * time.Second
	c.MaxIdleConns = 8
	g := &loadGen{apiAddr: apiAddr, keys: keys, zipfS: 1.1, opsPerSec: opsPerSec,
		writeFrac: 0.03, workers: 4, sel: sel, client: c}
	g.gens.Store(sm.Generation(), struct{}{})
	return g, nil
}

// fetchSlotMap GETs /v1/slotmap from addr.
func fetchSlotMap(addr string) (*cachenodes.SlotMap, error) {
	resp, err := http.Get("http://" + addr + "/v1/slotmap")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /v1/slotmap: %d", resp.StatusCode)
	}
	return cachenodes.ParseSlotMap(body)
}

func keyName(k uint64) string { return fmt.Sprintf("bench-%08d", k) }

// value is the cached value of key k: 100 bytes.
func value(k uint64) []byte { return fmt.Appendf(nil, "%-100d", k) }

// prefill puts the pool in the state the load converges to, so the hit rate
// is stationary from the start: every key cached except a writeFrac of
// them, chosen at random, as if their last operation were a write.
func (g *loadGen) prefill(ctx context.Context) error {
	return prefillKeys(ctx, g.keys, g.writeFrac, 0x9f11, keyName, g.client.Set)
}

// prefillKeys sets each of keys (named by name) but a writeFrac of them,
// chosen at random from seed, through set, with 8 writers; it returns the
// first error.
func prefillKeys(ctx context.Context, keys uint64, writeFrac float64, seed uint64, name func(uint64) string, set func(*memcache.Item) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range uint64(8) {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(w, seed))
			for k := w; k < keys && ctx.Err() == nil; k += 8 {
				if r.Float64() < writeFrac {
					continue
				}
				if err := set(&memcache.Item{Key: name(k), Value: value(k)}); err != nil {
					errs <- fmt.Errorf("prefill %s: %w", name(k), err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// run generates load until ctx ends, and follows the served slot map.
func (g *loadGen) run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { g.follow(ctx) })
	for w := range g.workers {
		wg.Go(func() { g.work(ctx, uint64(w)) })
	}
	wg.Wait()
}

// follow polls the served slot map and routes by each new generation.
func (g *loadGen) follow(ctx context.Context) {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		sm, err := fetchSlotMap(g.apiAddr)
		if err != nil {
			continue
		}
		if _, seen := g.gens.LoadOrStore(sm.Generation(), struct{}{}); !seen {
			g.sel.SetSlotMap(sm)
		}
	}
}

// work runs one worker: every 10 ms its share of the rate; a worker that
// falls behind skips ticks rather than catching up.
func (g *loadGen) work(ctx context.Context, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 0xbe9c4))
	z := rand.NewZipf(r, g.zipfS, 1, g.keys-1)
	perTick := max(1, g.opsPerSec/100/g.workers)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for range perTick {
			g.op(r, z.Uint64())
		}
	}
}

// op reads key k cache-aside, or writes it (invalidating the cached copy).
func (g *loadGen) op(r *rand.Rand, k uint64) {
	name := keyName(k)
	if r.Float64() < g.writeFrac {
		g.writes.Add(1)
		if err := g.client.Delete(name); err != nil && err != memcache.ErrCacheMiss {
			g.errs.Add(1)
		}
		return
	}
	g.reads.Add(1)
	_, err := g.client.Get(name)
	switch {
	case err == memcache.ErrCacheMiss:
		g.sets.Add(1)
		if err := g.client.Set(&memcache.Item{Key: name, Value: value(k)}); err != nil {
			g.errs.Add(1)
		}
	case err != nil:
		g.errs.Add(1)
	}
}

// generations returns how many slot map generations the generator saw.
func (g *loadGen) generations() int {
	n := 0
	g.gens.Range(func(any, any) bool { n++; return true })
	return n
}
