package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/mcribapi"
)

// liveAPIs returns the APIs of the replicas of ms whose process runs.
func liveAPIs(ms ...*mcrib) func() []*apiClient {
	apis := make([]*apiClient, len(ms))
	for i, m := range ms {
		apis[i] = newAPIClient(m.Addr, apiTimeout)
	}
	return func() []*apiClient {
		var out []*apiClient
		for i, m := range ms {
			if !m.Exited() {
				out = append(out, apis[i])
			}
		}
		return out
	}
}

// zLeader waits until one of ms says it leads and returns it.
func zLeader(t *testing.T, timeout time.Duration, ms ...*mcrib) *mcrib {
	t.Helper()
	var lead *mcrib
	testenv.Eventually(t, timeout, "one replica leading", func() bool {
		for _, m := range ms {
			if m.Exited() {
				continue
			}
			if st, err := newAPIClient(m.Addr, apiTimeout).status(); err == nil && st.Leader {
				lead = m
				return true
			}
		}
		return false
	})
	return lead
}

// TestDrainZoneRealStack is a zone drain on real Consul and memcached:
// three zones of four nodes whose IDs sort by zone, 8 slots. The first fill
// spreads the slots (2 or 3 per zone). Bad drain input is refused and
// changes nothing; the CLI's usage errors exit 2 and server errors 1. Zone
// b is drained in steps of 50% every 3 s with a kill -9 of the leader in
// the middle (two replicas): never more than ⌈baseline ÷ 2⌉ slots leave
// within a step interval, the zone ends with none, the drain document says
// "drained", the new holders were flushed once each, the drained nodes not
// at all and still hold what they held, and every map seen is valid. The
// undrain gives the baseline back at the same pace, paused by an operator
// freeze, and removes the entry. A drain goes on under an automatic freeze
// (a slot holder outside b absent from Consul, with
// --max-absent-fraction 0.1). A drain that would leave no undrained zone
// is refused with 409.
func TestDrainZoneRealStack(t *testing.T) {
	const slots = 8
	const interval = 3 * time.Second
	// A look at the map may come up to a poll late: the pace is judged over
	// windows a little shorter than the step interval.
	const window = interval - 700*time.Millisecond
	zones := []string{"a", "b", "c"}
	p := newZonedPool(t, zones, 4)
	args := flags(append(withToken(t), "--slots", fmt.Sprint(slots), "--hold", "60s",
		"--warm-for", "2s", "--max-absent-fraction", "0.1")...)
	r1 := startMcrib(t, p.consul.HTTPAddr, args...)
	filled(t, p, r1, slots)
	r2 := startMcrib(t, p.consul.HTTPAddr, args...)
	w := watchMap(t, liveAPIs(r1, r2))
	tok := []string{"MCRIB_TOKEN=" + token}

	// The first fill spreads the slots over the zones.
	first := w.waitMap(t, 10*time.Second, "a slot map", func(m *cachenodes.SlotMap) bool { return len(holders(m)) == slots })
	counts := zoneSlots(first, p.zoneOf)
	if why := spreadProblem(counts, zones, slots); why != "" {
		t.Errorf("after the first fill: %s; map %s", why, describeMap(first))
	}
	baseline := counts["b"]
	if baseline == 0 {
		t.Fatalf("zone b holds no slot after the first fill (%v): nothing to drain", counts)
	}
	maxStep := (baseline*50 + 99) / 100 // ⌈baseline × 50 ÷ 100⌉
	t.Logf("first fill: %v; zone b's baseline %d, at most %d per step", counts, baseline, maxStep)

	lead := zLeader(t, 15*time.Second, r1, r2)
	api := newAPIClient(lead.Addr, apiTimeout)
	d, raw, err := api.drain()
	if err != nil {
		t.Fatalf("%v", err)
	}
	if len(d.Zones) != 0 {
		t.Fatalf("GET /v1/drain before any drain: %s, want {\"zones\": {}}", raw)
	}
	checkStatusZones(t, api, zones, map[string]int{"a": 4, "b": 4, "c": 4}, counts)

	// Bad input: refused with one sentence, nothing changed.
	unchanged := func(what string) {
		t.Helper()
		d, raw, err := api.drain()
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Zones) != 0 {
			t.Fatalf("%s changed the drain document: %s", what, raw)
		}
		if m := w.latest(); m.Generation() != first.Generation() {
			t.Fatalf("%s moved slots: %s", what, describeMap(m))
		}
	}
	good := drainBody("test", 100, 50, "3s")
	for _, tc := range []struct {
		name, method, path, body, tok string
		want                          int
	}{
		{"unknown zone", "PUT", "/v1/drain/nope", good, token, 404},
		{"percent 0", "PUT", "/v1/drain/b", drainBody("test", 0, 50, "3s"), token, 400},
		{"percent 101", "PUT", "/v1/drain/b", drainBody("test", 101, 50, "3s"), token, 400},
		{"step_percent 0", "PUT", "/v1/drain/b", drainBody("test", 100, 0, "3s"), token, 400},
		{"step_percent 101", "PUT", "/v1/drain/b", drainBody("test", 100, 101, "3s"), token, 400},
		{"step_interval 500ms", "PUT", "/v1/drain/b", drainBody("test", 100, 50, "500ms"), token, 400},
		{"step_interval 2h", "PUT", "/v1/drain/b", drainBody("test", 100, 50, "2h"), token, 400},
		{"step_interval not a duration", "PUT", "/v1/drain/b", drainBody("test", 100, 50, "soon"), token, 400},
		{"missing reason", "PUT", "/v1/drain/b", `{"percent":100,"step_percent":50,"step_interval":"3s"}`, token, 400},
		{"empty reason", "PUT", "/v1/drain/b", drainBody("", 100, 50, "3s"), token, 400},
		{"reason of 513 characters", "PUT", "/v1/drain/b", drainBody(strings.Repeat("r", 513), 100, 50, "3s"), token, 400},
		{"malformed JSON", "PUT", "/v1/drain/b", `{"reason":`, token, 400},
		{"no token", "PUT", "/v1/drain/b", good, "", 401},
		{"undrain of a zone not drained", "DELETE", "/v1/drain/b", "", token, 404},
		{"undrain of an unknown zone", "DELETE", "/v1/drain/nope", "", token, 404},
	} {
		code, body := api.do(tc.method, tc.path, tc.body, tc.tok)
		if code != tc.want || !isErrorBody(body) {
			t.Errorf("%s: %s %s: %d %s, want %d with {\"error\": \"<one sentence>\"}", tc.name, tc.method, tc.path, code, body, tc.want)
		}
		unchanged(tc.name)
	}

	// The CLI: usage errors exit 2, server errors 1, nothing changed.
	if code, out, errOut := runCLI(t, lead.Addr, nil, "zones"); code != 0 || len(strings.Split(strings.TrimSpace(out), "\n")) < 3 {
		t.Errorf("mcrib zones: exit %d, stdout %q, stderr %q; want 0 and a line per zone", code, short(out), short(errOut))
	}
	if code, out, errOut := runCLI(t, lead.Addr, nil, "zones", "--json"); code != 0 || !json.Valid([]byte(out)) || !strings.Contains(out, `"b"`) {
		t.Errorf("mcrib zones --json: exit %d, stdout %q, stderr %q; want 0 and JSON naming zone b", code, short(out), short(errOut))
	}
	for _, tc := range []struct {
		env  []string
		args []string
		want []int
	}{
		{tok, []string{"drain"}, []int{2}},
		{tok, []string{"drain", "b"}, []int{2}},
		{tok, []string{"drain", "b", "c", "--reason", "x"}, []int{2}},
		{tok, []string{"drain", "b", "--reason", "x", "--every", "soon"}, []int{1, 2}},
		{tok, []string{"drain", "b", "--reason", "x", "--percent", "0"}, []int{1, 2}},
		{tok, []string{"drain", "b", "--reason", "x", "--every", "500ms"}, []int{1, 2}},
		{tok, []string{"drain", "nope", "--reason", "x"}, []int{1}},
		{nil, []string{"drain", "b", "--reason", "x"}, []int{1}},
		{tok, []string{"undrain"}, []int{2}},
		{tok, []string{"undrain", "b"}, []int{1}},
	} {
		code, out, errOut := runCLI(t, lead.Addr, tc.env, tc.args...)
		ok := false
		for _, w := range tc.want {
			ok = ok || code == w
		}
		if !ok || (code == 1 && strings.TrimSpace(errOut) == "") {
			t.Errorf("mcrib %s: exit %d, stdout %q, stderr %q; want exit %v (2 usage, 1 an error from the server, its message on stderr)",
				strings.Join(tc.args, " "), code, short(out), short(errOut), tc.want)
		}
		unchanged("mcrib " + strings.Join(tc.args, " "))
	}

	// The drain, with kill -9 of the leader after its first step.
	before := w.latest()
	flushes := p.flushes(t)
	kept := map[string]string{} // a key in each holder of zone b, set directly
	for _, id := range p.inZone("b") {
		if before.SlotOf(id) >= 0 {
			k := "keep-" + id
			if err := memcache.New(p.nodes[id].Addr).Set(&memcache.Item{Key: k, Value: []byte(id)}); err != nil {
				t.Fatal(err)
			}
			kept[id] = k
		}
	}
	start := time.Now()
	code, body := api.do("PUT", "/v1/drain/b", good, token)
	if code != 200 {
		t.Fatalf("PUT /v1/drain/b: %d %s", code, body)
	}
	put, err := decodeAs[mcribapi.DrainDoc](body, "PUT /v1/drain/b")
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := drainEntry(put, "b"); !ok || e.Percent != 100 || e.StepPercent != 50 || e.StepInterval != "3s" || e.Reason != "test" ||
		e.BaselineSlots != baseline || e.TargetSlots != 0 || e.By == "" || e.At.IsZero() {
		t.Errorf("PUT /v1/drain/b answered %s; want zone b with percent 100, step_percent 50, step_interval \"3s\", reason \"test\", baseline_slots %d, target_slots 0, by and at", body, baseline)
	}
	// Each step is announced, and serves 12 s later (docs/api.md,
	// "Announce, then serve").
	w.waitMap(t, 10*time.Second+cachenodes.AnnounceLead, "the first step of the drain", func(m *cachenodes.SlotMap) bool { return zoneSlots(m, p.zoneOf)["b"] < baseline })
	// A step may write its moves one by one: the kill comes after the
	// whole first step (or a second), not between a flush and its write.
	within(time.Second, func() bool { return zoneSlots(w.latest(), p.zoneOf)["b"] <= baseline-maxStep })
	t.Logf("first step seen %v after the PUT; kill -9 of the leader %s", time.Since(start).Round(time.Millisecond), lead.Addr)
	lead.Kill(t)
	survivor := r1
	if lead == r1 {
		survivor = r2
	}
	api = newAPIClient(survivor.Addr, apiTimeout)
	drained := w.waitMap(t, 45*time.Second, "zone b drained after the takeover", func(m *cachenodes.SlotMap) bool { return zoneSlots(m, p.zoneOf)["b"] == 0 })
	t.Logf("zone b's slots as seen: %s", zoneCountsSeen(w.from(start), p.zoneOf, "b", start))
	if zLeader(t, 20*time.Second, survivor) != survivor {
		t.Fatal("the survivor does not lead")
	}
	waitDrainState(t, api, "b", "drained", 10*time.Second, func(e mcribapi.DrainEntry) string {
		if e.Slots != 0 || e.TargetSlots != 0 || e.BaselineSlots != baseline {
			return fmt.Sprintf("slots %d, target_slots %d, baseline_slots %d; want 0, 0, %d", e.Slots, e.TargetSlots, e.BaselineSlots, baseline)
		}
		return ""
	})
	if bad := paceViolation(w.from(start), p.zoneOf, "b", maxStep, window, false); bad != "" {
		t.Errorf("the drain: %s", bad)
	}
	if took := drainedAt(w.since(start), p.zoneOf, "b", 0).Sub(start); baseline > maxStep && took < interval-time.Second {
		t.Errorf("zone b drained %v after the PUT; %d slots in steps of %d need at least one step interval (%v)", took, baseline, maxStep, interval)
	}
	checkWarmMoves(t, w.since(start), before, p.zoneOf, "b")
	for _, bad := range flushChanges(flushes, p.flushes(t), entered(before, drained)) {
		t.Errorf("the drain: %s", bad)
	}
	for id, k := range kept {
		if it, err := directGet(p.nodes[id].Addr, k); err != nil || string(it.Value) != id {
			t.Errorf("the drained node %s lost the key %s it held (%v): a drain step must leave its nodes' contents alone", id, k, err)
		}
	}
	testenv.Eventually(t, 10*time.Second+cachenodes.WarmWriteGrace, "zone b's nodes drained spares once the warming ended (--warm-for 2s) and its object went (12 s later)", func() bool {
		st, err := api.status()
		if err != nil {
			return false
		}
		for _, id := range p.ids {
			n, ok := nodeStatus(st, id)
			if !ok || n.Drained != (p.zoneOf[id] == "b") || (p.zoneOf[id] == "b" && n.State != mcribapi.NodeSpare) {
				return false
			}
		}
		m, _, err := api.slotMap("")
		return err == nil && len(warmingSlots(m)) == 0
	})

	// The undrain, at the same pace, paused by an operator freeze (which
	// drops a step's announce: its node is flushed again when the step is
	// announced anew).
	before, flushes = w.latest(), p.flushes(t)
	seq := lastSeq(t, api)
	start = time.Now()
	if code, out, errOut := runCLI(t, survivor.Addr, tok, "undrain", "b"); code != 0 {
		t.Fatalf("mcrib undrain b: exit %d, stdout %q, stderr %q", code, short(out), short(errOut))
	}
	w.waitMap(t, 10*time.Second+cachenodes.AnnounceLead, "the first return step", func(m *cachenodes.SlotMap) bool { return zoneSlots(m, p.zoneOf)["b"] > 0 })
	if code, body := api.do("PUT", "/v1/freeze", `{"reason":"hold the return"}`, token); code != 200 {
		t.Fatalf("PUT /v1/freeze: %d %s", code, body)
	}
	waitDrainState(t, api, "b", "paused", 5*time.Second, nil)
	held := w.latest()
	if c := zoneSlots(held, p.zoneOf)["b"]; c >= baseline {
		t.Fatalf("the return completed (%d slots) before the freeze could hold it", c)
	}
	steady(t, 2*interval, "while an operator freeze holds the return", func() string {
		if m := w.latest(); m.Generation() != held.Generation() {
			return "slots moved: " + describeMap(m)
		}
		if d, _, err := api.drain(); err == nil && d.Zones["b"].State != mcribapi.DrainPaused {
			return fmt.Sprintf("zone b's drain state %q, want paused", d.Zones["b"].State)
		}
		return ""
	})
	if code, body := api.do("DELETE", "/v1/freeze", "", token); code != 200 {
		t.Fatalf("DELETE /v1/freeze: %d %s", code, body)
	}
	returned := w.waitMap(t, 30*time.Second, "zone b holding its baseline again", func(m *cachenodes.SlotMap) bool { return zoneSlots(m, p.zoneOf)["b"] == baseline })
	t.Logf("zone b's slots as seen during the return: %s", zoneCountsSeen(w.from(start), p.zoneOf, "b", start))
	testenv.Eventually(t, 10*time.Second, "the drain entry removed ({\"zones\": {}})", func() bool {
		d, _, err := api.drain()
		return err == nil && len(d.Zones) == 0
	})
	if bad := paceViolation(w.from(start), p.zoneOf, "b", maxStep, window, true); bad != "" {
		t.Errorf("the return: %s", bad)
	}
	for _, bad := range flushesOfAnnounces(flushes, p.flushes(t), entered(before, returned), announcesSince(t, api, seq)) {
		t.Errorf("the return: %s", bad)
	}

	// An automatic freeze does not hold a drain: a slot holder of zone a
	// leaves Consul while its memcached answers (1 of 8 holders absent,
	// above --max-absent-fraction 0.1).
	var absent string
	for _, id := range p.inZone("a") {
		if returned.SlotOf(id) >= 0 {
			absent = id
			break
		}
	}
	if err := p.consul.Client.Agent().ServiceDeregister(absent); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "the automatic freeze on with "+absent+" absent", func() bool {
		st, err := api.status()
		return err == nil && st.AutoFrozen
	})
	before, flushes = w.latest(), p.flushes(t)
	start = time.Now()
	if code, out, errOut := runCLI(t, survivor.Addr, tok, "drain", "b", "--reason", "x", "--percent", "100", "--step", "50", "--every", "3s"); code != 0 {
		t.Fatalf("mcrib drain b --reason x --percent 100 --step 50 --every 3s: exit %d, stdout %q, stderr %q", code, short(out), short(errOut))
	}
	if d := mustDrain(t, api); d.Zones["b"].StepPercent != 50 || d.Zones["b"].StepInterval != "3s" || d.Zones["b"].Percent != 100 || d.Zones["b"].Reason != "x" {
		t.Errorf("after mcrib drain b --reason x --percent 100 --step 50 --every 3s: %+v", d.Zones["b"])
	}
	lifted := ""
	if !within(30*time.Second, func() bool {
		if st, err := api.status(); err == nil && !st.AutoFrozen && lifted == "" {
			lifted = fmt.Sprintf("the automatic freeze lifted %v into the drain", time.Since(start).Round(time.Millisecond))
		}
		return zoneSlots(w.latest(), p.zoneOf)["b"] == 0
	}) {
		t.Fatalf("zone b not drained within 30 s under an automatic freeze: %s; map %s; drain %+v",
			zoneCountsSeen(w.from(start), p.zoneOf, "b", start), describeMap(w.latest()), mustDrain(t, api).Zones["b"])
	}
	if lifted != "" {
		t.Errorf("%s: the test meant to drain under it (is %s still absent?)", lifted, absent)
	}
	t.Logf("zone b's slots under the automatic freeze: %s", zoneCountsSeen(w.from(start), p.zoneOf, "b", start))
	if bad := paceViolation(w.from(start), p.zoneOf, "b", maxStep, window, false); bad != "" {
		t.Errorf("the drain under an automatic freeze: %s", bad)
	}
	for _, bad := range flushChanges(flushes, p.flushes(t), entered(before, w.latest())) {
		t.Errorf("the drain under an automatic freeze: %s", bad)
	}

	// A drain that would leave no undrained zone: b and a drained, c refused.
	if code, body := api.do("PUT", "/v1/drain/a", drainBody("and a", 100, 50, "3s"), token); code != 200 {
		t.Fatalf("PUT /v1/drain/a with b drained: %d %s", code, body)
	}
	d = mustDrain(t, api)
	if code, body := api.do("PUT", "/v1/drain/c", good, token); code != 409 || !isErrorBody(body) {
		t.Errorf("PUT /v1/drain/c with a and b drained: %d %s, want 409 with {\"error\": …}", code, body)
	}
	if after := mustDrain(t, api); len(after.Zones) != len(d.Zones) || after.Zones["c"] != nil {
		t.Errorf("the refused drain of c changed the drain document: %+v", after.Zones)
	}
	if code, out, errOut := runCLI(t, survivor.Addr, tok, "drain", "c", "--reason", "x"); code != 1 || strings.TrimSpace(errOut) == "" {
		t.Errorf("mcrib drain c with a and b drained: exit %d, stdout %q, stderr %q; want 1 with the server's message", code, short(out), short(errOut))
	}

	if bad := w.invalid(); len(bad) > 0 {
		t.Errorf("%d invalid slot maps seen, first: %s", len(bad), bad[0])
	}
}

