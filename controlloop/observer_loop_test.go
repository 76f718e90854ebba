package controlloop

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/internal/leakcheck"
	"github.com/mcrib/mcrib/leader"
	"github.com/mcrib/mcrib/mcribapi"
)

// leadingWorld is a world whose loop leads over slots held by holders,
// every node answering, one pass done.
func leadingWorld(t *testing.T, holders []string, spares ...string) *world {
	t.Helper()
	w := newWorld(t, len(holders))
	w.seed(3, holders, spares)
	w.lead.win("s1")
	w.answer(append(append([]string{}, holders...), spares...)...)
	w.probe()
	w.pass(mcribapi.OutcomeOK)
	return w
}

func (w *world) pass(want mcribapi.Outcome) {
	w.t.Helper()
	res, err := w.loop.Reconcile(context.Background())
	if res.Outcome != want {
		w.t.Fatalf("pass: outcome %q (%v), want %q", res.Outcome, err, want)
	}
}

// away makes ids stop answering for a whole probe interval and more.
func (w *world) away(ids ...string) {
	for _, id := range ids {
		w.prober.setDown(cacheNode(id).Addr, true)
	}
	w.probe()
	w.clk.Advance(time.Second)
	w.probe()
}

// back makes ids answer again after d, during which the loop probes and
// passes every probe interval (1s), as Run does: the leader decides the
// flushes owed while the nodes are away (invariant 2).
func (w *world) back(d time.Duration, ids ...string) {
	w.t.Helper()
	for left := d; left > 0; left -= time.Second {
		w.clk.Advance(min(left, time.Second))
		w.probe()
		_, _ = w.loop.Reconcile(context.Background())
	}
	for _, id := range ids {
		w.prober.setDown(cacheNode(id).Addr, false)
	}
	w.probe()
}

func (w *world) node(id string) mcribapi.NodeStatus {
	w.t.Helper()
	for _, n := range w.loop.Status().Nodes {
		if n.ID == id {
			return n
		}
	}
	w.t.Fatalf("node %s not in the status", id)
	return mcribapi.NodeStatus{}
}

func TestFreezeHoldsBackTheFlushOfAReturningNode(t *testing.T) {
	leakcheck.Check(t)
	w := leadingWorld(t, []string{"a", "b"})
	w.away("a")
	w.back(20*time.Second, "a")
	if _, err := w.loop.Freeze(context.Background(), "incident", "ops"); err != nil {
		t.Fatal(err)
	}
	w.pass(mcribapi.OutcomeOK)
	w.wantFlushes(t, map[string]int{})
	if n := w.node("a"); !n.FlushPending || n.State != mcribapi.NodeFlushing {
		t.Fatalf("node a while frozen: flush_pending %v, state %s; want a pending flush", n.FlushPending, n.State)
	}
	if err := w.loop.Unfreeze(context.Background()); err != nil {
		t.Fatal(err)
	}
	w.pass(mcribapi.OutcomeOK)
	w.wantFlushes(t, map[string]int{"a": 1})
	if n := w.node("a"); n.FlushPending || n.State != mcribapi.NodeServing {
		t.Fatalf("node a after the flush: flush_pending %v, state %s", n.FlushPending, n.State)
	}
}

func TestNoFlushWithoutConfirmingTheLock(t *testing.T) {
	leakcheck.Check(t)
	w := leadingWorld(t, []string{"a", "b"})
	w.away("a")
	w.back(20*time.Second, "a")
	// Another process took the lock while this one was cut off.
	w.store.mu.Lock()
	w.store.holder = leader.NewLease("mcrib/p/leader", "s2")
	w.store.mu.Unlock()
	w.pass(mcribapi.OutcomeFollower)
	w.wantFlushes(t, map[string]int{})
	if w.lead.stepDowns != 1 {
		t.Fatalf("%d step-downs, want 1", w.lead.stepDowns)
	}
}

