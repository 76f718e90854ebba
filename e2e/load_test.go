package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/mcclient"
)

// cacheClient is what a load needs of a cache client: gomemcache's (routed
// by a slot map through cachenodes.Selector) and mcclient's have it.
type cacheClient interface {
	Get(key string) (*memcache.Item, error)
	Set(item *memcache.Item) error
	Delete(key string) error
}

// cacheLoad is the one load generator of these tests: an application's
// cache-aside traffic through a cache client. Each operation reads a key
// (get; on a miss the value is read from the "database" and set) or, for a
// writeFrac of the operations, writes it, which invalidates its cached copy
// (delete, as a cache-aside writer does). The writes give the pool a
// stationary hit rate once every key was set: a read misses when the last
// operation on its key was a write, whatever the request rate.
//
// The keys, 0 … keys-1 named by name, are drawn Zipf-distributed (s = 1.1),
// unless pick names each worker's i-th key. The operations are spread over
// workers: every 10 ms each adds its share of opsPerSec to a budget and
// spends the whole operations in it, so the rate is opsPerSec even when a
// tick's share is not whole; with opsPerSec 0 each worker goes as fast as
// the client answers. Every operation is counted, in all and per second
// since run began.
type cacheLoad struct {
	client    cacheClient
	name      func(k uint64) string // the key of number k
	keys      uint64
	opsPerSec int     // 0: as fast as the client answers
	writeFrac float64 // fraction of operations that are writes
	workers   int
	// seed seeds the draws of the workers (worker w draws from PCG(w,
	// seed)), prefillSeed those of prefill.
	seed, prefillSeed uint64
	// pick, when set, gives the number of each worker's i-th key instead
	// of a Zipf draw.
	pick func(i uint64) uint64
	// readOnly leaves a key that missed unset: every read of a key never
	// set misses.
	readOnly bool

	// reads are gets; misses, the reads served from the database (a cache
	// miss, or an error); sets, the sets after a cache miss; writes, the
	// deletes; errs, every error of the client.
	reads, misses, sets, writes, errs atomic.Int64

	mu      sync.Mutex
	seconds []loadSecond // one per second since run began
}

// loadSecond is the load's count over one second.
type loadSecond struct {
	at            time.Duration // end of the second, since the load began
	reads, misses int64
	errs          int64
}

// hitRate returns the second's hit rate, and false when nothing was read.
func (s loadSecond) hitRate() (float64, bool) {
	if s.reads == 0 {
		return 0, false
	}
	return 1 - float64(s.misses)/float64(s.reads), true
}

// value is the cached value of key k: 100 bytes.
func value(k uint64) []byte { return fmt.Appendf(nil, "%-100d", k) }

