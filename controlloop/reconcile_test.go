package controlloop

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/hitrate"
	"github.com/mcrib/mcrib/internal/leakcheck"
	"github.com/mcrib/mcrib/leader"
	"github.com/mcrib/mcrib/mcribapi"
)

// world is a Loop over fakes: a store, a leader lock, memcached nodes and
// a clock, all moved by hand. Nothing runs in the background: a scenario
// hands the loop Consul answers and probe rounds and calls Reconcile.
type world struct {
	t       *testing.T
	clk     *clock.Fake
	store   *fakeStore
	lead    *fakeLeader
	prober  *fakeProber
	metrics *fakeMetrics
	loop    *Loop
	listed  []string // the IDs of the last answer
}

// newWorld builds a loop of numSlots slots, hold 1m, flush after 10s of
// unreachability, probe interval 1s.
func newWorld(t *testing.T, numSlots int) *world {
	t.Helper()
	store := &fakeStore{}
	w := &world{
		t: t, clk: clock.NewFake(assignNow), store: store, lead: &fakeLeader{store: store},
		prober: &fakeProber{}, metrics: &fakeMetrics{},
	}
	loop, err := New(Options{
		Pool: assignPool, KVPrefix: "mcrib", NumSlots: numSlots,
		Hold: time.Minute, ProbeInterval: time.Second, FlushAfterUnreachable: 10 * time.Second,
		MaxAbsentFraction: 0.5, MaxReplacementsPerMinute: 10,
		Store: store, Discovery: &fakeDiscovery{}, Leadership: w.lead, Prober: w.prober, Clock: w.clk, Metrics: w.metrics,
	})
	if err != nil {
		t.Fatal(err)
	}
	w.loop = loop
	return w
}

// seed stores a map of generation gen, as another leader wrote it.
func (w *world) seed(gen uint64, slots, spares []string) *cachenodes.SlotMap {
	m := slotMapOf(w.t, gen, slots, spares)
	w.store.mu.Lock()
	defer w.store.mu.Unlock()
	w.store.putLocked(m)
	w.store.leaderID = "other"
	return m
}

// answer hands the loop a Consul answer listing ids, all present.
func (w *world) answer(ids ...string) {
	w.listed = ids
	var m cachenodes.Membership
	for _, id := range ids {
		m.Instances = append(m.Instances, cachenodes.Instance{Node: cacheNode(id), Present: true})
	}
	w.loop.onAnswer(m)
}

// probe runs one probe round.
func (w *world) probe() { w.loop.probeRound(context.Background()) }

// wantStored fails unless the store holds a map of generation gen with
// slots held by slots.
func (w *world) wantStored(t *testing.T, gen uint64, slots []string, writes int) {
	t.Helper()
	m, n := w.store.stored()
	if m == nil || m.Generation() != gen || !slices.Equal(slotIDs(m), slots) || n != writes {
		got := "none"
		if m != nil {
			got = strings.Join(slotIDs(m), ",")
		}
		t.Fatalf("store: map %s (gen %v) after %d writes; want gen %d slots %v after %d writes", got, genOf(m), n, gen, slots, writes)
	}
	if cur := w.loop.SlotMap(); cur == nil || !cur.Equal(m) {
		t.Fatalf("the loop's map %v is not the stored one", cur)
	}
}

func genOf(m *cachenodes.SlotMap) any {
	if m == nil {
		return nil
	}
	return m.Generation()
}

// wantFlushes fails unless the flushes done so far are want (by node ID).
func (w *world) wantFlushes(t *testing.T, want map[string]int) {
	t.Helper()
	got := map[string]int{}
	for addr, n := range w.prober.flushCounts() {
		got[strings.TrimSuffix(addr, ".cache:11211")] = n
	}
	if !maps.Equal(got, want) {
		t.Fatalf("flushes %v, want %v", got, want)
	}
}

func (w *world) nodeState(t *testing.T, id string) mcribapi.NodeState {
	t.Helper()
	for _, n := range w.loop.Status().Nodes {
		if n.ID == id {
			return n.State
		}
	}
	t.Fatalf("node %s not in the status", id)
	return ""
}

// loopStep is one step of a scenario: do changes the world, then a pass
// runs unless want is "", and check looks at the result.
type loopStep struct {
	what  string
	do    func(w *world)
	want  mcribapi.Outcome // the pass's outcome
	check func(t *testing.T, w *world)
}

