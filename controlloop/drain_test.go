package controlloop

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/eventlog"
	"github.com/mcrib/mcrib/internal/leakcheck"
	"github.com/mcrib/mcrib/mcribapi"
)

// threeZones is a leading world of 6 slots over zones az-a, az-b and
// az-c, two holders each (a1 b1 c1 a2 b2 c2 in slots 0..5), and two
// spares each.
func threeZones(t *testing.T) *world {
	t.Helper()
	return leadingWorld(t, []string{"a1", "b1", "c1", "a2", "b2", "c2"}, "a3", "a4", "b3", "b4", "c3", "c4")
}

func (w *world) drain(zone string, percent, step int, every time.Duration) mcribapi.DrainDoc {
	w.t.Helper()
	doc, err := w.loop.Drain(context.Background(), zone, mcribapi.Drain{Reason: "link flapping", Percent: percent, StepPercent: step, StepInterval: every}, "ops")
	if err != nil {
		w.t.Fatalf("drain %s: %v", zone, err)
	}
	return doc
}

// zoneHeld counts the slots zone holds in the stored map.
func (w *world) zoneHeld(zone string) int {
	m, _ := w.store.stored()
	return zoneSlots(m)[zone]
}

func (w *world) entry(zone string) *mcribapi.DrainEntry {
	w.t.Helper()
	return w.loop.Drains().Zones[zone]
}