func TestReplicasVoteInTheLoop(t *testing.T) {
	leakcheck.Check(t)
	w := leadingWorld(t, []string{"a", "b"})
	w.loop.opts.ReplicaID = "me:7070"
	w.lead.mu.Lock()
	w.lead.member = leader.NewLease("", "s-me")
	w.lead.mu.Unlock()
	w.store.mu.Lock()
	w.store.votes = map[string]Vote{"r2:7070": {Session: "s-r2"}, "r3:7070": {Session: "s-r3"}}
	w.store.mu.Unlock()

	w.away("a")
	w.pass(mcribapi.OutcomeOK)
	if !w.node("a").Reachable {
		t.Fatal("a is unreachable though two of three replicas reach it")
	}
	w.store.mu.Lock()
	mine := w.store.votes["me:7070"]
	w.store.mu.Unlock()
	if _, ok := mine.Unreachable["a"]; !ok || mine.Session != "s-me" {
		t.Fatalf("published vote %+v, want a listed under session s-me", mine)
	}
	if got := w.loop.Replicas(); got != 3 {
		t.Fatalf("Replicas() = %d, want 3", got)
	}
	if !w.loop.ReplicaSession("s-r2") || w.loop.ReplicaSession("s-xx") || w.loop.ReplicaSession("") {
		t.Fatal("ReplicaSession does not tell live replicas' sessions from others")
	}
	// The partition heals: nothing to flush, since the pool never lost a.
	w.back(20*time.Second, "a")
	w.pass(mcribapi.OutcomeOK)
	w.wantFlushes(t, map[string]int{})

	// Now a second replica agrees: a is unreachable for the pool.
	w.away("a")
	w.store.mu.Lock()
	w.store.votes["r2:7070"] = Vote{Session: "s-r2", Unreachable: map[string]time.Time{"a": w.clk.Now()}}
	w.store.mu.Unlock()
	w.pass(mcribapi.OutcomeOK)
	if w.node("a").Reachable {
		t.Fatal("a is reachable though two of three replicas cannot reach it")
	}
}

func TestMassUnreachableFreezesAndFlushesNothing(t *testing.T) {
	leakcheck.Check(t)
	w := leadingWorld(t, []string{"a", "b", "c", "d"}, "e")
	w.away("a", "b", "c")
	w.pass(mcribapi.OutcomeOK)
	st := w.loop.Status()
	if !st.AutoFrozen || !strings.Contains(st.AutoFreezeReason, "unreachable") {
		t.Fatalf("3 of 4 holders unreachable: auto_frozen %v, reason %q", st.AutoFrozen, st.AutoFreezeReason)
	}
	w.back(20*time.Second, "a", "b", "c")
	w.pass(mcribapi.OutcomeOK)
	w.clk.Advance(3 * time.Second)
	w.probe()
	w.pass(mcribapi.OutcomeOK)
	w.wantFlushes(t, map[string]int{})
	if st := w.loop.Status(); st.AutoFrozen {
		t.Fatalf("the automatic freeze outlived the episode: %q", st.AutoFreezeReason)
	}
	w.wantStored(t, 3, []string{"a", "b", "c", "d"}, 0)
}

// TestCeilingHoldsAcrossATakeover: the replacements a leader made are
// stored with the map, and a new leader counts them against
// --max-replacements-per-minute (found by the soak: three replacements in
// 32 s with a ceiling of 2 across a kill -9 of the leader).
func TestCeilingHoldsAcrossATakeover(t *testing.T) {
	leakcheck.Check(t)
	w := leadingWorld(t, []string{"a", "b", "c", "d"}, "e", "f", "g")
	w.loop.opts.MaxReplacementsPerMinute = 2
	w.loop.ceiling.PerMinute = 2
	takeOut("a")(w)
	w.pass(mcribapi.OutcomeOK)
	w.store.mu.Lock()
	stored := len(w.store.replacements)
	w.store.mu.Unlock()
	if stored != 1 {
		t.Fatalf("%d replacement times stored with the map, want 1", stored)
	}

	// A new process takes over, with a fresh ceiling of its own.
	next := newWorld(t, 4)
	next.store, next.clk = w.store, w.clk
	next.lead.store = w.store
	loop, err := New(Options{
		Pool: assignPool, KVPrefix: "mcrib", NumSlots: 4, Hold: 10 * time.Second, ProbeInterval: time.Second,
		FlushAfterUnreachable: 10 * time.Second, MaxAbsentFraction: 0.9, MaxReplacementsPerMinute: 2,
		Store: w.store, Discovery: &fakeDiscovery{}, Leadership: next.lead, Prober: w.prober, Clock: w.clk, Metrics: next.metrics,
	})
	if err != nil {
		t.Fatal(err)
	}
	next.loop = loop
	next.lead.win("s2")
	next.answer("b", "c", "d", "e", "f", "g")
	next.probe()
	next.pass(mcribapi.OutcomeOK)
	// b and c die at once; 12 s after the first replacement only one more
	// fits (the new leader's hold is 10 s).
	for _, id := range []string{"b", "c"} {
		w.prober.setDown(cacheNode(id).Addr, true)
	}
	next.probe()
	next.answer("d", "e", "f", "g")
	w.clk.Advance(time.Second)
	next.probe()
	w.clk.Advance(11 * time.Second)
	next.probe()
	next.pass(mcribapi.OutcomeOK)
	m, _ := w.store.stored()
	replaced := 0
	for i, id := range []string{"e", "b", "c", "d"} {
		if m.Slot(i).ID != id {
			replaced++
		}
	}
	if replaced != 1 || next.loop.Status().ReplacementsBlocked != 1 {
		t.Fatalf("slots %v, %d blocked: the new leader replaced %d holders within the minute of the old leader's replacement, want 1 (ceiling 2)", slotIDs(m), next.loop.Status().ReplacementsBlocked, replaced)
	}
}