// runSteps builds a world of numSlots slots and plays steps on it.
func runSteps(t *testing.T, numSlots int, steps []loopStep) {
	t.Helper()
	w := newWorld(t, numSlots)
	for i, st := range steps {
		if st.do != nil {
			st.do(w)
		}
		if st.want != "" {
			res, err := w.loop.Reconcile(context.Background())
			if res.Outcome != st.want {
				t.Fatalf("step %d (%s): outcome %q (%v), want %q", i, st.what, res.Outcome, err, st.want)
			}
			failed := st.want == mcribapi.OutcomeError || st.want == mcribapi.OutcomeConflict
			if (err != nil) != failed {
				t.Fatalf("step %d (%s): error %v with outcome %q", i, st.what, err, res.Outcome)
			}
		}
		if st.check != nil {
			t.Run(st.what, func(t *testing.T) { st.check(t, w) })
		}
	}
}

// storeOwed stores the flushes document with entries, as a leader wrote
// it (none: the document is removed).
func (w *world) storeOwed(entries ...OwedFlush) {
	w.store.mu.Lock()
	defer w.store.mu.Unlock()
	w.store.putFlushesLocked(flushesDoc(entries))
}

// takeOut makes node id leave Consul and stop answering, then lets the
// hold pass: it is due for replacement.
func takeOut(id string) func(w *world) {
	return func(w *world) {
		w.prober.setDown(cacheNode(id).Addr, true)
		w.probe()
		w.answer(slices.DeleteFunc(slices.Clone(w.listed), func(s string) bool { return s == id })...)
		w.clk.Advance(61 * time.Second)
		w.probe()
	}
}