func TestDrainPacedAndReturned(t *testing.T) {
	leakcheck.Check(t)
	w := threeZones(t)
	log := eventlog.NewLog(eventlog.Options{Clock: w.clk})
	w.loop.opts.Events = eventlog.Recorder{Log: log}
	doc := w.drain("az-b", 100, 50, 3*time.Second)
	e := doc.Zones["az-b"]
	if e == nil || e.BaselineSlots != 2 || e.TargetSlots != 0 || e.State != mcribapi.DrainDraining || e.By != "ops" || e.StepInterval != "3s" {
		t.Fatalf("drain document %+v", e)
	}
	if d := w.store.storedDrainDoc(t); d == nil || d.Zones["az-b"].BaselineSlots != 2 {
		t.Fatalf("stored drain document %+v", d)
	}

	// The first step starts at once: one slot (⌈2 × 50%⌉), the highest
	// numbered, goes to the zone holding the fewest (a and c tie: a). It is
	// announced first (a3 flushed, the slot's incoming node), and counts
	// as moved at once, the step interval (3s) being under the 12s the
	// announce takes.
	_, writes := w.store.stored()
	w.pass(mcribapi.OutcomeOK)
	w.wantStored(t, 3, []string{"a1", "b1", "c1", "a2", "b2", "c2"}, writes+1)
	if m, _ := w.store.stored(); m.Incoming(4) == nil || m.Incoming(4).NodeID != "a3" || !m.Incoming(4).ServesAt.Equal(w.clk.Now().Add(cachenodes.AnnounceLead)) {
		t.Fatalf("slot 4's incoming %+v, want a3 serving in 12s", m.Incoming(4))
	}
	if n := w.node("a3"); n.State != mcribapi.NodeIncoming || n.Incoming == nil || *n.Incoming != 4 {
		t.Fatalf("node a3 %+v, want incoming to slot 4", n)
	}
	if d := w.store.storedDrainDoc(t); d.Zones["az-b"].LastStepAt == nil || !d.Zones["az-b"].LastStepAt.Equal(w.clk.Now()) {
		t.Fatalf("the step's time was not stored with it: %+v", d.Zones["az-b"])
	}
	if e := w.entry("az-b"); e.Slots != 1 || e.State != mcribapi.DrainDraining {
		t.Fatalf("entry %+v, want the announced slot counted as moved", e)
	}
	// Not again before the interval.
	w.after(2 * time.Second)
	if e := w.entry("az-b"); e.Slots != 1 || e.State != mcribapi.DrainDraining {
		t.Fatalf("entry %+v", e)
	}
	w.after(time.Second)
	w.wantStored(t, 3, []string{"a1", "b1", "c1", "a2", "b2", "c2"}, writes+2)
	if m, _ := w.store.stored(); m.Incoming(1) == nil || m.Incoming(1).NodeID != "c3" {
		t.Fatalf("slot 1's incoming %+v, want c3", m.Incoming(1))
	}
	if e := w.entry("az-b"); e.Slots != 0 || e.State != mcribapi.DrainDrained || e.Blocked != "" {
		t.Fatalf("entry %+v", e)
	}
	// Each serves 12s after its announce, unflushed.
	w.after(9 * time.Second)
	w.wantStored(t, 4, []string{"a1", "b1", "c1", "a2", "a3", "c2"}, writes+3)
	w.after(3 * time.Second)
	w.wantStored(t, 5, []string{"a1", "c3", "c1", "a2", "a3", "c2"}, writes+4)
	// Only the nodes entering a slot were flushed, once each; the drained
	// nodes keep their contents as spares.
	w.wantFlushes(t, map[string]int{"a3": 1, "c3": 1})
	for _, id := range []string{"b1", "b2", "b3"} {
		if n := w.node(id); n.State != mcribapi.NodeSpare || !n.Drained {
			t.Errorf("node %s: state %s drained %v, want a drained spare", id, n.State, n.Drained)
		}
	}
	if n := w.node("a1"); n.Drained {
		t.Errorf("node a1 of an undrained zone is drained")
	}
	if got := w.metrics.moves; !slices.Equal(got, []mcribapi.MoveKind{mcribapi.MoveCold, mcribapi.MoveCold}) {
		t.Errorf("slot moves %v, want two cold (warm-for 0)", got)
	}
	// A vacant slot never goes to a drained zone's spare.
	w.clk.Advance(time.Hour)
	w.probe()
	w.pass(mcribapi.OutcomeOK)
	if w.zoneHeld("az-b") != 0 {
		t.Fatalf("zone b took a slot back while drained")
	}

	// The drain recorded the slots it moved off the zone.
	if d := w.store.storedDrainDoc(t); !slices.Equal(d.Zones["az-b"].MovedSlots, []int{1, 4}) {
		t.Fatalf("stored moved_slots %v, want [1 4]", d.Zones["az-b"].MovedSlots)
	}

	// Undrain: an undo at the same pace: the slots the drain moved come
	// back, lowest first, into the zone's spares by ID.
	doc, err := w.loop.Undrain(context.Background(), "az-b")
	if err != nil || !doc.Zones["az-b"].Returning || doc.Zones["az-b"].TargetSlots != 2 || doc.Zones["az-b"].State != mcribapi.DrainReturning {
		t.Fatalf("undrain: %+v, %v", doc.Zones["az-b"], err)
	}
	w.pass(mcribapi.OutcomeOK)
	if m, _ := w.store.stored(); m.Incoming(1) == nil || m.Incoming(1).NodeID != "b1" {
		t.Fatalf("slot 1's incoming %+v, want b1 (the first return step)", m.Incoming(1))
	}
	w.after(2 * time.Second)
	if e := w.entry("az-b"); e.Slots != 1 {
		t.Fatalf("zone b holds %d slots 2s after the first return step, want 1 (announced)", e.Slots)
	}
	w.after(time.Second)
	if m, _ := w.store.stored(); m.Incoming(4) == nil || m.Incoming(4).NodeID != "b2" {
		t.Fatalf("slot 4's incoming %+v, want b2 (the second return step)", m.Incoming(4))
	}
	w.after(9 * time.Second)
	w.wantStored(t, 6, []string{"a1", "b1", "c1", "a2", "a3", "c2"}, writes+7)
	if d := w.store.storedDrainDoc(t); !slices.Equal(d.Zones["az-b"].MovedSlots, []int{4}) {
		t.Fatalf("stored moved_slots %v after slot 1 came back, want [4]", d.Zones["az-b"].MovedSlots)
	}
	w.after(3 * time.Second)
	w.wantStored(t, 7, []string{"a1", "b1", "c1", "a2", "b2", "c2"}, writes+8)
	if d := w.store.storedDrainDoc(t); d != nil {
		t.Fatalf("the entry of a zone back at its baseline was kept: %+v", d.Zones)
	}
	if len(w.loop.Drains().Zones) != 0 || w.node("b1").Drained {
		t.Fatalf("still drained after the return: %+v", w.loop.Drains())
	}
	w.wantFlushes(t, map[string]int{"a3": 1, "c3": 1, "b1": 1, "b2": 1})
	var over []string
	for _, e := range log.Since(0) {
		if e.Kind == mcribapi.EventDrainOver {
			over = append(over, e.Reason)
		}
	}
	if len(over) != 1 || !strings.Contains(over[0], "zone az-b holds its baseline again") || !strings.Contains(over[0], "every slot its drain moved came back") {
		t.Errorf("drain over events %q, want one for az-b", over)
	}
}

