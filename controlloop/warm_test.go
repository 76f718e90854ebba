package controlloop

import (
	"context"
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

func TestWarmDrainStep(t *testing.T) {
	leakcheck.Check(t)
	w := threeZones(t)
	w.loop.opts.WarmFor = 2 * time.Minute
	w.drain("az-b", 100, 50, time.Hour)
	_, writes := w.store.stored()
	w.pass(mcribapi.OutcomeOK)
	// The announce: a3 flushed and written as slot 4's incoming node,
	// serving 12s later, warm until --warm-for after that.
	announced := w.clk.Now()
	m, n := w.store.stored()
	ni := m.Incoming(4)
	if n != writes+1 || m.Generation() != 3 || m.Slot(4).ID != "b2" || ni == nil || ni.NodeID != "a3" ||
		!ni.ServesAt.Equal(announced.Add(cachenodes.AnnounceLead)) || !ni.Until.Equal(ni.ServesAt.Add(2*time.Minute)) {
		t.Fatalf("after the announce: %v gen %d after %d writes, incoming %+v", slotIDs(m), m.Generation(), n-writes, ni)
	}
	if slices.Contains(nodeIDs(m.Spares()), "a3") {
		t.Fatalf("the incoming node is listed as a spare")
	}
	w.wantFlushes(t, map[string]int{"a3": 1})
	// 12s later one write: the new holder and the warming together, until
	// as announced; a3 is not flushed again.
	w.serve()
	m, n = w.store.stored()
	if n != writes+2 || m.Generation() != 4 || m.Slot(4).ID != "a3" || m.AnyIncoming() {
		t.Fatalf("after the step: %v gen %d after %d writes", slotIDs(m), m.Generation(), n-writes)
	}
	ws := m.Warming(4)
	if ws == nil || ws.NodeID != "b2" || ws.Addr != cacheNode("b2").Addr || !ws.Until.Equal(ni.Until) {
		t.Fatalf("slot 4 warming %+v, want b2 until %v", ws, ni.Until)
	}
	if slices.Contains(nodeIDs(m.Spares()), "b2") {
		t.Fatalf("the warm source is listed as a spare")
	}
	if n := w.node("b2"); n.State != mcribapi.NodeWarming || n.Warming == nil || *n.Warming != 4 || !n.Drained || n.Slot != nil {
		t.Fatalf("node b2: %+v", n)
	}
	// The status says until when b2 is a warm source, as the map does.
	if n := w.node("b2"); n.WarmingUntil == nil || !n.WarmingUntil.Equal(ws.Until) {
		t.Fatalf("node b2's warming_until %v, want the map's until %v", n.WarmingUntil, ws.Until)
	}
	w.wantFlushes(t, map[string]int{"a3": 1})
	if got := w.metrics.moves; !slices.Equal(got, []mcribapi.MoveKind{mcribapi.MoveWarm}) {
		t.Fatalf("moves %v", got)
	}

	// Within until, nothing changes.
	w.after(time.Minute)
	if m2, _ := w.store.stored(); m2.Warming(4) == nil {
		t.Fatalf("the warming ended early")
	}
	// At until clients stop reading b2, and write it 12s longer: the
	// warming object stays (no ended_at: it ended at its until), b2 still
	// a warm source and no spare.
	w.after(time.Minute)
	m2, _ := w.store.stored()
	if m2.Warming(4) == nil || m2.Warming(4).Ended() || slices.Contains(nodeIDs(m2.Spares()), "b2") || w.node("b2").State != mcribapi.NodeWarming {
		t.Fatalf("at until: warming %+v, spares %v, b2 %s", m2.Warming(4), nodeIDs(m2.Spares()), w.node("b2").State)
	}
	// 12s after until: the warming goes, the generation stays, b2 is a
	// spare.
	w.after(cachenodes.WarmWriteGrace)
	m2, _ = w.store.stored()
	if m2.AnyWarming() || m2.Generation() != m.Generation() || !slices.Contains(nodeIDs(m2.Spares()), "b2") {
		t.Fatalf("after warm-for: warming %v, gen %d (was %d), spares %v", m2.AnyWarming(), m2.Generation(), m.Generation(), nodeIDs(m2.Spares()))
	}
	if n := w.node("b2"); n.State != mcribapi.NodeSpare || n.Warming != nil || n.WarmingUntil != nil || !n.Drained {
		t.Fatalf("node b2 after warming: %+v", n)
	}
	w.wantFlushes(t, map[string]int{"a3": 1})
}

func TestWarmingEndsWhenTheOldHolderStopsAnswering(t *testing.T) {
	w := threeZones(t)
	w.loop.opts.WarmFor = 2 * time.Minute
	log := eventlog.NewLog(eventlog.Options{Clock: w.clk})
	w.loop.opts.Events = eventlog.Recorder{Log: log}
	res, err := w.loop.Replace(context.Background(), "b2", "retire it", "ops")
	servesAt := w.clk.Now().Add(cachenodes.AnnounceLead)
	if err != nil || res != (mcribapi.ReplaceAnswer{Slot: 4, From: "b2", To: "b3", Warm: true, ServesAt: servesAt, SparesLeft: 5}) {
		t.Fatalf("replace: %+v, %v", res, err)
	}
	w.serve()
	m, _ := w.store.stored()
	if ws := m.Warming(4); ws == nil || ws.NodeID != "b2" {
		t.Fatalf("no warming after a warm replace: %v", ws)
	}
	w.away("b2")
	w.pass(mcribapi.OutcomeOK)
	endedAt := w.clk.Now()
	// The warming ends: written with ended_at, the object kept for the
	// writes (12s), b2 still warming and no spare.
	m2, _ := w.store.stored()
	if ws := m2.Warming(4); ws == nil || !ws.EndedAt.Equal(endedAt) || m2.Generation() != m.Generation() || m2.Revision() != m.Revision()+1 ||
		slices.Contains(nodeIDs(m2.Spares()), "b2") {
		t.Fatalf("after b2 stopped answering: warming %+v, gen %d rev %d (was %d, %d), spares %v", ws, m2.Generation(), m2.Revision(), m.Generation(), m.Revision(), nodeIDs(m2.Spares()))
	}
	if n := w.node("b2"); n.State != mcribapi.NodeWarming || !n.WarmingEnded || n.WarmingUntil == nil || !n.WarmingUntil.Equal(endedAt) {
		t.Fatalf("node b2 %+v", n)
	}
	var ends []string
	for _, e := range log.Since(0) {
		if e.Kind == mcribapi.EventWarmEnd {
			ends = append(ends, e.Node+": "+e.Reason)
		}
	}
	if len(ends) != 1 || !strings.HasPrefix(ends[0], "b2: node b2 no longer warms slot 4 (its warm source b2 stopped answering); clients still send it the slot's writes until") {
		t.Errorf("warm end events %q, want one naming b2 and why", ends)
	}
	// Never removed sooner than 12s after ended_at.
	w.after(cachenodes.WarmWriteGrace - time.Second)
	if m3, _ := w.store.stored(); m3.Warming(4) == nil {
		t.Fatalf("the ended warming was removed before ended_at + 12s")
	}
	w.after(time.Second)
	if m3, _ := w.store.stored(); m3.AnyWarming() || slices.Contains(nodeIDs(m3.Spares()), "b2") {
		t.Fatalf("12s after ended_at: warming %v, spares %v", m3.AnyWarming(), nodeIDs(m3.Spares()))
	}
	if n := w.node("b2"); n.State != mcribapi.NodeDown {
		t.Fatalf("node b2 %+v", n)
	}
	if got := w.metrics.replacements; !slices.Equal(got, []mcribapi.EvictionReason{mcribapi.EvictionReplace}) {
		t.Errorf("replacements %v", got)
	}
	// The ceiling counts the replace.
	if rem := w.loop.ceiling.Remaining(w.clk.Now()); rem != 9 {
		t.Errorf("ceiling: %d remaining of 10 after one replace", rem)
	}
}

func TestWarmForZeroMovesCold(t *testing.T) {
	w := threeZones(t)
	res, err := w.loop.Replace(context.Background(), "b2", "retire it", "ops")
	if err != nil || res.Warm || res.To != "b3" {
		t.Fatalf("replace: %+v, %v", res, err)
	}
	if m, _ := w.store.stored(); m.Incoming(4) == nil || !m.Incoming(4).Until.Equal(m.Incoming(4).ServesAt) {
		t.Fatalf("a cold announce: incoming %+v, want its until at its serves_at", m.Incoming(4))
	}
	w.serve()
	m, _ := w.store.stored()
	if m.AnyWarming() || m.Slot(4).ID != "b3" || !slices.Contains(nodeIDs(m.Spares()), "b2") {
		t.Fatalf("a cold move: warming %v, slots %v, spares %v", m.AnyWarming(), slotIDs(m), nodeIDs(m.Spares()))
	}
	if got := w.metrics.moves; !slices.Equal(got, []mcribapi.MoveKind{mcribapi.MoveCold}) {
		t.Fatalf("moves %v", got)
	}
}

func TestMaintenanceOfAnAnsweringNodeMovesWarm(t *testing.T) {
	w := threeZones(t)
	w.loop.opts.WarmFor = time.Minute
	var mem cachenodes.Membership
	for _, id := range w.listed {
		inst := cachenodes.Instance{Node: cacheNode(id), Present: true}
		if id == "c1" {
			inst.Present, inst.Maintenance = false, true
		}
		mem.Instances = append(mem.Instances, inst)
	}
	w.loop.onAnswer(mem)
	w.probe()
	w.pass(mcribapi.OutcomeOK)
	// Counted against the ceiling at the announce.
	if rem := w.loop.ceiling.Remaining(w.clk.Now()); rem != 9 {
		t.Errorf("ceiling: %d remaining of 10 after a maintenance move's announce", rem)
	}
	w.serve()
	m, _ := w.store.stored()
	if m.Slot(2).ID != "c3" || m.Warming(2) == nil || m.Warming(2).NodeID != "c1" {
		t.Fatalf("maintenance of c1: slots %v, warming %+v", slotIDs(m), m.Warming(2))
	}
	if got := w.metrics.replacements; !slices.Equal(got, []mcribapi.EvictionReason{mcribapi.EvictionMaintenance}) {
		t.Errorf("replacements %v", got)
	}
	// A planned move: the boot limiter's input leaves the slot out, and
	// the warm source's hits count with its holder's.
	got, _ := w.loop.HitCounters(context.Background())
	if !got["c3"].Planned || got["c1"].WarmSourceOf != "c3" || !got["c1"].Planned || got["a1"].Planned {
		t.Errorf("hit counters after the maintenance move: %+v; want c3 Planned, c1 its warm source", got)
	}
	w.after(time.Minute + cachenodes.WarmWriteGrace)
	m2, _ := w.store.stored()
	if m2.AnyWarming() || slices.Contains(nodeIDs(m2.Spares()), "c1") {
		t.Fatalf("after the warming: warming %v, spares %v (a node in maintenance leaves the pool)", m2.AnyWarming(), nodeIDs(m2.Spares()))
	}
}

func TestReplaceErrors(t *testing.T) {
	ctx := context.Background()
	w := threeZones(t)
	if _, err := w.loop.Replace(ctx, "zz", "r", "ops"); !errors.Is(err, mcribapi.ErrUnknownNode) {
		t.Errorf("unknown node: %v", err)
	}
	if _, err := w.loop.Replace(ctx, "a3", "r", "ops"); !errors.Is(err, mcribapi.ErrRefused) || !strings.Contains(err.Error(), "holds no slot") {
		t.Errorf("a spare: %v", err)
	}
	w.store.PutFreeze(ctx, mcribapi.FreezeDoc{Frozen: true, Reason: "rollout"})
	if _, err := w.loop.Replace(ctx, "a1", "r", "ops"); !errors.Is(err, mcribapi.ErrRefused) || !strings.Contains(err.Error(), "frozen") {
		t.Errorf("frozen: %v", err)
	}
	w.store.DeleteFreeze(ctx)
	w.loop.ceiling.PerMinute, w.loop.opts.MaxReplacementsPerMinute = 1, 1
	if _, err := w.loop.Replace(ctx, "a1", "r", "ops"); err != nil {
		t.Fatalf("first replace: %v", err)
	}
	if _, err := w.loop.Replace(ctx, "b1", "r", "ops"); !errors.Is(err, mcribapi.ErrRefused) || !strings.Contains(err.Error(), "ceiling of 1 a minute") {
		t.Errorf("beyond the ceiling: %v", err)
	}
	// No spare at all.
	w3 := leadingWorld(t, []string{"a1", "b1"})
	if _, err := w3.loop.Replace(ctx, "a1", "r", "ops"); !errors.Is(err, mcribapi.ErrRefused) || !strings.Contains(err.Error(), "no spare can take slot 0") {
		t.Errorf("no spare: %v", err)
	}
	if m, n := w3.store.stored(); m.Slot(0).ID != "a1" || n != 0 {
		t.Errorf("a refused replace changed the map: %v after %d writes", slotIDs(m), n)
	}
	// A follower forwards.
	w2 := w.sibling()
	if _, err := w2.loop.Replace(ctx, "a1", "r", "ops"); !errors.Is(err, mcribapi.ErrNotLeader) {
		t.Errorf("a follower's replace: %v", err)
	}
}

// With no spare to warm, a node in maintenance that still answers keeps
// its slot and its contents (invariant 9): the move is held back, counted
// in replacements_blocked, and takes no budget; it is carried out warm once
// a spare comes.
func TestMaintenanceWithoutSpareWaitsWarm(t *testing.T) {
	w := threeZones(t)
	w.loop.opts.WarmFor = time.Minute
	before, _ := w.store.stored()
	slot := before.SlotOf("c1")
	membership := func(withSpares bool) cachenodes.Membership {
		var mem cachenodes.Membership
		for _, id := range w.listed {
			if before.SlotOf(id) < 0 && !withSpares {
				continue // every spare leaves discovery
			}
			inst := cachenodes.Instance{Node: cacheNode(id), Present: true}
			if id == "c1" {
				inst.Present, inst.Maintenance = false, true
			}
			mem.Instances = append(mem.Instances, inst)
		}
		return mem
	}
	w.loop.onAnswer(membership(false))
	w.probe()
	w.pass(mcribapi.OutcomeOK)
	m, _ := w.store.stored()
	if m.Slot(slot).ID != "c1" || m.AnyWarming() || m.Generation() != before.Generation() {
		t.Fatalf("maintenance of c1 without a spare: slots %v (gen %d, was %d), warming %v; want c1 to keep slot %d",
			slotIDs(m), m.Generation(), before.Generation(), m.AnyWarming(), slot)
	}
	if got := w.loop.Status().ReplacementsBlocked; got != 1 {
		t.Errorf("replacements_blocked %d, want 1", got)
	}
	if got := w.metrics.replacements; len(got) != 0 {
		t.Errorf("replacements %v, want none", got)
	}
	if left := w.loop.ceiling.Remaining(w.clk.Now()); left != w.loop.opts.MaxReplacementsPerMinute {
		t.Errorf("budget left %d, want all %d: a held-back move takes none", left, w.loop.opts.MaxReplacementsPerMinute)
	}
	w.wantFlushes(t, map[string]int{})

	// A spare comes: the move is announced, and carried out warm.
	w.clk.Advance(time.Second)
	w.loop.onAnswer(membership(true))
	w.probe()
	w.pass(mcribapi.OutcomeOK)
	w.serve()
	m2, _ := w.store.stored()
	if m2.Slot(slot).ID != "c3" || m2.Warming(slot) == nil || m2.Warming(slot).NodeID != "c1" {
		t.Fatalf("once a spare came: slots %v, warming %+v; want c3 warmed from c1", slotIDs(m2), m2.Warming(slot))
	}
	if got := w.loop.Status().ReplacementsBlocked; got != 0 {
		t.Errorf("replacements_blocked %d after the move, want 0", got)
	}
	if got := w.metrics.moves; !slices.Equal(got, []mcribapi.MoveKind{mcribapi.MoveWarm}) {
		t.Errorf("moves %v", got)
	}
}

// A slot that warms is not announced again while its warming object is in
// the map: a replace of its new holder ends the warming (ended_at) and is
// refused, saying from when the slot can be replaced; a drain step passes
// it over and says so in blocked until the object is removed, 12s after
// ended_at; then the step moves it.
func TestWarmingSlotIsNotMovedAgain(t *testing.T) {
	w := threeZones(t)
	w.loop.opts.WarmFor = 2 * time.Minute
	if _, err := w.loop.Replace(context.Background(), "b2", "retire it", "ops"); err != nil {
		t.Fatal(err)
	}
	w.serve()

	_, err := w.loop.Replace(context.Background(), "b3", "again", "ops")
	endedAt := w.clk.Now()
	want := "slot 4 was warming from b2: its warming is ended now, and the slot can be replaced once its warming object is removed, at " +
		endedAt.Add(cachenodes.WarmWriteGrace).UTC().Format(time.RFC3339) + "; replace again then"
	if !errors.Is(err, mcribapi.ErrRefused) || !strings.Contains(err.Error(), want) {
		t.Fatalf("replace of a warming slot's holder: %v, want mcribapi.ErrRefused with %q", err, want)
	}
	if m, _ := w.store.stored(); m.Warming(4) == nil || !m.Warming(4).EndedAt.Equal(endedAt) {
		t.Fatalf("the replace did not end the warming: %+v", m.Warming(4))
	}

	w.drain("az-b", 100, 100, time.Second)
	w.pass(mcribapi.OutcomeOK)
	m, _ := w.store.stored()
	if m.Slot(4).ID != "b3" || m.Warming(4) == nil || m.Incoming(4) != nil || m.Incoming(1) == nil {
		t.Fatalf("drain step over a warming slot: slots %v, warming 4 %+v, incoming 1 %+v; want slot 1 announced and slot 4 kept", slotIDs(m), m.Warming(4), m.Incoming(1))
	}
	if e := w.entry("az-b"); e.Blocked != "slot 4 is still warming; it moves when its warming object is removed" {
		t.Fatalf("blocked %q", e.Blocked)
	}

	// The warming object goes 12s after ended_at: the next step announces
	// slot 4, which serves 12s later.
	for w.clk.Now().Before(endedAt.Add(cachenodes.WarmWriteGrace + 2*cachenodes.AnnounceLead)) {
		w.after(time.Second)
	}
	if got := w.zoneHeld("az-b"); got != 0 {
		t.Fatalf("zone b holds %d slots after the warming ended, want 0 (slots %v)", got, slotIDs(m))
	}
	if e := w.entry("az-b"); e.Blocked != "" {
		t.Fatalf("blocked %q after the step", e.Blocked)
	}
}

// TestMaintenanceOfAWarmingHolderEndsTheWarmingFirst: the maintenance of a
// warming slot's new holder ends the warming (ended_at); the move waits
// (replacements_blocked) until the warming object is removed, 12s later,
// and then is announced and moves warm from the node in maintenance.
func TestMaintenanceOfAWarmingHolderEndsTheWarmingFirst(t *testing.T) {
	w := threeZones(t)
	w.loop.opts.WarmFor = time.Minute
	if _, err := w.loop.Replace(context.Background(), "b2", "retire it", "ops"); err != nil {
		t.Fatal(err)
	}
	w.serve()
	var mem cachenodes.Membership
	for _, id := range w.listed {
		inst := cachenodes.Instance{Node: cacheNode(id), Present: true}
		if id == "b3" {
			inst.Present, inst.Maintenance = false, true
		}
		mem.Instances = append(mem.Instances, inst)
	}
	w.loop.onAnswer(mem)
	w.probe()
	w.pass(mcribapi.OutcomeOK)
	endedAt := w.clk.Now()
	m, _ := w.store.stored()
	if m.Slot(4).ID != "b3" || m.Warming(4) == nil || !m.Warming(4).EndedAt.Equal(endedAt) || m.Incoming(4) != nil {
		t.Fatalf("maintenance of a warming holder: slots %v, warming %+v; want b3's warming ended, kept for its writes", slotIDs(m), m.Warming(4))
	}
	if got := w.loop.Status().ReplacementsBlocked; got != 1 {
		t.Errorf("replacements_blocked %d, want 1", got)
	}
	w.after(cachenodes.WarmWriteGrace)
	m2, _ := w.store.stored()
	if m2.Warming(4) != nil || m2.Incoming(4) == nil || m2.Slot(4).ID != "b3" {
		t.Fatalf("12s after ended_at: slots %v, warming %+v, incoming %+v; want the object gone and the move announced", slotIDs(m2), m2.Warming(4), m2.Incoming(4))
	}
	w.serve()
	m3, _ := w.store.stored()
	if m3.Slot(4).ID == "b3" || m3.Warming(4) == nil || m3.Warming(4).NodeID != "b3" {
		t.Fatalf("after the announce: slots %v, warming %+v; want b3 moved warm", slotIDs(m3), m3.Warming(4))
	}
}