func TestReconcileScenarios(t *testing.T) {
	leakcheck.Check(t)
	tests := []struct {
		name     string
		numSlots int
		steps    []loopStep
	}{
		{
			name: "a follower adopts the stored map and touches nothing", numSlots: 2,
			steps: []loopStep{
				{what: "a map of another leader", do: func(w *world) {
					w.seed(3, []string{"a", "b"}, []string{"c"})
					w.answer("a", "b", "c")
					w.probe()
				}, want: mcribapi.OutcomeFollower, check: func(t *testing.T, w *world) {
					w.wantStored(t, 3, []string{"a", "b"}, 0)
					st := w.loop.Status()
					if st.Leader || st.LeaderID != "other" || st.Generation != 3 {
						t.Errorf("status: leader %v, leader id %q, generation %d", st.Leader, st.LeaderID, st.Generation)
					}
				}},
				{what: "a slot holder due for replacement is left to the leader", do: takeOut("b"), want: mcribapi.OutcomeFollower,
					check: func(t *testing.T, w *world) {
						w.wantStored(t, 3, []string{"a", "b"}, 0)
						w.wantFlushes(t, map[string]int{})
					}},
			},
		},
		{
			name: "a leader without a map or an answer waits", numSlots: 2,
			steps: []loopStep{
				{what: "leading alone", do: func(w *world) { w.lead.win("s1") }, want: mcribapi.OutcomeWaiting,
					check: func(t *testing.T, w *world) {
						if m, n := w.store.stored(); m != nil || n != 0 {
							t.Errorf("stored %v after %d writes", m, n)
						}
					}},
				{what: "the first answer fills the pool, unflushed", do: func(w *world) {
					w.answer("a", "b", "c")
					w.probe()
				}, want: mcribapi.OutcomeOK, check: func(t *testing.T, w *world) {
					w.wantStored(t, 1, []string{"a", "b"}, 1)
					w.wantFlushes(t, map[string]int{})
				}},
			},
		},
		{
			name: "a follower takes over: it writes and flushes nothing already handled", numSlots: 3,
			steps: []loopStep{
				{what: "following", do: func(w *world) {
					w.seed(3, []string{"a", "b", "d"}, []string{"c"})
					w.answer("a", "b", "c", "d")
					w.probe()
				}, want: mcribapi.OutcomeFollower},
				{what: "a slot holder is unreachable; the leader decides it owes a flush", do: func(w *world) {
					w.prober.setDown(cacheNode("a").Addr, true)
					w.probe()
					w.clk.Advance(time.Second) // failures over a whole probe interval
					w.probe()
					w.clk.Advance(11 * time.Second)
					w.storeOwed(OwedFlush{NodeID: "a", Addr: cacheNode("a").Addr, PID: 1, Since: w.clk.Now().Add(-11 * time.Second), Reason: "r"})
				}, want: mcribapi.OutcomeFollower},
				{what: "it answers: the stored decision shows", do: func(w *world) {
					w.clk.Advance(10 * time.Second)
					w.prober.setDown(cacheNode("a").Addr, false)
					w.probe()
				}, want: mcribapi.OutcomeFollower, check: func(t *testing.T, w *world) {
					w.wantFlushes(t, map[string]int{})
					if s := w.nodeState(t, "a"); s != mcribapi.NodeFlushing || !w.node("a").FlushPending {
						t.Errorf("node a is %s (flush_pending %v), want %s", s, w.node("a").FlushPending, mcribapi.NodeFlushing)
					}
				}},
				{what: "the leader flushed it and removed the entry", do: func(w *world) {
					w.prober.flushedElsewhere(cacheNode("a").Addr)
					w.storeOwed()
					w.probe()
				}, want: mcribapi.OutcomeFollower, check: func(t *testing.T, w *world) {
					if s := w.nodeState(t, "a"); s != mcribapi.NodeServing {
						t.Errorf("node a is %s, want %s", s, mcribapi.NodeServing)
					}
				}},
				{what: "another slot holder is due", do: takeOut("b"), want: mcribapi.OutcomeFollower, check: func(t *testing.T, w *world) {
					w.wantStored(t, 3, []string{"a", "b", "d"}, 0)
					w.wantFlushes(t, map[string]int{})
				}},
				{what: "leading now: c is flushed and announced to b's slot", do: func(w *world) { w.lead.win("s1") }, want: mcribapi.OutcomeOK, check: func(t *testing.T, w *world) {
					w.wantStored(t, 3, []string{"a", "b", "d"}, 1)
					if m, _ := w.store.stored(); m.Incoming(1) == nil || m.Incoming(1).NodeID != "c" || m.Revision() != 1 {
						t.Errorf("slot 1's incoming %+v (revision %d), want c", m.Incoming(1), m.Revision())
					}
					w.wantFlushes(t, map[string]int{"c": 1})
					if st := w.loop.Status(); !st.Leader || st.LeaderID != "me" {
						t.Errorf("status: leader %v, leader id %q", st.Leader, st.LeaderID)
					}
				}},
				{what: "the next pass writes nothing", want: mcribapi.OutcomeOK, check: func(t *testing.T, w *world) {
					w.wantStored(t, 3, []string{"a", "b", "d"}, 1)
					w.wantFlushes(t, map[string]int{"c": 1})
				}},
				{what: "12s after the announce, c serves, unflushed", do: func(w *world) {
					w.clk.Advance(cachenodes.AnnounceLead)
					w.probe()
				}, want: mcribapi.OutcomeOK, check: func(t *testing.T, w *world) {
					w.wantStored(t, 4, []string{"a", "c", "d"}, 2)
					w.wantFlushes(t, map[string]int{"c": 1})
					if got := w.metrics.replacements; !slices.Equal(got, []mcribapi.EvictionReason{mcribapi.EvictionHoldExpired}) {
						t.Errorf("replacements %v", got)
					}
				}},
			},
		},
		{
			name: "the leader puts back the map it knows when the store lost its keys", numSlots: 2,
			steps: []loopStep{
				{what: "leading over a stored map", do: func(w *world) {
					w.seed(5, []string{"a", "b"}, []string{"c"})
					w.lead.win("s1")
					w.answer("a", "b", "c")
					w.probe()
				}, want: mcribapi.OutcomeOK, check: func(t *testing.T, w *world) {
					w.wantStored(t, 5, []string{"a", "b"}, 0)
				}},
				{what: "the keys are gone", do: func(w *world) { w.store.lose() }, want: mcribapi.OutcomeOK, check: func(t *testing.T, w *world) {
					w.wantStored(t, 5, []string{"a", "b"}, 1)
					w.wantFlushes(t, map[string]int{})
				}},
				{what: "and stay put", want: mcribapi.OutcomeOK, check: func(t *testing.T, w *world) {
					w.wantStored(t, 5, []string{"a", "b"}, 1)
				}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runSteps(t, tt.numSlots, tt.steps) })
	}
}

// TestReconcileConflict changes the store between a pass's read and its
// write: the write fails, nothing changes, the outcome is "conflict"; only
// a lost lock makes the loop step down.
func TestReconcileConflict(t *testing.T) {
	leakcheck.Check(t)
	tests := []struct {
		name          string
		change        func(s *fakeStore)
		wantStepDowns int
		// next is the outcome of the pass after, and the map it leaves
		// once its announce served (12s later).
		next     mcribapi.Outcome
		nextGen  uint64
		nextSlot []string
	}{
		{
			name:   "another writer rewrote the map",
			change: func(s *fakeStore) { s.putLocked(s.slotMap) },
			next:   mcribapi.OutcomeOK, nextGen: 6, nextSlot: []string{"a", "c"},
		},
		{
			name: "a freeze landed",
			change: func(s *fakeStore) {
				s.index++
				s.freeze, s.freezeIndex = &mcribapi.FreezeDoc{Frozen: true, Reason: "maintenance"}, s.index
			},
			next: mcribapi.OutcomeOK, nextGen: 5, nextSlot: []string{"a", "b"},
		},
		{
			name:          "the lock was lost",
			change:        func(s *fakeStore) { s.holder = leader.NewLease("mcrib/p/leader", "other") },
			wantStepDowns: 1,
			next:          mcribapi.OutcomeFollower, nextGen: 5, nextSlot: []string{"a", "b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runSteps(t, 2, []loopStep{
				{what: "leading", do: func(w *world) {
					w.seed(5, []string{"a", "b"}, []string{"c"})
					w.lead.win("s1")
					w.answer("a", "b", "c")
					w.probe()
				}, want: mcribapi.OutcomeOK},
				{what: "the write fails", do: func(w *world) {
					takeOut("b")(w)
					w.store.beforeWrite = func(s *fakeStore) {
						s.beforeWrite = nil
						tt.change(s)
					}
				}, want: mcribapi.OutcomeConflict, check: func(t *testing.T, w *world) {
					w.wantStored(t, 5, []string{"a", "b"}, 0)
					if len(w.metrics.replacements) != 0 {
						t.Errorf("replacements counted: %v", w.metrics.replacements)
					}
					if st := w.loop.Status(); !strings.Contains(st.LastError, "check-and-set failed") {
						t.Errorf("last error %q", st.LastError)
					}
					leading, stepDowns := w.lead.counts()
					if stepDowns != tt.wantStepDowns || leading != (tt.wantStepDowns == 0) {
						t.Errorf("leading %v after %d step-downs, want %d", leading, stepDowns, tt.wantStepDowns)
					}
				}},
				{what: "the next pass", want: tt.next},
				{what: "12s later", do: func(w *world) {
					w.clk.Advance(cachenodes.AnnounceLead)
					w.probe()
				}, want: tt.next, check: func(t *testing.T, w *world) {
					m, _ := w.store.stored()
					if m.Generation() != tt.nextGen || !slices.Equal(slotIDs(m), tt.nextSlot) {
						t.Errorf("stored gen %d slots %v, want gen %d slots %v", m.Generation(), slotIDs(m), tt.nextGen, tt.nextSlot)
					}
					if w.loop.Status().LastError != "" {
						t.Errorf("last error %q after a good pass", w.loop.Status().LastError)
					}
				}},
			})
		})
	}
}