func TestDrainStepIsCapped(t *testing.T) {
	// 12 slots, zone b holds 4; percent 75, step 25 %: 1 slot a step,
	// target ⌊4 × 25 ÷ 100⌋ = 1.
	w := leadingWorld(t, []string{"a1", "b1", "c1", "a2", "b2", "c2", "a3", "b3", "c3", "a4", "b4", "c4"},
		"a5", "a6", "a7", "c5", "c6", "c7")
	w.drain("az-b", 75, 25, time.Second)
	prev := 4
	for step := 0; step < 6; step++ {
		w.pass(mcribapi.OutcomeOK)
		// An announced slot counts as moved (a step every 1s, under the
		// 12s an announce takes).
		held := w.entry("az-b").Slots
		if prev-held > 1 {
			t.Fatalf("step %d moved %d slots, more than ⌈4 × 25%%⌉ = 1", step, prev-held)
		}
		prev = held
		w.clk.Advance(time.Second)
		w.probe()
	}
	if prev != 1 {
		t.Fatalf("zone b ends with %d slots, want the target 1", prev)
	}
	for range int(cachenodes.AnnounceLead / time.Second) {
		w.after(time.Second)
	}
	if held := w.zoneHeld("az-b"); held != 1 {
		t.Fatalf("zone b holds %d slots once the announces served, want the target 1", held)
	}
	if e := w.entry("az-b"); e.State != mcribapi.DrainDrained || e.TargetSlots != 1 {
		t.Fatalf("entry %+v", e)
	}
}

func TestDrainPausedByAnOperatorFreezeNotByAnAutomaticOne(t *testing.T) {
	w := threeZones(t)
	w.store.PutFreeze(context.Background(), mcribapi.FreezeDoc{Frozen: true, Reason: "rollout"})
	w.drain("az-b", 100, 100, time.Second)
	w.pass(mcribapi.OutcomeOK)
	if w.zoneHeld("az-b") != 2 {
		t.Fatalf("a drain moved slots under an operator freeze")
	}
	if e := w.entry("az-b"); e.State != mcribapi.DrainPaused || e.Blocked == "" {
		t.Fatalf("entry under an operator freeze: %+v", e)
	}
	w.store.DeleteFreeze(context.Background())

	// A fault of discovery: the automatic freeze holds every replacement
	// back, but not the drain.
	w.loop.onAnswer(cachenodes.Membership{})
	w.pass(mcribapi.OutcomeOK)
	if st := w.loop.Status(); !st.AutoFrozen {
		t.Fatalf("no automatic freeze after an empty answer: %+v", st.AutoFreezeReason)
	}
	w.serve()
	if got := w.zoneHeld("az-b"); got != 0 {
		t.Fatalf("zone b holds %d slots under an automatic freeze, want 0", got)
	}
	w.wantFlushes(t, map[string]int{"a3": 1, "c3": 1})
}

