package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/testenv"
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

	clients, stop := startSoakClients(t, soakClientsOptions{replicas: []*replica{{mcrib: m, name: "mcrib"}},
		consul: p.consul.Client, http: soakHTTPClients, seed: 20})
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
			if generation(a.client().SlotMap()) < final.Generation() {
				return false
			}
		}
		return true
	})
	opsAt := func() int { clients.mu.Lock(); defer clients.mu.Unlock(); return clients.ops }
	more := opsAt() + 2000
	testenv.Eventually(t, 20*time.Second, "2,000 client operations on the final map", func() bool { return opsAt() >= more })
	if !final.WarmsAt(time.Now()) {
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
	if miss := missingThroughClient(t, final, items); miss != 0 {
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
	events, err := m.api.events()
	if err != nil {
		t.Errorf("GET /v1/events: %v", err)
	}
	kinds := map[mcribapi.EventKind]int{}
	for _, e := range events {
		kinds[e.Kind]++
	}
	if kinds[mcribapi.EventResizeStarted] != 1 || kinds[mcribapi.EventSplitStep] != 4 || kinds[mcribapi.EventResizeOver] != 1 {
		t.Errorf("events %v", kinds)
	}
}

// TestGrowAcrossALeaderKill doubles a pool of 4 slots with 4 spares under
// two replicas, one twin a step every 8 s, and kills the leader with
// kill -9 once the first split is seen. The step interval is longer than
// a takeover (about 6 s: the leader's check TTL, then the lock delay), so
// the survivor leads before its next step is due and must wait for it
// from the stored last_step_at. It finishes the splits at the pace: no
// two steps closer than the step interval (less the delay of a look), one
// twin each, slot s's holder kept all along and never flushed, each spare
// flushed once as it enters. Every key filled before the resize is still
// read through the Go client (from slot s's holder on a miss). Then the
// whole pool restarts with its old flags (--slots 4): both replicas come
// up, one leads, and the 8 slots stay on the same nodes, with nothing
// flushed.
func TestGrowAcrossALeaderKill(t *testing.T) {
	const keys = 2000
	const interval = 8 * time.Second
	// A look at the map may come up to a poll late: steps are judged a
	// little closer than the step interval.
	const window = interval - 700*time.Millisecond
	// Nor later than a step interval and a few seconds after the one
	// before: the takeover (about 6 s) ends before the next step is due,
	// so the stored pace holds across it.
	const late = interval + 4*time.Second
	p := newPool(t, 8)
	// The warming outlasts the resize, so that the keys of the first split
	// are still read from slot s's holder when the last one is made.
	old := flags("--slots", "4", "--warm-for", "1m")
	r1 := startMcrib(t, p.consul.HTTPAddr, old...)
	before := filled(t, p, r1, 4)
	r2 := startMcrib(t, p.consul.HTTPAddr, old...)
	w := watchMap(t, liveAPIs(r1, r2))
	items := fill(t, before, keys)
	flushes := p.flushes(t)

	lead := zLeader(t, 15*time.Second, r1, r2)
	start := time.Now()
	code, body, _ := lead.call("PUT", "/v1/resize", `{"num_slots": 8, "reason": "grown past its slots", "step_percent": 25, "step_interval": "8s"}`, "")
	if code != 200 {
		t.Fatalf("PUT /v1/resize to the leader: %d %s", code, body)
	}
	// Each split is announced, and serves 12 s later (docs/api.md,
	// "Announce, then serve").
	w.waitMap(t, 20*time.Second+cachenodes.AnnounceLead, "the first split", func(m *cachenodes.SlotMap) bool { return m.NumSlots() == 8 && m.NumTwins() < 4 })
	t.Logf("first split seen %v after the PUT; kill -9 of the leader %s", time.Since(start).Round(time.Millisecond), lead.Addr)
	lead.Kill(t)
	survivor := r1
	if lead == r1 {
		survivor = r2
	}
	final := w.waitMap(t, 40*time.Second, "every twin split after the takeover", func(m *cachenodes.SlotMap) bool { return m.NumTwins() == 0 })
	if zLeader(t, 20*time.Second, survivor) != survivor {
		t.Fatal("the survivor does not lead")
	}

	// The steps as seen: the doubled map, then each change of the count
	// of twins, when first seen.
	var steps []mapSample
	moved := ""
	for _, s := range w.since(start) {
		for i := range 4 {
			if id := s.m.Slot(i).ID; id != before.Slot(i).ID && moved == "" {
				moved = fmt.Sprintf("slot %d on %s, not %s, in generation %d", i, id, before.Slot(i).ID, s.m.Generation())
			}
		}
		if n := len(steps); s.m.NumSlots() == 8 && (n == 0 || s.m.NumTwins() != steps[n-1].m.NumTwins()) {
			steps = append(steps, s)
		}
	}
	if moved != "" {
		t.Errorf("slot s's holder must keep slot s all along: %s", moved)
	}
	var seen []string
	for _, s := range steps {
		seen = append(seen, fmt.Sprintf("%d@%.1fs", s.m.NumTwins(), s.at.Sub(start).Seconds()))
	}
	t.Logf("twins as seen: %s", strings.Join(seen, " → "))
	if len(steps) == 0 || steps[0].m.NumTwins() != 4 {
		t.Fatalf("the doubled map with 4 twins was not seen: %s", strings.Join(seen, " → "))
	}
	for i := 1; i < len(steps); i++ {
		a, b := steps[i-1], steps[i]
		if n := a.m.NumTwins() - b.m.NumTwins(); n != 1 {
			t.Errorf("twins went from %d to %d in one step (generation %d → %d); a step of 25%% of 4 splits one", a.m.NumTwins(), b.m.NumTwins(), a.m.Generation(), b.m.Generation())
		}
		// The first split serves its announce's 12 s after the first
		// step, one interval after the doubled map; the next ones serve
		// at the steps' pace.
		window, late := window, late
		if i == 1 {
			window, late = window+cachenodes.AnnounceLead, late+cachenodes.AnnounceLead
		}
		if gap := b.at.Sub(a.at); gap < window {
			t.Errorf("twins went from %d to %d %v after the step before (generation %d → %d), closer than the step interval %v",
				a.m.NumTwins(), b.m.NumTwins(), gap.Round(time.Millisecond), a.m.Generation(), b.m.Generation(), interval)
		} else if gap > late {
			t.Errorf("twins went from %d to %d %v after the step before (generation %d → %d), later than the step interval %v allows (%v)",
				a.m.NumTwins(), b.m.NumTwins(), gap.Round(time.Millisecond), a.m.Generation(), b.m.Generation(), interval, late)
		}
	}
	if final.NumSlots() != 8 || final.ResizedFrom() != 4 {
		t.Errorf("after the splits: %d slots, resized from %d; want 8 from 4", final.NumSlots(), final.ResizedFrom())
	}
	for _, bad := range flushChanges(flushes, p.flushes(t), entered(before, final)) {
		t.Errorf("the resize: %s", bad)
	}
	if bad := w.invalid(); len(bad) > 0 {
		t.Errorf("%d invalid slot maps seen, first: %s", len(bad), bad[0])
	}

	kv := kvSlotMap(t, p.consul.Client, "default")
	if kv == nil || kv.NumTwins() != 0 || kv.NumSlots() != 8 {
		t.Fatalf("the slot map in KV after the splits: %s", describeMap(kv))
	}
	if miss := missingThroughClient(t, kv, items); miss != 0 {
		t.Errorf("%d of %d keys miss through the Go client after the splits (warm from slot s's holder); map %s", miss, keys, describeMap(kv))
	}
	api := newAPIClient(survivor.Addr, apiTimeout)
	var last []byte
	if !within(10*time.Second, func() bool {
		d, raw, err := api.resize()
		last = raw
		return err == nil && (d.Resize == nil || (d.Resize.State == mcribapi.ResizeDone && d.Resize.Split == 4 && d.Resize.Twins == 0))
	}) {
		t.Errorf("GET /v1/resize on the survivor: %s; want state done with split 4, or null", last)
	}

	// The whole pool restarts with its old flags.
	if code, _ := survivor.stop(); code != 0 {
		t.Fatalf("the survivor exited with %d on SIGTERM", code)
	}
	split := p.flushes(t)
	n1 := startMcrib(t, p.consul.HTTPAddr, old...)
	n2 := startMcrib(t, p.consul.HTTPAddr, old...)
	again := zLeader(t, 20*time.Second, n1, n2)
	testenv.Eventually(t, 10*time.Second, "the new leader showing 8 slots in capacity", func() bool {
		st, err := newAPIClient(again.Addr, apiTimeout).status()
		return err == nil && st.Capacity != nil && st.Capacity.Slots == 8
	})
	steady(t, 2*time.Second, "the pool restarted with --slots 4", func() string {
		for _, m := range []*mcrib{n1, n2} {
			if m.Exited() {
				return fmt.Sprintf("%s exited with %d:\n%s", m.Addr, m.ExitCode(), tail(m.Output(), 5))
			}
		}
		m := kvSlotMap(t, p.consul.Client, "default")
		if m == nil || m.NumSlots() != 8 || m.NumTwins() != 0 || m.ResizedFrom() != 4 {
			return "the slot map in KV: " + describeMap(m)
		}
		for i := range 8 {
			if m.Slot(i).ID != kv.Slot(i).ID {
				return fmt.Sprintf("slot %d moved from %s to %s", i, kv.Slot(i).ID, m.Slot(i).ID)
			}
		}
		if st, err := newAPIClient(again.Addr, apiTimeout).status(); err != nil || st.Capacity == nil || st.Capacity.Slots != 8 {
			return fmt.Sprintf("status capacity %+v (%v), want 8 slots", st.Capacity, err)
		}
		if sm := n1.slotMap(); sm == nil || sm.NumSlots() != 8 {
			return "GET /v1/slotmap of a restarted replica: " + describeMap(sm)
		}
		return ""
	})
	for _, bad := range flushChanges(split, p.flushes(t), nil) {
		t.Errorf("after the restart with --slots 4: %s", bad)
	}
	for _, m := range []*mcrib{n1, n2} {
		if !strings.Contains(m.Output(), "the pool was resized") {
			t.Errorf("%s logged no warning that the pool was resized:\n%s", m.Addr, tail(m.Output(), 5))
		}
	}
}