// prefill puts the pool in the state the load converges to, so the hit rate
// is stationary from the start: every key set but a writeFrac of them,
// chosen at random (from prefillSeed), as if their last operation were a
// write. Eight writers set the keys; it returns the first error.
func (l *cacheLoad) prefill(ctx context.Context) error {
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range uint64(8) {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(w, l.prefillSeed))
			for k := w; k < l.keys && ctx.Err() == nil; k += 8 {
				if r.Float64() < l.writeFrac {
					continue
				}
				// A set that fails under a loaded machine (a read timeout)
				// is tried again: the prefill is the test's setup, not what
				// it measures.
				var err error
				for try := 0; try < 5 && ctx.Err() == nil; try++ {
					if err = l.client.Set(&memcache.Item{Key: l.name(k), Value: value(k)}); err == nil {
						break
					}
					time.Sleep(time.Duration(try+1) * 100 * time.Millisecond)
				}
				if err != nil {
					errs <- fmt.Errorf("prefill %s, 5 tries: %w", l.name(k), err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// run generates load until ctx ends, and counts each second.
func (l *cacheLoad) run(ctx context.Context) {
	var wg sync.WaitGroup
	start := time.Now()
	wg.Go(func() {
		var r0, m0, e0 int64
		every(ctx, time.Second, func() {
			r, m, e := l.reads.Load(), l.misses.Load(), l.errs.Load()
			l.mu.Lock()
			l.seconds = append(l.seconds, loadSecond{at: time.Since(start), reads: r - r0, misses: m - m0, errs: e - e0})
			l.mu.Unlock()
			r0, m0, e0 = r, m, e
		})
	})
	for w := range l.workers {
		wg.Go(func() { l.work(ctx, uint64(w)) })
	}
	wg.Wait()
}

// work runs worker w until ctx ends.
func (l *cacheLoad) work(ctx context.Context, w uint64) {
	r := rand.New(rand.NewPCG(w, l.seed))
	next := func() func() uint64 {
		if l.pick != nil {
			var i uint64
			return func() uint64 { i++; return l.pick(i - 1) }
		}
		return rand.NewZipf(r, 1.1, 1, l.keys-1).Uint64
	}()
	if l.opsPerSec == 0 {
		for ctx.Err() == nil {
			l.op(r, next())
		}
		return
	}
	perTick := float64(l.opsPerSec) / 100 / float64(l.workers)
	var budget float64
	every(ctx, 10*time.Millisecond, func() {
		for budget += perTick; budget >= 1; budget-- {
			l.op(r, next())
		}
	})
}

// every calls f every d until ctx ends.
func every(ctx context.Context, d time.Duration, f func()) {
	tick := time.NewTicker(d)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		f()
	}
}

// op reads key k cache-aside, or writes it (invalidating its cached copy).
func (l *cacheLoad) op(r *rand.Rand, k uint64) {
	name := l.name(k)
	if r.Float64() < l.writeFrac {
		l.writes.Add(1)
		if err := l.client.Delete(name); err != nil && !errors.Is(err, memcache.ErrCacheMiss) {
			l.errs.Add(1)
		}
		return
	}
	l.reads.Add(1)
	_, err := l.client.Get(name)
	switch {
	case err == nil:
	case errors.Is(err, memcache.ErrCacheMiss):
		l.misses.Add(1) // the database read
		if l.readOnly {
			return
		}
		l.sets.Add(1)
		if err := l.client.Set(&memcache.Item{Key: name, Value: value(k)}); err != nil {
			l.errs.Add(1)
		}
	default:
		l.misses.Add(1) // an error is served from the database too
		l.errs.Add(1)
	}
}

// window returns the seconds whose end lies in (from, to].
func (l *cacheLoad) window(from, to time.Duration) []loadSecond {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []loadSecond
	for _, s := range l.seconds {
		if s.at > from && s.at <= to {
			out = append(out, s)
		}
	}
	return out
}

// all returns every second counted.
func (l *cacheLoad) all() []loadSecond {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]loadSecond(nil), l.seconds...)
}

// sum adds the reads, misses and errors of secs.
func sum(secs []loadSecond) (reads, misses, errs int64) {
	for _, s := range secs {
		reads += s.reads
		misses += s.misses
		errs += s.errs
	}
	return
}

// windowFigures returns what a bench reports of a window of seconds
// against the steady hit rate: reads and misses, the misses above the
// steady miss rate, the lowest hit rate of a second, and the seconds
// below 90%.
func windowFigures(win []loadSecond, steady float64) (reads, misses int64, extra, lowest float64, belowNinety int) {
	reads, misses, _ = sum(win)
	extra = float64(misses) - (1-steady)*float64(reads)
	lowest = 1
	for _, s := range win {
		if h, ok := s.hitRate(); ok {
			lowest = min(lowest, h)
			if h < 0.90 {
				belowNinety++
			}
		}
	}
	return reads, misses, extra, lowest, belowNinety
}

// measuredLoad is a benchmark's cache-aside load: prefilled, then run
// until stop, its steady state measured first.
type measuredLoad struct {
	*cacheLoad
	started     time.Time // when the load began
	steady      float64   // the hit rate over the baseline
	readsPerSec float64   // reads a second over the baseline
	stop        func()    // ends the load and waits for it
}

// startMeasuredLoad prefills the zone tests' load of keys through c, runs
// it at opsPerSec, and returns once warmup and then baseline have passed,
// the steady state measured over the baseline. The caller stops it.
func startMeasuredLoad(t *testing.T, name string, c *mcclient.Client, keys uint64, opsPerSec int, warmup, baseline time.Duration) *measuredLoad {
	t.Helper()
	m := &measuredLoad{cacheLoad: zoneLoad(c, keys, opsPerSec)}
	ctx, cancel := context.WithCancel(context.Background())
	if err := m.prefill(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	m.started = time.Now()
	var wg sync.WaitGroup
	wg.Go(func() { m.run(ctx) })
	m.stop = func() { cancel(); wg.Wait() }
	time.Sleep(warmup + baseline)
	reads, misses, _ := sum(m.window(warmup, warmup+baseline))
	if reads == 0 {
		m.stop()
		t.Fatal("no read during the baseline")
	}
	m.steady = 1 - float64(misses)/float64(reads)
	m.readsPerSec = float64(reads) / baseline.Seconds()
	t.Logf("%s: steady hit rate %s over %d reads in %v", name, pct(m.steady), reads, baseline)
	return m
}

// lowestOver returns the lowest hit rate of n consecutive seconds of win
// (1 when nothing was read): the reads and misses of the n seconds summed,
// so that a second with few reads weighs little.
func lowestOver(win []loadSecond, n int) float64 {
	lowest := 1.0
	for i := 0; i+n <= len(win); i++ {
		if reads, misses, _ := sum(win[i : i+n]); reads > 0 {
			lowest = min(lowest, 1-float64(misses)/float64(reads))
		}
	}
	return lowest
}

// zoneLoad is the load of the zone tests through c: keys "zd-00000000" …,
// 3% writes, four workers.
func zoneLoad(c *mcclient.Client, keys uint64, opsPerSec int) *cacheLoad {
	return &cacheLoad{client: c, name: func(k uint64) string { return fmt.Sprintf("zd-%08d", k) },
		keys: keys, opsPerSec: opsPerSec, writeFrac: 0.03, workers: 4, seed: 0x70e5, prefillSeed: 0x20e5}
}

// mapPoller routes a gomemcache client by the slot map an mcrib serves, as
// an application without mcclient would: it polls GET /v1/slotmap every
// 250 ms, hands each new generation to the selector, and counts the
// generations it saw.
type mapPoller struct {
	api  *apiClient
	sel  *cachenodes.Selector
	gens sync.Map // slot map generations seen, as uint64 → struct{}
}

// newMapPoller reads the served slot map once and returns the poller and a
// client routed by it.
func newMapPoller(api *apiClient) (*mapPoller, *memcache.Client, error) {
	sm, _, err := api.slotMap("")
	if err != nil {
		return nil, nil, err
	}
	sel, err := cachenodes.NewSelector(sm)
	if err != nil {
		return nil, nil, err
	}
	c := memcache.NewFromSelector(sel)
	c.Timeout = 2 * time.Second
	c.MaxIdleConns = 8
	p := &mapPoller{api: api, sel: sel}
	p.gens.Store(sm.Generation(), struct{}{})
	return p, c, nil
}

// run polls the served slot map until ctx ends.
func (p *mapPoller) run(ctx context.Context) {
	every(ctx, 250*time.Millisecond, func() {
		sm, _, err := p.api.slotMap("")
		if err != nil {
			return
		}
		if _, seen := p.gens.LoadOrStore(sm.Generation(), struct{}{}); !seen {
			p.sel.SetSlotMap(sm)
		}
	})
}

// generations returns how many slot map generations the poller saw.
func (p *mapPoller) generations() int {
	n := 0
	p.gens.Range(func(any, any) bool { n++; return true })
	return n
}