func TestDrainOfAnUnreachableZoneMovesCold(t *testing.T) {
	leakcheck.Check(t)
	// Zone b holds 4 of 6 slots; it is cut off: more than half of the
	// holders unreachable is taken as the observer's fault (automatic
	// freeze), and the status names the zone and the lever.
	w := leadingWorld(t, []string{"a1", "b1", "b2", "b3", "b4", "c1"}, "a2", "a3", "c2", "c3")
	w.loop.opts.WarmFor = 2 * time.Minute
	w.away("b1", "b2", "b3", "b4")
	w.pass(mcribapi.OutcomeOK)
	st := w.loop.Status()
	if !st.AutoFrozen || !strings.Contains(st.AutoFreezeReason, "mcrib drain az-b") || !strings.Contains(st.ZoneAlert, "zone az-b: 4 of 4") {
		t.Fatalf("status: auto frozen %v, reason %q, zone alert %q", st.AutoFrozen, st.AutoFreezeReason, st.ZoneAlert)
	}
	w.drain("az-b", 100, 100, time.Second)
	w.pass(mcribapi.OutcomeOK)
	w.serve()
	if got := w.zoneHeld("az-b"); got != 0 {
		t.Fatalf("zone b holds %d slots, want 0", got)
	}
	m, _ := w.store.stored()
	if m.AnyWarming() {
		t.Fatalf("a move off an unreachable holder warms")
	}
	w.wantFlushes(t, map[string]int{"a2": 1, "a3": 1, "c2": 1, "c3": 1})
	if got := w.metrics.moves; !slices.Equal(got, []mcribapi.MoveKind{mcribapi.MoveCold, mcribapi.MoveCold, mcribapi.MoveCold, mcribapi.MoveCold}) {
		t.Errorf("slot moves %v, want four cold", got)
	}
	if c := zoneSlots(m); c["az-a"] != 3 || c["az-c"] != 3 {
		t.Errorf("zones hold %v, want a:3 c:3", c)
	}
	var zb *mcribapi.ZoneStatus
	for _, z := range w.loop.Status().Zones {
		if z.Zone == "az-b" {
			zb = &z
		}
	}
	if zb == nil || zb.Nodes != 4 || zb.Slots != 0 || zb.Unreachable != 4 || zb.Drain == nil {
		t.Fatalf("zone az-b status %+v", zb)
	}
	var names []string
	for _, z := range w.loop.Status().Zones {
		names = append(names, z.Zone)
		if z.Zone == "az-a" && (z.Slots != 3 || z.HitRate != nil) {
			t.Errorf("zone az-a status %+v", z)
		}
	}
	if !slices.Equal(names, []string{"az-a", "az-b", "az-c"}) {
		t.Errorf("zones %v", names)
	}
	// The hit rate of a zone is its holders' hits over their gets between
	// two stats readings, not over their lifetime.
	zoneRate := func(zone string) *float64 {
		for _, z := range w.loop.Status().Zones {
			if z.Zone == zone {
				return z.HitRate
			}
		}
		t.Fatalf("no zone %s", zone)
		return nil
	}
	w.prober.setCounters(cacheNode("a1").Addr, 1000, 0)
	w.probe()
	w.loop.HitCounters(context.Background())
	if r := zoneRate("az-a"); r != nil {
		t.Errorf("zone az-a hit rate %v after one reading, want unknown", *r)
	}
	w.prober.setCounters(cacheNode("a1").Addr, 1090, 10)
	w.clk.Advance(5 * time.Second)
	w.probe()
	w.loop.HitCounters(context.Background())
	if r := zoneRate("az-a"); r == nil {
		t.Errorf("zone az-a hit rate unknown, want 0.9")
	} else if *r != 0.9 {
		t.Errorf("zone az-a hit rate %v, want 0.9 (90 hits of 100 gets since the last reading)", *r)
	}
	if r := zoneRate("az-b"); r != nil {
		t.Errorf("zone az-b, holding no slot, hit rate %v, want unknown", *r)
	}
	// None of the zone's holders answers: its hit rate is unknown, not
	// the last one measured (a gray failure must not look healthy).
	held, _ := w.store.stored()
	for _, n := range held.Slots() {
		if n.AZ == "az-a" {
			w.prober.setDown(n.Addr, true)
		}
	}
	w.clk.Advance(5 * time.Second)
	w.probe()
	w.loop.HitCounters(context.Background())
	if r := zoneRate("az-a"); r != nil {
		t.Errorf("zone az-a hit rate %v while none of its holders answers, want unknown", *r)
	}
}