// checkStatusZones checks the status document's zones: one entry per zone
// with its nodes and slots, and no drain.
func checkStatusZones(t *testing.T, api *apiClient, zones []string, nodes, slots map[string]int) {
	t.Helper()
	st, err := api.status()
	if err != nil {
		t.Fatal(err)
	}
	got, err := statusZones(st)
	if err != nil {
		t.Errorf("%v", err)
		return
	}
	for _, z := range zones {
		e, ok := got[z]
		if !ok || e.Nodes != nodes[z] || e.Slots != slots[z] || e.Drain != nil {
			t.Errorf("status zones[%s] = %+v (listed %v); want nodes %d, slots %d, drain null", z, e, ok, nodes[z], slots[z])
		}
	}
}

// waitDrainState waits until zone's drain entry has state, and check (when
// not nil) finds nothing wrong with it.
func waitDrainState(t *testing.T, api *apiClient, zone string, state mcribapi.DrainState, timeout time.Duration, check func(mcribapi.DrainEntry) string) {
	t.Helper()
	var last []byte
	why := ""
	if !within(timeout, func() bool {
		d, raw, err := api.drain()
		last = raw
		if err != nil {
			return false
		}
		e, ok := drainEntry(d, zone)
		if !ok || e.State != state {
			return false
		}
		if check != nil {
			why = check(e)
		}
		return why == ""
	}) {
		t.Fatalf("zone %s's drain state not %q within %v: %s %s", zone, state, timeout, last, why)
	}
}

// drainedAt returns when zone was first seen holding want slots.
func drainedAt(samples []mapSample, zoneOf map[string]string, zone string, want int) time.Time {
	for _, s := range samples {
		if zoneSlots(s.m, zoneOf)[zone] == want {
			return s.at
		}
	}
	return time.Time{}
}

// checkWarmMoves checks that every slot that left zone (its holder
// answering) was seen warming from its old holder: the drain's steps are
// warm moves (docs/api.md, "Warm moves").
func checkWarmMoves(t *testing.T, samples []mapSample, before *cachenodes.SlotMap, zoneOf map[string]string, zone string) {
	t.Helper()
	for i, s := range before.Slots() {
		if zoneOf[s.ID] != zone {
			continue
		}
		warm := false
		for _, sm := range samples {
			if w := sm.m.Warming(i); w != nil && w.NodeID == s.ID && w.Addr == s.Addr && sm.m.Slot(i).ID != s.ID {
				warm = true
				break
			}
		}
		if !warm {
			t.Errorf("slot %d left %s (zone %s, answering) without a warming object naming it: a drain step of an answering holder is a warm move", i, s.ID, zone)
		}
	}
}
