package controlloop

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/leakcheck"
	"github.com/mcrib/mcrib/leader"
	"github.com/mcrib/mcrib/mcribapi"
)

// owing makes holder id of w unreachable for longer than
// --flush-after-unreachable (10s), the leader passing every second, so that
// it owes a flush, and then answer again.
func (w *world) owing(id string) {
	w.t.Helper()
	w.away(id)
	w.back(12*time.Second, id)
	if got := w.store.storedFlushes(w.t); len(got) != 1 || got[0].NodeID != id {
		w.t.Fatalf("flushes owed %+v, want one for %s", got, id)
	}
}

// TestNothingCopiesFromANodeThatOwesAFlush: a planned move off a slot
// holder that owes a flush is cold (invariants 2 and 9), whatever moves
// it; the owed entry then goes only because the node holds no slot and
// warms none. (A drain step under an automatic freeze used to move it
// warm: the new holder filled from the unflushed node, and the owed flush
// was dropped once the node no longer held a slot.) The move is announced
// cold; a holder flushed while its move is announced (no freeze holds the
// flush back) owes nothing when the move serves, and may warm its slot's
// new holder then: it is empty.
func TestNothingCopiesFromANodeThatOwesAFlush(t *testing.T) {
	for _, tc := range []struct {
		name string
		move func(t *testing.T, w *world)
	}{
		{"a drain step under an automatic freeze", func(t *testing.T, w *world) {
			w.loop.onAnswer(cachenodes.Membership{}) // a fault of discovery
			w.drain("az-b", 100, 50, time.Hour)
			w.pass(mcribapi.OutcomeOK)
			if st := w.loop.Status(); !st.AutoFrozen {
				t.Fatalf("no automatic freeze: %+v", st.AutoFreezeReason)
			}
		}},
		{"a replace", func(t *testing.T, w *world) {
			res, err := w.loop.Replace(context.Background(), "b2", "retire it", "ops")
			if err != nil || res.Warm || res.Slot != 4 {
				t.Fatalf("replace: %+v, %v; want slot 4 moved cold", res, err)
			}
		}},
		{"the maintenance of a node that answers", func(t *testing.T, w *world) {
			var mem cachenodes.Membership
			for _, id := range w.listed {
				inst := cachenodes.Instance{Node: cacheNode(id), Present: true}
				if id == "b2" {
					inst.Present, inst.Maintenance = false, true
				}
				mem.Instances = append(mem.Instances, inst)
			}
			w.loop.onAnswer(mem)
			w.pass(mcribapi.OutcomeOK)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leakcheck.Check(t)
			w := threeZones(t)
			w.loop.opts.WarmFor = 2 * time.Minute
			w.owing("b2")
			tc.move(t, w)
			w.serve()
			m, _ := w.store.stored()
			if m.SlotOf("b2") >= 0 {
				t.Fatalf("slots %v: the slot of a node owing a flush did not move", slotIDs(m))
			}
			if ws := m.Warming(4); ws != nil && w.flushed("b2") == 0 {
				t.Fatalf("slots %v, warming of slot 4 %+v: the slot of a node owing a flush moved warm", slotIDs(m), ws)
			}
			if got := w.store.storedFlushes(t); len(got) != 0 {
				t.Fatalf("flushes owed %+v after b2 left its slot", got)
			}
			if got := w.metrics.moves; len(got) != 1 || (got[0] == mcribapi.MoveWarm && w.flushed("b2") == 0) {
				t.Fatalf("moves %v, want one, cold unless b2 was flushed first", got)
			}
			if n := w.flushed(m.Slot(4).ID); n != 1 {
				t.Fatalf("the new holder %s of slot 4 was flushed %d times, want once", m.Slot(4).ID, n)
			}
		})
	}
}

// flushed returns how many times node id was flushed.
func (w *world) flushed(id string) int { return w.prober.flushCounts()[cacheNode(id).Addr] }