func TestDrainBlockedWithoutASpare(t *testing.T) {
	w := leadingWorld(t, []string{"a1", "b1", "c1"}, "b2")
	w.drain("az-b", 100, 100, time.Second)
	w.pass(mcribapi.OutcomeOK)
	// The refusal names what would help.
	const want = "no spare outside the drained zones: every node holds a slot or is in a drained zone (1 node); add a memcached to the service, or undrain a zone"
	if e := w.entry("az-b"); e.Slots != 1 || e.Blocked != want {
		t.Fatalf("entry %+v, want blocked %q", e, want)
	}
}

// The leader stores blocked in the drain document (only when it changes),
// so a follower answers it too; it is cleared when the step goes through.
func TestDrainBlockedStoredForFollowers(t *testing.T) {
	w := leadingWorld(t, []string{"a1", "b1", "c1"}, "b2")
	w2 := w.sibling()
	w.drain("az-b", 100, 100, time.Second)
	w.pass(mcribapi.OutcomeOK)
	const want = "no spare outside the drained zones: every node holds a slot or is in a drained zone (1 node); add a memcached to the service, or undrain a zone"
	if d := w.store.storedDrainDoc(t); d == nil || d.Zones["az-b"].Blocked != want {
		t.Fatalf("stored drain document %+v, want blocked %q", d, want)
	}
	w.store.mu.Lock()
	writes := w.store.drainWrites
	w.store.mu.Unlock()
	w.clk.Advance(time.Second)
	w.probe()
	w.pass(mcribapi.OutcomeOK)
	w.store.mu.Lock()
	again := w.store.drainWrites
	w.store.mu.Unlock()
	if again != writes {
		t.Errorf("the same blocked was written again (%d drain writes, was %d)", again, writes)
	}
	w2.pass(mcribapi.OutcomeFollower)
	if e := w2.entry("az-b"); e == nil || e.Blocked != want || e.State != mcribapi.DrainDraining {
		t.Fatalf("the follower's entry %+v, want blocked %q", e, want)
	}

	// A spare comes in zone a: the step goes through, blocked is cleared.
	w.answer("a1", "b1", "c1", "b2", "a2")
	w.clk.Advance(time.Second)
	w.probe()
	w.pass(mcribapi.OutcomeOK)
	w.serve()
	if w.zoneHeld("az-b") != 0 {
		t.Fatalf("the step did not go through once a spare came")
	}
	w2.pass(mcribapi.OutcomeFollower)
	if e := w2.entry("az-b"); e == nil || e.Blocked != "" || e.State != mcribapi.DrainDrained {
		t.Fatalf("the follower's entry after the step %+v", e)
	}
	if d := w.store.storedDrainDoc(t); d.Zones["az-b"].Blocked != "" {
		t.Fatalf("blocked still stored after the step: %+v", d.Zones["az-b"])
	}
}

// An undrain clears the stored blocked at once (the leader's next pass
// says anew what stops the return).
func TestUndrainClearsStoredBlocked(t *testing.T) {
	w := leadingWorld(t, []string{"a1", "b1", "c1"}, "b2")
	w.drain("az-b", 100, 100, time.Second)
	w.pass(mcribapi.OutcomeOK)
	if d := w.store.storedDrainDoc(t); d.Zones["az-b"].Blocked == "" {
		t.Fatalf("no blocked stored: %+v", d.Zones["az-b"])
	}
	if _, err := w.loop.Undrain(context.Background(), "az-b"); err != nil {
		t.Fatal(err)
	}
	if d := w.store.storedDrainDoc(t); d == nil || d.Zones["az-b"] == nil || d.Zones["az-b"].Blocked != "" {
		t.Fatalf("blocked after an undrain: %+v", d)
	}
}

