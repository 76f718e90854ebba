package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mcrib/mcrib/mcclient"
)

// zoneLoad is the load of the zone-drain benchmark: cache-aside reads of
// Zipf-distributed keys through mcclient (get; on a miss, read the
// "database" and set), with a fraction of writes that invalidate their key
// (delete), at a bounded rate. Every read and every miss is counted per
// second: a miss is a read that reached the database.
type zoneLoad struct {
	c         *mcclient.Client
	keys      uint64
	opsPerSec int
	writeFrac float64
	workers   int

	reads, misses, errs atomic.Int64

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

func zoneKey(k uint64) string { return fmt.Sprintf("zd-%08d", k) }

// prefill sets every key but a writeFrac of them (at random), the state the
// load converges to, so that the hit rate is steady from the start.
func (l *zoneLoad) prefill(ctx context.Context) error {
	return prefillKeys(ctx, l.keys, l.writeFrac, 0x20e5, zoneKey, l.c.Set)
}

// run generates load until ctx ends, and counts each second.
func (l *zoneLoad) run(ctx context.Context) {
	var wg sync.WaitGroup
	start := time.Now()
	wg.Go(func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		var r0, m0, e0 int64
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			r, m, e := l.reads.Load(), l.misses.Load(), l.errs.Load()
			l.mu.Lock()
			l.seconds = append(l.seconds, loadSecond{at: time.Since(start), reads: r - r0, misses: m - m0, errs: e - e0})
			l.mu.Unlock()
			r0, m0, e0 = r, m, e
		}
	})
	for w := range l.workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 0x70e5))
			z := rand.NewZipf(r, 1.1, 1, l.keys-1)
			// Each tick adds the worker's share of opsPerSec for 10 ms to a
			// budget and spends its whole operations, so the rate is
			// opsPerSec even when the share of a tick is not whole.
			perTick := float64(l.opsPerSec) / 100 / float64(l.workers)
			var budget float64
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				for budget += perTick; budget >= 1; budget-- {
					l.op(r, z.Uint64())
				}
			}
		})
	}
	wg.Wait()
}

// op reads key k cache-aside, or writes it (invalidating its cached copy).
func (l *zoneLoad) op(r *rand.Rand, k uint64) {
	name := zoneKey(k)
	if r.Float64() < l.writeFrac {
		if err := l.c.Delete(name); err != nil && !errors.Is(err, memcache.ErrCacheMiss) {
			l.errs.Add(1)
		}
		return
	}
	l.reads.Add(1)
	_, err := l.c.Get(name)
	switch {
	case err == nil:
	case errors.Is(err, memcache.ErrCacheMiss):
		l.misses.Add(1) // the database read
		if err := l.c.Set(&memcache.Item{Key: name, Value: value(k)}); err != nil {
			l.errs.Add(1)
		}
	default:
		l.misses.Add(1) // an error is served from the database too
		l.errs.Add(1)
	}
}

// window returns the seconds whose end lies in (from, to].
func (l *zoneLoad) window(from, to time.Duration) []loadSecond {
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
func (l *zoneLoad) all() []loadSecond {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]loadSecond(nil), l.seconds...)
}

// sum adds the reads and misses of secs.
func sum(secs []loadSecond) (reads, misses, errs int64) {
	for _, s := range secs {
		reads += s.reads
		misses += s.misses
		errs += s.errs
	}
	return
}
