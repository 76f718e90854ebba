package e2e

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/testenv"
)

// changeLog records when a watcher first saw each change.
type changeLog struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

func (c *changeLog) mark(key string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.seen[key]; !ok {
		c.seen[key] = at
	}
}

func (c *changeLog) at(key string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.seen[key]
	return t, ok
}

// BenchmarkMaintenanceLatency measures, on the real stack, the time from
// putting a serving node into Consul maintenance (a change that needs no
// hold) to the new slot map in Consul KV, beside the time a bare
// blocking-query watcher of the same health endpoint takes to see the same
// change (the floor), over 50 changes. Run it with -benchtime=1x.
func BenchmarkMaintenanceLatency(b *testing.B) {
	const changes = 50
	consul := newPool(b, 2).consul
	startMcrib(b, consul.HTTPAddr, "--slots", "1", "--hold", "10m", "--probe-interval", "1s",
		"--max-replacements-per-minute", "1000000", "--max-absent-fraction", "1")
	testenv.Eventually(b, 30*time.Second, "the slot filled", func() bool {
		sm := kvSlotMap(b, consul.Client, "default")
		return sm != nil && !sm.Slot(0).IsZero()
	})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()

	// The floor: a bare blocking-query watcher of the health endpoint.
	floor := &changeLog{seen: map[string]time.Time{}}
	wg.Go(func() {
		var idx uint64
		for ctx.Err() == nil {
			entries, meta, err := consul.Client.Health().Service("memcached", "", false, (&api.QueryOptions{WaitIndex: idx, WaitTime: time.Minute}).WithContext(ctx))
			now := time.Now()
			if err != nil {
				continue
			}
			idx = meta.LastIndex
			for _, e := range entries {
				for _, c := range e.Checks {
					if c.CheckID == "_service_maintenance:"+e.Service.ID && c.Status == api.HealthCritical {
						floor.mark(e.Service.ID+"@"+c.Notes, now)
					}
				}
			}
		}
	})
	// mcrib: a blocking-query watcher of the slot map in KV.
	mcrib := &changeLog{seen: map[string]time.Time{}}
	wg.Go(func() {
		var idx uint64
		for ctx.Err() == nil {
			kv, meta, err := consul.Client.KV().Get("mcrib/default/slotmap", (&api.QueryOptions{WaitIndex: idx, WaitTime: time.Minute}).WithContext(ctx))
			now := time.Now()
			if err != nil || kv == nil {
				continue
			}
			idx = meta.LastIndex
			if sm, err := cachenodes.ParseSlotMap(kv.Value); err == nil {
				mcrib.mark(sm.Slot(0).ID+"@"+strconv.FormatUint(sm.Generation(), 10), now)
			}
		}
	})

	var mcribLat, floorLat []time.Duration
	b.ResetTimer()
	for range b.N {
		mcribLat, floorLat = mcribLat[:0], floorLat[:0]
		for i := range changes {
			sm := kvSlotMap(b, consul.Client, "default")
			holder, gen := sm.Slot(0).ID, sm.Generation()
			other := "mc-01"
			if holder == other {
				other = "mc-02"
			}
			reason := "bench-" + strconv.Itoa(i) + "-" + strconv.FormatInt(time.Now().UnixNano(), 10)
			start := time.Now()
			if err := consul.Client.Agent().EnableServiceMaintenance(holder, reason); err != nil {
				b.Fatal(err)
			}
			var tf, tm time.Time
			testenv.Eventually(b, 10*time.Second, "both watchers see the change", func() bool {
				var ok1, ok2 bool
				tf, ok1 = floor.at(holder + "@" + reason)
				tm, ok2 = mcrib.at(other + "@" + strconv.FormatUint(gen+1, 10))
				return ok1 && ok2
			})
			floorLat = append(floorLat, tf.Sub(start))
			mcribLat = append(mcribLat, tm.Sub(start))
			if err := consul.Client.Agent().DisableServiceMaintenance(holder); err != nil {
				b.Fatal(err)
			}
			testenv.Eventually(b, 10*time.Second, holder+" a spare again", func() bool {
				sm := kvSlotMap(b, consul.Client, "default")
				return sm != nil && slices.ContainsFunc(sm.Spares(), func(n cachenodes.Node) bool { return n.ID == holder })
			})
		}
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	mp50, mp99 := percentile(mcribLat, 50), percentile(mcribLat, 99)
	fp50, fp99 := percentile(floorLat, 50), percentile(floorLat, 99)
	b.ReportMetric(ms(mp50), "mcrib-p50-ms")
	b.ReportMetric(ms(mp99), "mcrib-p99-ms")
	b.ReportMetric(ms(fp50), "floor-p50-ms")
	b.ReportMetric(ms(fp99), "floor-p99-ms")
	b.ReportMetric(float64(mp99)/float64(max(fp99, time.Microsecond)), "p99-ratio")
	b.ReportMetric(0, "ns/op")
}

// percentile returns the p-th percentile (nearest rank) of ds.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := (p*len(s) + 99) / 100
	return s[max(rank, 1)-1]
}