func TestDrainRequestErrors(t *testing.T) {
	w := threeZones(t)
	ctx := context.Background()
	req := mcribapi.Drain{Reason: "r", Percent: 100, StepPercent: 10, StepInterval: time.Second}
	if _, err := w.loop.Drain(ctx, "az-x", req, "ops"); !errors.Is(err, mcribapi.ErrUnknownZone) {
		t.Errorf("drain of an unknown zone: %v", err)
	}
	if _, err := w.loop.Drain(ctx, "", req, "ops"); !errors.Is(err, mcribapi.ErrUnknownZone) {
		t.Errorf("drain of the zone \"\": %v", err)
	}
	if _, err := w.loop.Undrain(ctx, "az-a"); !errors.Is(err, mcribapi.ErrNotDrained) {
		t.Errorf("undrain of a zone not drained: %v", err)
	}
	w.drain("az-a", 100, 10, time.Second)
	w.drain("az-b", 100, 10, time.Second)
	if _, err := w.loop.Drain(ctx, "az-c", req, "ops"); !errors.Is(err, mcribapi.ErrRefused) || !strings.Contains(err.Error(), "no undrained zone") {
		t.Errorf("a drain of the last zone: %v", err)
	}
	// A PUT on a drained zone replaces its settings and keeps its baseline.
	w.pass(mcribapi.OutcomeOK)
	again, err := mcribapi.ParseDrainRequest([]byte(`{"reason": "again", "percent": 50, "step_percent": 20, "step_interval": "1m"}`))
	if err != nil || again.StepInterval != time.Minute || again.StepIntervalText != "1m" {
		t.Fatalf("parsing a drain request: %+v, %v", again, err)
	}
	doc, err := w.loop.Drain(ctx, "az-a", again, "ops2")
	if err != nil {
		t.Fatal(err)
	}
	// The step interval echoes the form the operator gave.
	if e := doc.Zones["az-a"]; e.BaselineSlots != 2 || e.Percent != 50 || e.Reason != "again" || e.By != "ops2" || e.StepInterval != "1m" || e.LastStepAt == nil {
		t.Errorf("entry after a second PUT %+v", e)
	}
	if len(w.loop.Drains().Zones) != 2 {
		t.Errorf("drains %+v", w.loop.Drains())
	}
}

func TestDrainCarriedOnByANewLeader(t *testing.T) {
	w := threeZones(t)
	w.drain("az-b", 100, 50, 20*time.Second)
	w.pass(mcribapi.OutcomeOK)
	w2 := w.sibling() // it reads the step as it is made
	w.serve()
	if w.zoneHeld("az-b") != 1 {
		t.Fatalf("the first step did not move a slot")
	}
	// Another process takes the lock: it reads the pace from KV.
	w.lead.loseLock()
	w2.lead.win("s2")
	w2.clk.Advance(5 * time.Second)
	w2.probe()
	w2.pass(mcribapi.OutcomeOK)
	if m, _ := w.store.stored(); w.zoneHeld("az-b") != 1 || m.AnyIncoming() {
		t.Fatalf("the new leader stepped before the interval")
	}
	if e := w2.entry("az-b"); e == nil || e.BaselineSlots != 2 {
		t.Fatalf("the new leader's drains %+v", w2.loop.Drains())
	}
	w2.clk.Advance(5 * time.Second)
	w2.probe()
	w2.pass(mcribapi.OutcomeOK)
	if m, _ := w.store.stored(); m.Incoming(1) == nil {
		t.Fatalf("the new leader did not carry the drain on")
	}
	w2.serve()
	if w.zoneHeld("az-b") != 0 {
		t.Fatalf("the new leader did not serve its step")
	}
}