// TestReadySparesByAddress: the memcached of a warm source registered
// again under another service ID is no ready spare: it is never flushed
// into a slot nor listed as a spare while its address warms a slot
// (section 7). (That a node that owes a flush is no ready spare either is
// slotplan's TestSpareOwingAFlushIsNotPlaced.)
func TestReadySparesByAddress(t *testing.T) {
	w := threeZones(t)
	w.loop.opts.WarmFor = 2 * time.Minute
	if res, err := w.loop.Replace(context.Background(), "b2", "retire it", "ops"); err != nil || !res.Warm {
		t.Fatalf("replace: %+v, %v", res, err)
	}
	w.serve()
	// b2's memcached registers again as a0 (in zone a, the lowest ID:
	// the spread rule's first pick), and a holder of zone a dies: its slot
	// needs a spare.
	twin := cacheNode("a0")
	twin.Addr = cacheNode("b2").Addr
	var mem cachenodes.Membership
	for _, id := range w.listed {
		if id != "a1" {
			mem.Instances = append(mem.Instances, cachenodes.Instance{Node: cacheNode(id), Present: true})
		}
	}
	mem.Instances = append(mem.Instances, cachenodes.Instance{Node: twin, Present: true})
	w.loop.onAnswer(mem)
	w.away("a1")
	w.clk.Advance(time.Minute)
	w.probe()
	w.pass(mcribapi.OutcomeOK)
	w.serve()
	m, _ := w.store.stored()
	if m.SlotOf("a0") >= 0 || w.flushed("b2") != 0 || slices.Contains(nodeIDs(m.Spares()), "a0") {
		t.Fatalf("slots %v, spares %v, b2's address flushed %d times: the warm source's memcached under another ID was taken as a spare",
			slotIDs(m), nodeIDs(m.Spares()), w.flushed("b2"))
	}
	if m.SlotOf("a1") >= 0 || m.Warming(4) == nil || m.Warming(4).NodeID != "b2" {
		t.Fatalf("slots %v, warming %+v: want a1 replaced and b2 still warming slot 4", slotIDs(m), m.Warming(4))
	}

}

// TestCorruptFlushesDocumentReadSafely: a flushes document that does not
// parse is reported as corrupt, and read the safe way: every slot holder
// its text names owes a flush (with an unknown base, which the leader
// fills in from its reading once the node answers, before it flushes),
// besides the entries of the last good document this process read; the
// leader's next write replaces it with what it owes.
func TestCorruptFlushesDocumentReadSafely(t *testing.T) {
	w := leadingWorld(t, []string{"a", "b", "c"}, "d")
	w.owing("c") // flushed at once: nothing owed
	w.pass(mcribapi.OutcomeOK)
	if got := w.store.storedFlushes(t); len(got) != 0 {
		t.Fatalf("flushes owed %+v after c answered unfrozen", got)
	}
	// A pass reads the flushes with c's entry gone and a probe reads c
	// since: a reading that counts the flush, a base for the next one.
	w.clk.Advance(time.Second)
	w.pass(mcribapi.OutcomeOK)
	w.clk.Advance(time.Second)
	w.probe()
	if _, err := w.loop.Freeze(context.Background(), "incident", "ops"); err != nil {
		t.Fatal(err)
	}
	w.owing("c") // owed, held back by the freeze
	w.store.mu.Lock()
	w.store.flushesRaw = []byte(`{"flushes": [{"node_id": "a", "cmd_flush": 3,`)
	w.store.index++
	w.store.flushesIndex = w.store.index
	w.store.mu.Unlock()
	w.pass(mcribapi.OutcomeOK)
	st := w.loop.Status()
	if !slices.Contains(st.CorruptDocuments, "flushes") || !strings.Contains(st.LastError, "flushes") {
		t.Fatalf("corrupt documents %v, last error %q: the corrupt flushes document is not reported", st.CorruptDocuments, st.LastError)
	}
	var pending []string
	for _, n := range st.Nodes {
		if n.FlushPending {
			pending = append(pending, n.ID)
		}
	}
	if !slices.Equal(pending, []string{"a", "c"}) {
		t.Fatalf("flush_pending on %v, want a (named in the corrupt text) and c (the last good document)", pending)
	}
	got := w.store.storedFlushes(t)
	if len(got) != 2 || got[0].NodeID != "a" || got[0].PID != 0 || got[1].NodeID != "c" || got[1].PID != 1 {
		t.Fatalf("the leader rewrote the flushes as %+v, want a (unknown base) and c", got)
	}
	if err := w.loop.Unfreeze(context.Background()); err != nil {
		t.Fatal(err)
	}
	// a's entry first gets a base (its pid and cmd_flush as read since it
	// answers), so that its flush shows to the next leader should this
	// pass's write be lost; it is flushed in the next pass.
	w.pass(mcribapi.OutcomeOK)
	got = w.store.storedFlushes(t)
	if len(got) != 1 || got[0].NodeID != "a" || got[0].PID == 0 || w.flushed("a") != 0 || w.flushed("c") != 2 {
		t.Fatalf("after the unfreeze the leader stored %+v and flushed %v, want a's entry with a base, a not flushed yet and c a second time", got, w.prober.flushCounts())
	}
	w.pass(mcribapi.OutcomeOK)
	if !maps.Equal(map[string]int{"a": w.flushed("a"), "c": w.flushed("c")}, map[string]int{"a": 1, "c": 2}) {
		t.Fatalf("flushes after the unfreeze %v, want a once and c a second time", w.prober.flushCounts())
	}
	if got := w.store.storedFlushes(t); len(got) != 0 {
		t.Fatalf("flushes still owed %+v", got)
	}
}

