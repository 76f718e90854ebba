package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/mcclient"
	"github.com/mcrib/mcrib/mcribapi"
)

// limitSample is one look at the boot limit and the pool's hit rate.
type limitSample struct {
	at      time.Time
	limit   float64
	hitRate *float64
}

// watchLimit samples GET /v1/ratelimit and the status's hit_rate every
// 100 ms until ctx ends.
func watchLimit(ctx context.Context, api *apiClient) func() []limitSample {
	var mu sync.Mutex
	var out []limitSample
	done := make(chan struct{})
	go func() {
		defer close(done)
		every(ctx, 100*time.Millisecond, func() {
			doc, err := api.bootLimit()
			if err != nil || doc.Validate() != nil {
				return
			}
			s := limitSample{at: time.Now(), limit: doc.Limit}
			if st, err := api.status(); err == nil {
				s.hitRate = st.HitRate
			}
			mu.Lock()
			out = append(out, s)
			mu.Unlock()
		})
	}()
	return func() []limitSample {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(out)
	}
}

// TestWarmDrainUnderLoadHoldsTheBootLimit is the boot limit through a warm
// drain: 9 memcached in 3 zones, a cache-aside load through mcclient over 100,000
// keys, and a warm drain of the zone holding the most slots, with the boot
// limit in auto mode. No planned move cuts the boot limit by itself: the
// lowest limit from the drain's PUT until 15 s after its warmings ended
// is the limit before the drain (460 → 10 before planned moves were left
// out of the limiter's input), and the pool's hit rate stays near what the load itself sees
// (warm reads count as the hits they are).
func TestWarmDrainUnderLoadHoldsTheBootLimit(t *testing.T) {
	const slots = 4
	const warmFor = 20 * time.Second
	const statsInterval = time.Second
	p := newZonedPool(t, []string{"a", "b", "c"}, 3)
	m := startMcrib(t, p.consul.HTTPAddr, append(withToken(t), "--slots", fmt.Sprint(slots), "--hold", "60s",
		"--probe-interval", "500ms", "--stats-interval", statsInterval.String(), "--warm-for", warmFor.String())...)
	filled(t, p, m, slots)
	api := newAPIClient(m.Addr, apiTimeout)
	zones := mustZones(t, api)
	zone := ""
	for _, z := range slices.Sorted(maps.Keys(zones)) {
		if zone == "" || zones[z].Slots > zones[zone].Slots {
			zone = z
		}
	}
	f, err := mcclient.NewHTTPFollower(mcclient.HTTPFollowerOptions{URL: "http://" + m.Addr, WaitTime: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c := followingClient(t, f, clientTimeout)
	testenv.Eventually(t, 10*time.Second, "the client follows the map", func() bool { return c.SlotMap() != nil })
	l := zoneLoad(c, 100_000, 2000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := l.prefill(ctx); err != nil {
		t.Fatal(err)
	}
	loadStart := time.Now()
	var wg sync.WaitGroup
	wg.Go(func() { l.run(ctx) })
	defer func() { cancel(); wg.Wait() }()

	// The steady state: the limit settles under the load (auto mode starts
	// at the ceiling; a healthy cache keeps it there).
	var before float64
	changedAt := time.Now()
	testenv.Eventually(t, 90*time.Second, "the boot limit steady for 10 s under the load", func() bool {
		doc, err := api.bootLimit()
		if err != nil || doc.Mode != "auto" {
			return false
		}
		if doc.Limit != before {
			before, changedAt = doc.Limit, time.Now()
		}
		return time.Since(changedAt) >= 10*time.Second && time.Since(loadStart) >= 10*time.Second
	})
	held := map[string]int{}
	for z, e := range zones {
		held[z] = e.Slots
	}
	t.Logf("slots by zone after the first fill: %v; draining zone %s; boot limit %v before the drain", held, zone, before)

	wctx, stopWatch := context.WithCancel(ctx)
	samples := watchLimit(wctx, api)
	put := time.Now()
	if code, b := api.do("PUT", "/v1/drain/"+zone, drainBody("a planned drain under load", 100, 100, "5s"), token); code != 200 {
		t.Fatalf("PUT /v1/drain/%s: %d %s", zone, code, b)
	}
	testenv.Eventually(t, time.Minute, "zone "+zone+" drained", func() bool {
		d, _, err := api.drain()
		return err == nil && d.Zones[zone].State == mcribapi.DrainDrained
	})
	testenv.Eventually(t, warmFor+30*time.Second, "the warmings over", func() bool {
		sm, _, err := api.slotMap("")
		return err == nil && len(warmingSlots(sm)) == 0
	})
	// After the warmings' end the moved slots' colder keys, never read
	// while they warmed, miss for a while: watched for 15 stats intervals.
	time.Sleep(15 * statsInterval)
	end := time.Now()
	stopWatch()
	seen := samples()
	if len(seen) == 0 {
		t.Fatal("no boot-limit sample during the drain")
	}
	lowest, lowestRate := before, 1.0
	for _, s := range seen {
		lowest = min(lowest, s.limit)
		if s.hitRate != nil {
			lowestRate = min(lowestRate, *s.hitRate)
		}
	}
	reads, misses, _ := sum(l.window(put.Sub(loadStart), end.Sub(loadStart)))
	loadRate := 0.0
	if reads > 0 {
		loadRate = 1 - float64(misses)/float64(reads)
	}
	lowestLoad := 1.0
	for _, s := range l.window(put.Sub(loadStart), end.Sub(loadStart)) {
		if r, ok := s.hitRate(); ok && s.reads > 100 {
			lowestLoad = min(lowestLoad, r)
		}
	}
	t.Logf("warm drain of zone %s under load: boot limit %v before, lowest %v during the drain (%d samples over %v); lowest hit rate mcrib reported %.3f, the load's own %.3f over the drain (lowest second %.3f)",
		zone, before, lowest, len(seen), end.Sub(put).Round(time.Second), lowestRate, loadRate, lowestLoad)
	if lowest < before {
		t.Errorf("the warm drain cut the boot limit from %v to %v: no planned move cuts it by itself", before, lowest)
	}
	// The smoothed rate may lag the load's own by a second or two: it is
	// compared with the load's lowest second, not its mean.
	if lowestRate < lowestLoad-0.05 {
		t.Errorf("mcrib's hit rate fell to %.3f during the warm drain while the load's lowest second was %.3f: warm reads are hits", lowestRate, lowestLoad)
	}
}