func TestCorruptDrainDocument(t *testing.T) {
	w := leadingWorld(t, []string{"a1", "b1"}, "a2", "a3", "b2")
	w.store.mu.Lock()
	w.store.index++
	w.store.drainRaw, w.store.drainIndex = []byte(`{"zones": {"az-b": {"percent": 700}}}`), w.store.index
	w.store.mu.Unlock()
	// Other reconciliation goes on: a dead holder is replaced.
	takeOut("a1")(w)
	w.pass(mcribapi.OutcomeOK)
	w.serve()
	m, _ := w.store.stored()
	if m.Slot(0).ID != "a2" {
		t.Fatalf("slots %v: the dead holder was not replaced under a corrupt drain document", slotIDs(m))
	}
	st := w.loop.Status()
	if !slices.Contains(st.CorruptDocuments, "drain") || !strings.Contains(st.LastError, "drain document in Consul KV is corrupt") || !st.ConsulReachable {
		t.Fatalf("status: corrupt %v, last error %q, consul reachable %v", st.CorruptDocuments, st.LastError, st.ConsulReachable)
	}
	// An operator's drain replaces it.
	w.drain("az-b", 100, 100, time.Second)
	w.pass(mcribapi.OutcomeOK)
	w.serve()
	if w.zoneHeld("az-b") != 0 || slices.Contains(w.loop.Status().CorruptDocuments, "drain") {
		t.Fatalf("after a new drain: zone b holds %d, corrupt %v", w.zoneHeld("az-b"), w.loop.Status().CorruptDocuments)
	}
}

// corruptDrain stores raw as the drain document, as a hand edit would.
func (w *world) corruptDrain(raw string) {
	w.store.mu.Lock()
	defer w.store.mu.Unlock()
	w.store.index++
	w.store.drainRaw, w.store.drainIndex = []byte(raw), w.store.index
}

// A stored entry with a step_interval that does not parse or is out of
// range is corrupt too; GET answers the last good document with why, and
// an operator's change is made to that document, dropping no zone.
func TestCorruptDrainDocumentKeepsTheLastGoodOne(t *testing.T) {
	w := threeZones(t)
	w.drain("az-a", 50, 100, time.Hour)
	w.pass(mcribapi.OutcomeOK)
	for _, raw := range []string{
		`{"zones": {"az-a": {"percent": 50, "step_percent": 100, "step_interval": "soon", "baseline_slots": 2}}}`,
		`{"zones": {"az-a": {"percent": 50, "step_percent": 100, "step_interval": "2h", "baseline_slots": 2}}}`,
		`{"zones": {"az-a": {"percent": 0, "step_percent": 100, "step_interval": "1h", "baseline_slots": 2}}}`,
	} {
		w.corruptDrain(raw)
		w.pass(mcribapi.OutcomeOK)
		doc := w.loop.Drains()
		if !strings.HasPrefix(doc.Corrupt, "the drain document in Consul KV does not parse: ") || !strings.Contains(doc.Corrupt, "consul kv delete mcrib/"+assignPool+"/drain") {
			t.Fatalf("%s: corrupt %q", raw, doc.Corrupt)
		}
		if e := doc.Zones["az-a"]; e == nil || e.Percent != 50 || e.StepInterval != "1h0m0s" {
			t.Fatalf("%s: the last good document was not kept: %+v", raw, e)
		}
		if !slices.Contains(w.loop.Status().CorruptDocuments, "drain") {
			t.Fatalf("%s: not reported corrupt", raw)
		}
	}
	// A drain of another zone keeps az-a's entry.
	doc := w.drain("az-b", 100, 100, time.Second)
	if doc.Corrupt != "" || doc.Zones["az-a"] == nil || doc.Zones["az-b"] == nil {
		t.Fatalf("after a drain over a corrupt document: %+v", doc)
	}
	if d := w.store.storedDrainDoc(t); d.Zones["az-a"] == nil || d.Zones["az-a"].Percent != 50 || d.Zones["az-b"] == nil {
		t.Fatalf("stored after a drain over a corrupt document: %+v", d)
	}
	if b, _ := json.Marshal(w.store.storedDrainDoc(t)); strings.Contains(string(b), "corrupt") {
		t.Fatalf("the corrupt note was stored: %s", b)
	}
}

