package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/mcclient"
	"github.com/mcrib/mcrib/mcribapi"
)

// TestGrowOnTheRealStack doubles a pool of 4 slots with 4 spares on real
// Consul and memcached: the first write keeps every key on its memcached
// (the bare selector still finds each), the splits then move the twins to
// the spares warm (the Go client still reads every key, from slot s's
// holder on a miss), slot s's holders are never flushed, and the entry
// says done. Meanwhile four clients (one following Consul KV, three the
// HTTP API) set, delete and get a shared key space, and no read returns a
// value that a completed set or delete had replaced (the stale-read check
// of the simulation and the soak), through the first write, the splits and
// the warmings.
func TestGrowOnTheRealStack(t *testing.T) {
	const keys = 2000
	p := newPool(t, 8)
	m := startMcrib(t, p.consul.HTTPAddr, flags("--slots", "4", "--warm-for", "1m")...)
	before := filled(t, p, m, 4)
	items := fill(t, before, keys)

	ctx, stopClients := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	clients := newSoakClients(t, ctx, &wg, []*replica{{mcrib: m, name: "mcrib"}}, p.consul.Client, 20)
	stopped := false
	stop := func() []string {
		if stopped {
			return nil
		}
		stopped = true
		stopClients()
		wg.Wait()
		clients.close()
		return clients.finish()
	}
	defer stop()

	code, body, _ := m.call("PUT", "/v1/resize", `{"num_slots": 8, "reason": "grown past its slots", "step_percent": 50, "step_interval": "2s"}`, "")
	var doc mcribapi.ResizeDoc
	if code != 200 || json.Unmarshal(body, &doc) != nil || doc.Resize == nil || doc.Resize.To != 8 {
		t.Fatalf("PUT /v1/resize: %d %s", code, body)
	}
	doubled := kvSlotMap(t, p.consul.Client, "default")
	if doubled.NumSlots() != 8 || doubled.ResizedFrom() != 4 || doubled.Generation() != before.Generation()+1 {
		t.Fatalf("the first write: %d slots, resized from %d, generation %d", doubled.NumSlots(), doubled.ResizedFrom(), doubled.Generation())
	}
	if n := missing(t, doubled, items); n != 0 && doubled.NumTwins() == 4 {
		t.Fatalf("%d of %d keys miss through the map of the first write", n, keys)
	}
	if code, body, _ := m.call("PUT", "/v1/resize", `{"num_slots": 16, "reason": "again"}`, ""); code != 409 || !strings.Contains(string(body), "twins") {
		t.Errorf("a second resize while twins remain: %d %s", code, body)
	}

	var final *cachenodes.SlotMap
	testenv.Eventually(t, 30*time.Second, "every twin split", func() bool {
		final = kvSlotMap(t, p.consul.Client, "default")
		return final.NumTwins() == 0
	})
	// The clients go on while the splits warm, until each has taken the
	// final map and run a while on it.
	testenv.Eventually(t, 20*time.Second, "the clients on the final map", func() bool {
		for _, a := range clients.apps {
			if generation(a.c.SlotMap()) < final.Generation() {
				return false
			}
		}
		return true
	})
	opsAt := func() int { clients.mu.Lock(); defer clients.mu.Unlock(); return clients.ops }
	more := opsAt() + 2000
	testenv.Eventually(t, 20*time.Second, "2,000 client operations on the final map", func() bool { return opsAt() >= more })
	if !warmingAt(final, time.Now()) {
		t.Fatalf("no slot warms any more: the clients ran beyond the warmings (--warm-for 1m)")
	}
	for _, v := range stop() {
		t.Error(v)
	}
	for _, line := range clients.summary() {
		t.Log(line)
	}
	for s := range 4 {
		if final.Slot(s).ID != before.Slot(s).ID {
			t.Errorf("slot %d moved from %s to %s", s, before.Slot(s).ID, final.Slot(s).ID)
		}
	}
	c, err := mcclient.New(mcclient.Options{Timeout: clientTimeout})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetSlotMap(final); err != nil {
		t.Fatal(err)
	}
	miss := 0
	for k, v := range items {
		it, err := c.Get(k)
		if err != nil || string(it.Value) != v {
			miss++
		}
	}
	if miss != 0 {
		t.Errorf("%d of %d keys miss through the Go client after the splits (warm from slot s's holder)", miss, keys)
	}
	flushes := p.flushes(t)
	for s := range 4 {
		if id := before.Slot(s).ID; flushes[id] != 0 {
			t.Errorf("slot %d's holder %s was flushed %d times", s, id, flushes[id])
		}
	}
	st := m.status()
	if st.Resize == nil || st.Resize.State != mcribapi.ResizeDone || st.Resize.Split != 4 || st.Capacity == nil || st.Capacity.Slots != 8 {
		t.Errorf("status resize %+v capacity %+v", st.Resize, st.Capacity)
	}
	var events []mcribapi.Event
	m.getJSON("/v1/events", &events)
	kinds := map[mcribapi.EventKind]int{}
	for _, e := range events {
		kinds[e.Kind]++
	}
	if kinds[mcribapi.EventResizeStarted] != 1 || kinds[mcribapi.EventSplitStep] != 4 || kinds[mcribapi.EventResizeOver] != 1 {
		t.Errorf("events %v", kinds)
	}
}