// TestNoFlushDecidedWhileAMassEpisodeIsForming: with
// --flush-after-unreachable 0s the leader decides as soon as a verdict
// turns, but the probes of a pool are spread over the probe interval, so
// in an episode of the observer's fault the first verdict turns while the
// other holders' probes are failing and not yet judged. Nothing is decided
// while more holders than the mass fraction are failing: the episode is
// then taken as the observer's fault, and nobody owes a flush.
func TestNoFlushDecidedWhileAMassEpisodeIsForming(t *testing.T) {
	leakcheck.Check(t)
	w := leadingWorld(t, []string{"a", "b", "c", "d"})
	w.loop.opts.FlushAfterUnreachable, w.loop.tr.cfg.FlushAfter = 0, 0
	ctx := context.Background()
	probe := func(ids ...string) {
		for _, id := range ids {
			w.loop.ProbeNode(ctx, cacheNode(id))
		}
	}
	for _, id := range []string{"a", "b", "c"} {
		w.prober.setDown(cacheNode(id).Addr, true)
	}
	probe("a")
	w.clk.Advance(500 * time.Millisecond)
	probe("b", "c")
	w.clk.Advance(500 * time.Millisecond)
	probe("a") // a's verdict turns; b's and c's probes fail, not yet for an interval
	w.pass(mcribapi.OutcomeOK)
	if w.node("a").Reachable {
		t.Fatal("a is reachable after a whole probe interval of failures")
	}
	w.clk.Advance(500 * time.Millisecond)
	probe("b", "c")
	w.pass(mcribapi.OutcomeOK)
	if st := w.loop.Status(); !st.AutoFrozen {
		t.Fatalf("3 of 4 holders unreachable: no automatic freeze (%q)", st.AutoFreezeReason)
	}
	if got := w.store.storedFlushes(t); len(got) != 0 {
		t.Fatalf("flushes owed %+v in an episode of the observer's fault", got)
	}
	w.back(3*time.Second, "a", "b", "c")
	w.pass(mcribapi.OutcomeOK)
	w.clk.Advance(3 * time.Second)
	w.probe()
	w.pass(mcribapi.OutcomeOK)
	w.wantFlushes(t, map[string]int{})
}

