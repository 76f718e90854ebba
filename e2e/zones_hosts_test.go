package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/mcribapi"
)

// zoneOf returns the zone of every node of the bed.
func (p *hostsPool) zoneOf() map[string]string {
	out := map[string]string{}
	for _, n := range p.nodes {
		out[n.id] = n.az
	}
	return out
}

// TestDrainCutZoneHostsBed cuts zone b off on the bed of hosts (its four
// hosts' links down: memcached and Consul agents unreachable from mcrib's
// host and from the Consul server): the automatic freeze goes on, and its
// reason and the events name the zone and the command `mcrib drain b`.
// Then zone b is drained: its slots still move, cold (no warming from a
// node that does not answer), to zones a and c; no node outside b is
// flushed except those entering a slot; every map seen is valid. Its bed
// of 13 hosts is as large as the soak's, so like the soak it does not run
// in parallel with the other beds (their timing would suffer).
func TestDrainCutZoneHostsBed(t *testing.T) {
	const slots = 8
	p := newHostsPool(t, hostsOptions{nodes: 12, replicas: 1, slots: slots, hold: "60s", zones: 3,
		flags: []string{"--warm-for", "30s"}})
	r := p.replicas[0]
	api := newAPIClient(r.Addr, apiTimeout)
	zoneOf := p.zoneOf()
	w := watchMap(t, func() []*apiClient { return []*apiClient{api} })
	before := w.waitMap(t, 10*time.Second, "a slot map", func(m *cachenodes.SlotMap) bool { return len(holders(m)) == slots })
	counts := zoneSlots(before, zoneOf)
	if why := spreadProblem(counts, []string{"a", "b", "c"}, slots); why != "" {
		t.Errorf("after the first fill: %s; map %s", why, describeMap(before))
	}
	if counts["b"] < 2 {
		t.Fatalf("zone b holds %d slots (%v): too few to trip the automatic freeze by cutting it off", counts["b"], counts)
	}
	var outside []string
	for _, n := range p.nodes {
		if n.az != "b" {
			outside = append(outside, n.id)
		}
	}
	flushes := p.flushes(outside...)

	for _, n := range p.nodes {
		if n.az == "b" {
			n.host.Cut(t)
		}
	}
	cut := time.Now()
	var last mcribapi.Status
	if !within(20*time.Second, func() bool {
		st, err := api.status()
		if err == nil {
			last = st
		}
		return err == nil && st.AutoFrozen && strings.Contains(st.AutoFreezeReason, "mcrib drain b")
	}) {
		t.Errorf("zone b cut off for %v: auto_frozen %v, reason %q; want the automatic freeze on, its reason naming the command `mcrib drain b` (docs/api.md, per zone)",
			time.Since(cut).Round(time.Millisecond), last.AutoFrozen, last.AutoFreezeReason)
	} else {
		t.Logf("automatic freeze %v after the cut: %s", time.Since(cut).Round(time.Millisecond), last.AutoFreezeReason)
	}
	var evs []mcribapi.Event
	if !within(10*time.Second, func() bool {
		var err error
		if evs, err = api.events(); err != nil {
			return false
		}
		for _, e := range evs {
			if strings.Contains(e.Reason, "mcrib drain b") {
				return true
			}
		}
		return false
	}) {
		t.Errorf("no event in /v1/events names `mcrib drain b` with zone b cut off; last events: %+v", evs[max(0, len(evs)-5):])
	}
	if st, err := api.status(); err == nil {
		if zs, err := statusZones(st); err != nil {
			t.Errorf("%v", err)
		} else if zs["b"].Unreachable < counts["b"] {
			t.Errorf("status zones[b] = %+v; want unreachable ≥ %d with every host of zone b cut off", zs["b"], counts["b"])
		}
	}

	// The drain of the cut-off zone.
	start := time.Now()
	if code, body := api.do("PUT", "/v1/drain/b", drainBody("zone b cut off", 100, 50, "2s"), token); code != 200 {
		t.Fatalf("PUT /v1/drain/b: %d %s", code, body)
	}
	drained := w.waitMap(t, 30*time.Second, "zone b drained while cut off", func(m *cachenodes.SlotMap) bool { return zoneSlots(m, zoneOf)["b"] == 0 })
	t.Logf("zone b's slots as seen: %s", zoneCountsSeen(w.from(start), zoneOf, "b", start))
	waitDrainState(t, api, "b", "drained", 10*time.Second, func(e mcribapi.DrainEntry) string {
		if e.Blocked != "" || e.Slots != 0 {
			return fmt.Sprintf("slots %d, blocked %q", e.Slots, e.Blocked)
		}
		return ""
	})
	for _, s := range w.since(start) {
		for _, i := range warmingSlots(s.m) {
			if wm := s.m.Warming(i); zoneOf[wm.NodeID] == "b" {
				t.Errorf("slot %d warms from %s, in the cut-off zone (map %s): a holder that does not answer is replaced cold", i, wm.NodeID, describeMap(s.m))
				break
			}
		}
	}
	if c := zoneSlots(drained, zoneOf); c["a"]+c["c"] != slots {
		t.Errorf("after the drain zones a and c hold %v, want all %d slots", c, slots)
	}
	after := map[string]uint64{}
	for id, n := range p.flushes(outside...) {
		after[id] = n
	}
	for _, bad := range flushChanges(flushes, after, entered(before, drained)) {
		t.Errorf("the drain of the cut-off zone: %s", bad)
	}
	if cold, ok := api.moves("cold"); !ok || cold < float64(counts["b"]) {
		t.Errorf("mcrib_slot_moves_total{kind=\"cold\"} %v (listed %v), want at least the %d slots that left the cut-off zone", cold, ok, counts["b"])
	}
	if warm, ok := api.moves("warm"); !ok || warm != 0 {
		t.Errorf("mcrib_slot_moves_total{kind=\"warm\"} %v (listed %v), want 0: no holder answered", warm, ok)
	}
	if bad := w.invalid(); len(bad) > 0 {
		t.Errorf("%d invalid slot maps seen, first: %s", len(bad), bad[0])
	}
}
