package mcclient

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/testenv"
)

// benchPair is one real memcached, a plain gomemcache client of it and a
// mcclient routing to it by a one-slot map.
type benchPair struct {
	plain  *memcache.Client
	client *Client
}

// newBenchPair starts a memcached and returns the two clients of it, with
// bench-key stored. With shareConns the client's node runs on the plain client itself, so
// both use the same idle connection (served by the same memcached worker
// thread) and differ only by mcclient's layer: what BenchmarkOverheadP50
// compares. Without it each has its own connections, as in production.
func newBenchPair(tb testing.TB, shareConns bool) benchPair {
	tb.Helper()
	mc := testenv.StartMemcached(tb)
	m, err := cachenodes.NewSlotMap(cachenodes.SlotMapSpec{Pool: "bench", Generation: 1, Slots: []cachenodes.Node{{ID: "mc-01", Addr: mc.Addr}}})
	if err != nil {
		tb.Fatal(err)
	}
	plain := memcache.New(mc.Addr)
	plain.Timeout = 2 * time.Second
	opts := Options{Timeout: 2 * time.Second}
	if shareConns {
		opts.Dial = func(string) (Conn, error) { return plain, nil }
	}
	c, err := New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.SetSlotMap(m); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close(); plain.Close() })
	if err := plain.Set(&memcache.Item{Key: "bench-key", Value: []byte("a value of some thirty bytes..")}); err != nil {
		tb.Fatal(err)
	}
	return benchPair{plain: plain, client: c}
}

// BenchmarkGet compares a Get through the client with a plain gomemcache
// Get of the same key on the same memcached.
func BenchmarkGet(b *testing.B) {
	p := newBenchPair(b, false)
	for _, bc := range []struct {
		name string
		get  func(string) (*memcache.Item, error)
	}{{"gomemcache", p.plain.Get}, {"mcclient", p.client.Get}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.get("bench-key"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDelete compares Deletes (of a key that is not there: one round
// trip answering NOT_FOUND) through the client and through gomemcache.
func BenchmarkDelete(b *testing.B) {
	p := newBenchPair(b, false)
	for _, bc := range []struct {
		name string
		del  func(string) error
	}{{"gomemcache", p.plain.Delete}, {"mcclient", p.client.Delete}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := bc.del("absent-key"); !errors.Is(err, memcache.ErrCacheMiss) {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOverheadP50 times each operation one by one, the plain client
// and mcclient in turn on the same memcached connection, and reports both
// medians and the client's overhead over gomemcache in percent.
func BenchmarkOverheadP50(b *testing.B) {
	p := newBenchPair(b, true)
	for _, op := range []string{"get", "delete"} {
		b.Run(op, func(b *testing.B) {
			plain, client := p.plain.Get, p.client.Get
			if op == "delete" {
				plain = func(k string) (*memcache.Item, error) { return nil, p.plain.Delete("absent-" + k) }
				client = func(k string) (*memcache.Item, error) { return nil, p.client.Delete("absent-" + k) }
			}
			var tp, tc []time.Duration
			for i := 0; b.Loop(); i++ {
				tp = append(tp, timeOp(plain))
				tc = append(tc, timeOp(client))
			}
			mp, mc := median(tp), median(tc)
			b.ReportMetric(float64(mp.Nanoseconds()), "p50-gomemcache-ns")
			b.ReportMetric(float64(mc.Nanoseconds()), "p50-mcclient-ns")
			b.ReportMetric(100*(float64(mc)-float64(mp))/float64(mp), "overhead-%")
		})
	}
}

// timeOp times one call of op on bench-key.
func timeOp(op func(string) (*memcache.Item, error)) time.Duration {
	start := time.Now()
	op("bench-key")
	return time.Since(start)
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestGetAllocatesNoMoreThanGomemcache is the hot path's allocation
// budget: a Get through the client allocates exactly what a plain
// gomemcache Get does, and a Get of a vacant slot nothing.
func TestGetAllocatesNoMoreThanGomemcache(t *testing.T) {
	p := newBenchPair(t, false)
	plain := testing.AllocsPerRun(500, func() { p.plain.Get("bench-key") })
	client := testing.AllocsPerRun(500, func() { p.client.Get("bench-key") })
	if client > plain {
		t.Fatalf("a Get through mcclient allocates %.1f times, gomemcache %.1f: want no extra", client, plain)
	}
	t.Logf("allocations per Get: gomemcache %.1f, mcclient %.1f", plain, client)

	m, _ := cachenodes.NewSlotMap(cachenodes.SlotMapSpec{Pool: "bench", Generation: 2, Slots: []cachenodes.Node{{}}})
	if err := p.client.SetSlotMap(m); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(500, func() { p.client.Get("bench-key") }); n != 0 {
		t.Fatalf("a Get of a vacant slot allocates %.1f times, want 0", n)
	}
}

// swapMaps returns two maps of slots slots in which every slot has a
// different node, so that each SetSlotMap builds a whole table of new
// nodes: the most a swap ever costs. Both have the same generation, so
// that swapping back and forth is taken every time (the generation order
// refuses a lower one).
func swapMaps(t testing.TB, slots int) [2]*cachenodes.SlotMap {
	var out [2]*cachenodes.SlotMap
	for g := range 2 {
		spec := cachenodes.SlotMapSpec{Pool: "swap", Generation: 1}
		for i := range slots {
			spec.Slots = append(spec.Slots, cachenodes.Node{ID: fmt.Sprintf("n%d-%d", g, i), Addr: fmt.Sprintf("127.0.%d.%d:11211", 1+g*100+i/250, 1+i%250)})
		}
		m, err := cachenodes.NewSlotMap(spec)
		if err != nil {
			t.Fatal(err)
		}
		out[g] = m
	}
	return out
}