// TestOwnFlushRaisesTheBase: a node this leader flushed (placed, or
// flushed as owed) and that went away before its next stats reading owes
// a flush from the count its flush raised, or the count its own flush left
// would pass for the flush the episode calls for.
func TestOwnFlushRaisesTheBase(t *testing.T) {
	tr := observerTracker(t)
	tr.flushed("a", t0) // cmd_flush 3 → 4 on the node; last read 3
	tr.observeProbe("a", cachenodes.Stats{}, errDown, true, t0.Add(time.Second))
	tr.observeProbe("a", cachenodes.Stats{}, errDown, true, t0.Add(3*time.Second))
	entry := trackerOwes(tr, "a", nil, t0.Add(3*time.Second))
	if entry == nil || entry.CmdFlush != 4 {
		t.Fatalf("owed %+v, want a flush from cmd_flush 4 (3 read, then flushed once)", entry)
	}
	back := cachenodes.Stats{PID: 1, Uptime: 2 * time.Hour, CmdFlush: 4}
	tr.observeProbe("a", back, nil, true, t0.Add(5*time.Second))
	if trackerOwes(tr, "a", entry, t0.Add(5*time.Second)) == nil {
		t.Fatal("the count this leader's own flush left ended the owed flush")
	}
}

// TestNextDecisionInWakesForTheFlushDecision: the leader's next decision
// brought by time alone includes the owed flush of a slot holder whose
// verdict will have held longer than --flush-after-unreachable, so Run (or
// a simulator) passes then, while the node is still unreachable; a
// follower decides nothing and is told nothing.
func TestNextDecisionInWakesForTheFlushDecision(t *testing.T) {
	w := leadingWorld(t, []string{"a", "b"})
	if d, ok := w.loop.NextDecisionIn(); ok {
		t.Fatalf("a decision due in %s with nothing pending", d)
	}
	w.away("a") // unreachable since 0s, found so at 1s
	w.pass(mcribapi.OutcomeOK)
	d, ok := w.loop.NextDecisionIn()
	if want := 9*time.Second + time.Millisecond; !ok || d != want {
		t.Fatalf("next decision in %s (%v), want %s (10s after the episode began)", d, ok, want)
	}
	w.clk.Advance(d)
	w.pass(mcribapi.OutcomeOK)
	if got := w.store.storedFlushes(t); len(got) != 1 {
		t.Fatalf("flushes owed %+v at the moment the verdict held longer than 10s", got)
	}
	if d, ok := w.loop.NextDecisionIn(); ok {
		t.Fatalf("a decision due in %s once the flush is owed", d)
	}
	w.lead.mu.Lock()
	w.lead.lease = leader.Lease{}
	w.lead.mu.Unlock()
	if d, ok := w.loop.NextDecisionIn(); ok {
		t.Fatalf("a follower is due a decision in %s", d)
	}
}

// TestOwedFlushShownWhileItsWriteIsInDoubt: the leader decides that a
// holder owes a flush and writes the entry; the write is carried out but
// its answer is lost, and then the store cannot be read. The leader shows
// the node flush_pending all the same: the decision may well be stored
// (found by the deterministic simulation, where Consul lost its leader
// right after such a write and the leader showed the flush forgotten).
func TestOwedFlushShownWhileItsWriteIsInDoubt(t *testing.T) {
	w := leadingWorld(t, []string{"a", "b", "c"}, "d")
	w.store.mu.Lock()
	w.store.loseAnswers = 1
	w.store.mu.Unlock()
	w.away("c")
	// Passes every second until the leader decides (after
	// --flush-after-unreachable, 10s) and writes; that answer is lost.
	for range 15 {
		if got := w.store.storedFlushes(t); len(got) > 0 {
			break
		}
		w.clk.Advance(time.Second)
		w.probe()
		_, _ = w.loop.Reconcile(context.Background())
	}
	if got := w.store.storedFlushes(t); len(got) != 1 || got[0].NodeID != "c" || w.store.loseAnswers != 0 {
		t.Fatalf("stored flushes %+v, want c's entry, written with its answer lost", got)
	}
	w.store.mu.Lock()
	w.store.failReads = 3
	w.store.mu.Unlock()
	for range 3 {
		w.clk.Advance(time.Second)
		if res, _ := w.loop.Reconcile(context.Background()); res.Outcome != mcribapi.OutcomeError {
			t.Fatalf("a pass with the store unreadable: %s", res.Outcome)
		}
		if !w.node("c").FlushPending {
			t.Fatal("c is not shown flush_pending while its stored entry cannot be read back")
		}
	}
}