// A process that never read a good drain document refuses a change over a
// corrupt one: it cannot know which zones that one drains.
func TestChangeOverACorruptDrainDocumentNeverReadRefused(t *testing.T) {
	w := threeZones(t)
	const raw = `{"zones": {"az-a": {"percent": 50, "step_percent": 100, "step_interval": "soon", "baseline_slots": 2}}}`
	w.corruptDrain(raw)
	w2 := w.sibling() // its first read finds the document corrupt
	if doc := w2.loop.Drains(); doc.Corrupt == "" || len(doc.Zones) != 0 {
		t.Fatalf("the new process's drains %+v", doc)
	}
	_, err := w2.loop.Drain(context.Background(), "az-b", mcribapi.Drain{Reason: "r", Percent: 100, StepPercent: 10, StepInterval: time.Second}, "ops")
	if !errors.Is(err, mcribapi.ErrRefused) || !strings.Contains(err.Error(), "consul kv delete mcrib/"+assignPool+"/drain") {
		t.Fatalf("a drain over a corrupt document never read good: %v, want mcribapi.ErrRefused naming the key", err)
	}
	if _, err := w2.loop.Undrain(context.Background(), "az-a"); !errors.Is(err, mcribapi.ErrRefused) {
		t.Fatalf("an undrain over a corrupt document never read good: %v", err)
	}
	w.store.mu.Lock()
	got := string(w.store.drainRaw)
	w.store.mu.Unlock()
	if got != raw {
		t.Fatalf("the corrupt document was overwritten: %s", got)
	}
}

// sibling is another process on the same store, nodes and clock, not
// leading, that has seen the same Consul answer and probes.
func (w *world) sibling() *world {
	w.t.Helper()
	w2 := &world{t: w.t, clk: w.clk, store: w.store, lead: &fakeLeader{store: w.store}, prober: w.prober, metrics: &fakeMetrics{}}
	loop, err := New(Options{
		Pool: assignPool, KVPrefix: "mcrib", NumSlots: w.loop.opts.NumSlots,
		Hold: time.Minute, ProbeInterval: time.Second, FlushAfterUnreachable: 10 * time.Second,
		MaxAbsentFraction: 0.5, MaxReplacementsPerMinute: 10, WarmFor: w.loop.opts.WarmFor,
		Store: w.store, Discovery: &fakeDiscovery{}, Leadership: w2.lead, Prober: w.prober, Clock: w.clk, Metrics: w2.metrics,
	})
	if err != nil {
		w.t.Fatal(err)
	}
	w2.loop = loop
	w2.answer(w.listed...)
	w2.probe()
	w2.pass(mcribapi.OutcomeFollower)
	return w2
}

// Once the zone is drained, the zone alert says so instead of asking for
// the drain again.
func TestZoneAlertOfADrainingZone(t *testing.T) {
	w := leadingWorld(t, []string{"a1", "b1", "b2", "b3", "b4", "c1"}, "a2", "a3", "c2", "c3")
	w.away("b1", "b2", "b3", "b4")
	w.pass(mcribapi.OutcomeOK)
	w.drain("az-b", 100, 25, time.Hour)
	w.pass(mcribapi.OutcomeOK)
	w.serve()
	st := w.loop.Status()
	if w.zoneHeld("az-b") != 3 || !strings.Contains(st.ZoneAlert, "slot holders unreachable; it is being drained already (mcrib drain az-b") || strings.Contains(st.ZoneAlert, "to move its slots off it") {
		t.Fatalf("zone b holds %d; zone alert %q", w.zoneHeld("az-b"), st.ZoneAlert)
	}
}