// TestHitCounters checks that the boot limiter's counters come from the
// loop's own probes: one stats read per node and round, the slot holders
// only, the vacant slot counted unserved and the unread holders apart.
func TestHitCounters(t *testing.T) {
	leakcheck.Check(t)
	w := newWorld(t, 3)
	w.seed(1, []string{"a", "b", ""}, []string{"c"})
	w.answer("a", "b", "c")
	if _, err := w.loop.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, slots := w.loop.HitCounters(context.Background()); len(got) != 0 || slots != (hitrate.Slots{Total: 3, Unserved: 1, Unreadable: 2}) {
		t.Fatalf("before any probe: %v, %+v; want none, 3 slots, 1 unserved (vacant), 2 unreadable", got, slots)
	}
	w.prober.setCounters(cacheNode("a").Addr, 90, 10)
	w.prober.setCounters(cacheNode("c").Addr, 5, 5)
	w.prober.setDown(cacheNode("b").Addr, true)
	w.probe()
	got, slots := w.loop.HitCounters(context.Background())
	want := map[string]hitrate.Counters{"a": {Hits: 90, Misses: 10, PID: 1, Uptime: time.Hour}}
	if !maps.Equal(got, want) || slots != (hitrate.Slots{Total: 3, Unserved: 1, Unreadable: 1}) {
		t.Fatalf("counters %v, %+v; want %v, 1 unserved (vacant), 1 unreadable (b, reachable by the verdict so far)", got, slots, want)
	}
	reads := w.prober.readCounts()
	for _, id := range []string{"a", "b", "c"} {
		if reads[cacheNode(id).Addr] != 1 {
			t.Errorf("node %s read %d times in one round", id, reads[cacheNode(id).Addr])
		}
	}
	w.prober.setCounters(cacheNode("a").Addr, 95, 11)
	w.prober.setDown(cacheNode("b").Addr, false)
	w.probe()
	got, slots = w.loop.HitCounters(context.Background())
	want = map[string]hitrate.Counters{
		"a": {Hits: 95, Misses: 11, PID: 1, Uptime: time.Hour},
		"b": {PID: 1, Uptime: time.Hour},
	}
	if !maps.Equal(got, want) || slots != (hitrate.Slots{Total: 3, Unserved: 1}) {
		t.Fatalf("after the next round: %v, %+v; want %v, 1 unserved, none unreadable", got, slots, want)
	}
}

// serve lets the announces of the last pass serve: the clock moves on by
// the announce's lead, the nodes are probed and a pass runs (docs/api.md,
// "Announce, then serve").
func (w *world) serve() {
	w.t.Helper()
	w.after(cachenodes.AnnounceLead)
}
