package mcclient

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mcrib/mcrib/cachenodes"
)

// instantNode answers every Get at once, so that a Get's time is the
// client's own.
type instantNode struct{ fakeNode }

func (*instantNode) Get(key string) (*memcache.Item, error) { return nil, memcache.ErrCacheMiss }

// getPauses runs Gets on c for d, with maps swapped as fast as they can be
// built when swap is set, and returns how many Gets there were, how many
// took longer than 1ms, the longest, and the swaps done with their mean
// time.
func getPauses(c *Client, maps [2]*cachenodes.SlotMap, d time.Duration, swap bool) (gets, slow int, longest time.Duration, swaps int, swapTime time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	var nswaps atomic.Int64
	var swapping atomic.Int64 // total ns
	if swap {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				start := time.Now()
				c.SetSlotMap(maps[i%2])
				swapping.Add(int64(time.Since(start)))
				nswaps.Add(1)
			}
		})
	}
	keys := []string{"user:1", "user:2", "session:abc", "feed:42"}
	for i := 0; ctx.Err() == nil; i++ {
		start := time.Now()
		c.Get(keys[i%len(keys)])
		took := time.Since(start)
		gets++
		if took > time.Millisecond {
			slow++
		}
		longest = max(longest, took)
	}
	wg.Wait()
	if n := nswaps.Load(); n > 0 {
		swaps, swapTime = int(n), time.Duration(swapping.Load()/n)
	}
	return gets, slow, longest, swaps, swapTime
}

// TestGetsDoNotWaitForASwap holds a swap in the middle (its table half
// built, the client's map lock held) and runs Gets meanwhile: they finish,
// by the old map, because a Get reads the table with one atomic load and
// takes no lock; once the swap is done they route by the new map.
func TestGetsDoNotWaitForASwap(t *testing.T) {
	hold, held := make(chan struct{}), make(chan struct{})
	var once sync.Once
	c, err := New(Options{Dial: func(addr string) (Conn, error) {
		if addr == "127.0.0.1:2" {
			once.Do(func() { close(held); <-hold })
		}
		return &instantNode{}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	first, _ := cachenodes.NewSlotMap(cachenodes.SlotMapSpec{Generation: 1, Slots: []cachenodes.Node{{ID: "a", Addr: "127.0.0.1:1"}}})
	second, _ := cachenodes.NewSlotMap(cachenodes.SlotMapSpec{Generation: 2, Slots: []cachenodes.Node{{ID: "b", Addr: "127.0.0.1:2"}}})
	c.SetSlotMap(first)
	swapped := make(chan error)
	go func() { swapped <- c.SetSlotMap(second) }()
	<-held
	for range 1000 {
		if _, err := c.Get("k"); err != memcache.ErrCacheMiss {
			t.Fatalf("Get during a swap: %v", err)
		}
	}
	if n, _ := c.NodeFor("k"); n.ID != "a" {
		t.Fatalf("during the swap a key routes to %q, want the old map's a", n.ID)
	}
	close(hold)
	if err := <-swapped; err != nil {
		t.Fatal(err)
	}
	if n, _ := c.NodeFor("k"); n.ID != "b" {
		t.Fatalf("after the swap a key routes to %q, want b", n.ID)
	}
}

// BenchmarkGetDuringSwaps runs Gets (on an instant fake node, so that the
// time is the client's own) while two 4,096-slot maps are swapped back to
// back: maps one slot apart (a replacement) and maps whose every slot
// changes node (each swap builds a whole table: the most one can cost).
// It reports the Gets over 1ms and the longest,
// beside the same run without swaps: the difference is what swaps cost
// Gets.
func BenchmarkGetDuringSwaps(b *testing.B) {
	c, err := New(Options{Dial: func(string) (Conn, error) { return &instantNode{}, nil }})
	if err != nil {
		b.Fatal(err)
	}
	all := swapMaps(b, 4096)
	spec := all[0].Spec() // the same map with one slot's node replaced (and the same generation, see swapMaps)
	spec.Slots[7] = all[1].Slot(7)
	one, err := cachenodes.NewSlotMap(spec)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		swap bool
		maps [2]*cachenodes.SlotMap
	}{
		{"no-swaps", false, all},
		{"one-slot-swaps", true, [2]*cachenodes.SlotMap{all[0], one}},
		{"whole-table-swaps", true, all},
	} {
		c.SetSlotMap(bc.maps[0])
		swap, maps := bc.swap, bc.maps
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				gets, slow, longest, swaps, swapTime := getPauses(c, maps, 500*time.Millisecond, swap)
				b.ReportMetric(float64(gets), "gets")
				b.ReportMetric(float64(slow), "gets-over-1ms")
				b.ReportMetric(float64(longest.Microseconds()), "longest-get-µs")
				b.ReportMetric(float64(swaps), "swaps")
				b.ReportMetric(float64(swapTime.Microseconds()), "µs/swap")
			}
		})
	}
}