// TestAnUnreachabilityBetweenTwoPassesOwesItsFlush: the probes turn
// verdicts between passes, so a slot holder can be unreachable by the
// pool's verdict and answer again before any pass looked. With
// --flush-after-unreachable 0s it owes a flush all the same: the next
// pass stores the decision, and the one after carries it out. (A holder
// paused for a second, its return seen before the pass, used to keep its
// contents.)
func TestAnUnreachabilityBetweenTwoPassesOwesItsFlush(t *testing.T) {
	leakcheck.Check(t)
	w := leadingWorld(t, []string{"a", "b", "c", "d"})
	w.loop.tr.cfg.FlushAfter = 0
	w.away("c") // unreachable by the verdict; no pass
	if w.node("c").Reachable {
		t.Fatal("c still reachable after a probe interval of failures")
	}
	w.prober.setDown(cacheNode("c").Addr, false)
	w.probe() // back before any pass
	w.pass(mcribapi.OutcomeOK)
	if got := w.store.storedFlushes(t); len(got) != 1 || got[0].NodeID != "c" {
		t.Fatalf("flushes owed %+v after c's episode ended between two passes, want one for c", got)
	}
	if n := w.flushed("c"); n != 0 {
		t.Fatalf("c flushed %d times by the pass that decided it, want 0: the decision is stored first", n)
	}
	w.pass(mcribapi.OutcomeOK)
	if n := w.flushed("c"); n != 1 {
		t.Fatalf("c flushed %d times by the next pass, want once", n)
	}
	if got := w.store.storedFlushes(t); len(got) != 0 {
		t.Fatalf("flushes owed %+v after c's flush", got)
	}
	w.pass(mcribapi.OutcomeOK)
	if n := w.flushed("c"); n != 1 {
		t.Fatalf("c flushed %d times, want once: the episode was decided twice", n)
	}
}

// TestSplitWarmingEndsInThePassThatDecidesTheFlush (finding 6 of issue
// 26): slot s's holder warms its split twin's new holder; it stops
// answering for a probe interval and answers again between two passes
// (--flush-after-unreachable 0s): the next pass decides that it owes a
// flush and, in the same write, ends the warming (ended_at), so that no
// client copies from it one pass longer. Its slot s stays its own: the
// end of the warming flushes nothing.
func TestSplitWarmingEndsInThePassThatDecidesTheFlush(t *testing.T) {
	w := leadingWorld(t, []string{"a1", "b1"}, "a2", "b2")
	w.loop.opts.WarmFor = time.Hour
	w.loop.opts.FlushAfterUnreachable, w.loop.tr.cfg.FlushAfter = 0, 0
	if _, err := w.resize(4, 100, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	w.after(10 * time.Second)
	w.serve()
	m, _ := w.store.stored()
	if ws := m.Warming(2); ws == nil || ws.NodeID != "a1" || ws.Ended() {
		t.Fatalf("after the split: %v, warming of slot 2 %+v", slotIDs(m), ws)
	}
	// a1 blips between two passes.
	w.prober.setDown(cacheNode("a1").Addr, true)
	w.probe()
	w.clk.Advance(time.Second)
	w.probe()
	w.prober.setDown(cacheNode("a1").Addr, false)
	w.probe()
	w.pass(mcribapi.OutcomeOK)
	if got := w.store.storedFlushes(t); len(got) != 1 || got[0].NodeID != "a1" {
		t.Fatalf("flushes owed %+v, want a1's", got)
	}
	m2, _ := w.store.stored()
	if ws := m2.Warming(2); ws == nil || !ws.EndedAt.Equal(w.clk.Now()) {
		t.Fatalf("in the pass that decided a1's flush: warming of slot 2 %+v, want it ended now", ws)
	}
	if m2.Slot(0).ID != "a1" || w.flushed("a1") != 0 {
		t.Fatalf("slots %v, a1 flushed %d times: the end of the split's warming moved or flushed slot 0's holder", slotIDs(m2), w.flushed("a1"))
	}
}
