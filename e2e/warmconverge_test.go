package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/mcclient"
	"github.com/mcrib/mcrib/mcribapi"
)

// metricValue returns the value of the first sample of name from the
// API's /metrics (whatever its labels: the pool's), and false when there
// is none.
func (a *apiClient) metricValue(name string) (float64, bool) {
	code, body := a.get("/metrics")
	if code != http.StatusOK {
		return 0, false
	}
	for _, line := range strings.Split(string(body), "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || (!strings.HasPrefix(rest, " ") && !strings.HasPrefix(rest, "{")) {
			continue
		}
		if _, after, labelled := strings.Cut(rest, "} "); labelled {
			rest = after
		}
		var v float64
		if _, err := fmt.Sscan(rest, &v); err == nil {
			return v, true
		}
	}
	return 0, false
}

// TestDrainWarmingConverges is a drain step under the default --warm-for
// (30m) on real Consul and memcached: while the moved slot warms, the
// leader copies its warm source's keys into the new holder (copied_keys
// and copied_bytes in the status, the two counters in the metrics), a
// cache-aside load through the Go client reads its hot keys, and the
// warming ends by convergence (ended_at, the event naming the 2% rule and
// both rates) soon after --warm-min, long before the drained zone's 2m.
func TestDrainWarmingConverges(t *testing.T) {
	const slots, slot = 4, 0
	const warmMin = 5 * time.Second
	p := newZonedPool(t, []string{"a", "b", "c"}, 3)
	m := startMcrib(t, p.consul.HTTPAddr, flags(append(withToken(t), "--slots", fmt.Sprint(slots), "--hold", "60s",
		"--warm-min", warmMin.String())...)...)
	before := filled(t, p, m, slots)
	api := newAPIClient(m.Addr, apiTimeout)
	src := before.Slot(slot)

	// The slot's keys, written to its holder: 3,000 of 512 bytes, of
	// which the load reads the first 150.
	keys := slotKeys("conv", slot, slots, 3000)
	direct := memcache.New(src.Addr)
	value := bytes.Repeat([]byte("v"), 512)
	for _, k := range keys {
		if err := direct.Set(&memcache.Item{Key: k, Value: value}); err != nil {
			t.Fatalf("set %s at %s: %v", k, src.Addr, err)
		}
	}
	f, err := mcclient.NewHTTPFollower(mcclient.HTTPFollowerOptions{URL: "http://" + m.Addr, WaitTime: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c := followingClient(t, f, clientTimeout)
	testenv.Eventually(t, 10*time.Second, "the client follows the map", func() bool {
		n, ok := c.NodeFor(keys[0])
		return ok && n.ID == src.ID
	})
	hot := keys[:150]
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			for _, k := range hot {
				select {
				case <-stop:
					return
				default:
				}
				cacheAside(t, c, k)
			}
		}
	})
	defer func() { close(stop); wg.Wait() }()

	// Drain the holder's zone in one step: slot 0 moves warm.
	if code, body := api.do("PUT", "/v1/drain/"+src.AZ, drainBody("converge test", 100, 100, "1s"), token); code != 200 {
		t.Fatalf("PUT /v1/drain/%s: %d %s", src.AZ, code, body)
	}
	var moved *cachenodes.SlotMap
	testenv.Eventually(t, cachenodes.AnnounceLead+10*time.Second, "slot 0 moved warm", func() bool {
		sm, _, err := api.slotMap("")
		moved = sm
		return err == nil && sm.Slot(slot).ID != src.ID && sm.Warming(slot) != nil && sm.Warming(slot).NodeID == src.ID
	})
	movedAt := time.Now()
	target := moved.Slot(slot)
	if w := moved.Warming(slot); w.Until.Sub(movedAt) < 29*time.Minute {
		t.Errorf("warming until %v, %v after the move: want the default --warm-for of 30m", w.Until, w.Until.Sub(movedAt))
	}

	// The copy: copied keys and bytes on the new holder's entry.
	var copied mcribapi.NodeStatus
	testenv.Eventually(t, 10*time.Second, "the copy into "+target.ID+" in the status", func() bool {
		st, err := api.status()
		if err != nil {
			return false
		}
		copied, _ = nodeStatus(st, target.ID)
		return copied.CopiedKeys > 0 && copied.CopiedBytes >= copied.CopiedKeys*int64(len(value))
	})

	// Convergence: ended_at, soon after --warm-min, well before 2m.
	var ended *cachenodes.Warming
	testenv.Eventually(t, time.Minute, "slot 0's warming ends by convergence", func() bool {
		sm, _, err := api.slotMap("")
		if err != nil || sm.Warming(slot) == nil {
			return false
		}
		ended = sm.Warming(slot)
		return ended.Ended()
	})
	// By then the copy went through the slot's keys: those no client read
	// are on the new holder too.
	st, err := api.status()
	if err != nil {
		t.Fatal(err)
	}
	copied, _ = nodeStatus(st, target.ID)
	t.Logf("copied into %s: %d keys, %d bytes; warm_hit_rate %v", target.ID, copied.CopiedKeys, copied.CopiedBytes, ptrText(copied.WarmHitRate))
	if copied.CopiedKeys < int64(len(keys)-len(hot)) {
		t.Errorf("%s's copied_keys %d when its warming ended; want the %d keys no client read, at least", target.ID, copied.CopiedKeys, len(keys)-len(hot))
	}
	for _, k := range []string{keys[len(hot)], keys[len(keys)-1]} {
		if _, err := directGet(target.Addr, k); err != nil {
			t.Errorf("%s, never read by a client, is not on the new holder %s after the copy: %v", k, target.ID, err)
		}
	}
	if copied.WarmHitRate == nil || *copied.WarmHitRate < 0.9 {
		t.Errorf("%s's warm_hit_rate %s when its warming ended; want it warm (0.9 and more)", target.ID, ptrText(copied.WarmHitRate))
	}
	took := ended.EndedAt.Sub(movedAt)
	t.Logf("slot %d's warming ended %v after the move was seen", slot, took.Round(100*time.Millisecond))
	// The first intervals after the move, whose hot keys the new holder
	// did not hold yet, stay in the rule's 30 s window: it ends about
	// 30 s after the move.
	if took < warmMin-2*time.Second || took > 90*time.Second {
		t.Errorf("the warming ended %v after the move; want after --warm-min (%v), and soon after the rule's 30 s window, before the drained zone's 2m", took, warmMin)
	}
	evs, err := api.events()
	if err != nil {
		t.Fatal(err)
	}
	var why string
	for _, e := range evs {
		if e.Kind == mcribapi.EventWarmEnd && e.Slot != nil && *e.Slot == slot {
			why = e.Reason
		}
	}
	if !strings.Contains(why, "converged: over the last") || !strings.Contains(why, "of the new holder's gets (its hit rate at least") {
		t.Errorf("slot %d's warm end event %q; want it converged by the 2%% rule, with both rates", slot, why)
	}
	for _, name := range []string{"mcrib_warm_copied_keys_total", "mcrib_warm_copied_bytes_total"} {
		if v, ok := api.metricValue(name); !ok || v <= 0 {
			t.Errorf("%s %v (listed %v), want above 0 after a copy", name, v, ok)
		}
	}
}

// ptrText formats a rate that may be unknown.
func ptrText(f *float64) string {
	if f == nil {
		return "null"
	}
	return pct(*f)
}
