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
	"github.com/mcrib/mcrib/mcribapi"
)

// rollWorld3 is a leading world of 3 slots (a1 b1 c1) with a spare in
// each zone (a2 b2 c2), warm moves for 30s, events recorded.
func rollWorld3(t *testing.T) (*world, *eventlog.Log) {
	t.Helper()
	w := leadingWorld(t, []string{"a1", "b1", "c1"}, "a2", "b2", "c2")
	w.prober.mu.Lock()
	w.prober.clk = w.clk
	w.prober.mu.Unlock()
	w.loop.opts.WarmFor = 30 * time.Second
	log := eventlog.NewLog(eventlog.Options{Clock: w.clk})
	w.loop.opts.Events = eventlog.Recorder{Log: log}
	return w, log
}

func (w *world) roll(r mcribapi.Roll) (mcribapi.RollDoc, error) {
	if r.Reason == "" {
		r.Reason = "memcached 1.6.38"
	}
	if r.RestartTimeout == 0 {
		r.RestartTimeout = 10 * time.Minute
	}
	return w.loop.StartRoll(context.Background(), r, "ops")
}

// restart gives id's memcached a new process (pid; 0 keeps its pid, as
// in a container), started a second ago, as a restart does.
func (w *world) restart(id string, pid int64) {
	w.prober.mu.Lock()
	defer w.prober.mu.Unlock()
	if w.prober.stats == nil {
		w.prober.stats = map[string]cachenodes.Stats{}
	}
	if w.prober.born == nil {
		w.prober.born = map[string]time.Time{}
	}
	addr := cacheNode(id).Addr
	st := w.prober.statsLocked(addr)
	if pid != 0 {
		st.PID = pid
	}
	w.prober.stats[addr], w.prober.born[addr] = st, w.clk.Now().Add(-time.Second)
}

// rollNode returns id's entry in the stored roll.
func (w *world) rollNode(id string) mcribapi.RollNode {
	w.t.Helper()
	e := w.store.storedRoll(w.t)
	if e == nil {
		w.t.Fatalf("no roll stored")
	}
	for _, n := range e.Nodes {
		if n.NodeID == id {
			return n
		}
	}
	w.t.Fatalf("node %s not in the stored roll", id)
	return mcribapi.RollNode{}
}

// passUntil steps the clock a second at a time, probing and passing,
// until cond holds, for at most limit.
func (w *world) passUntil(what string, limit time.Duration, cond func() bool) {
	w.t.Helper()
	for left := limit; !cond(); left -= time.Second {
		if left <= 0 {
			w.t.Fatalf("%s: not within %s", what, limit)
		}
		w.after(time.Second)
	}
}

func rollEvents(log *eventlog.Log, kind mcribapi.EventKind) []mcribapi.Event {
	return resizeEvents(log, kind)
}

// TestRollMovesEachHolderWarmThenAwaitsItsRestart: a spare is released at
// once; a holder's slot moves warm to a spare by the spread rule, it is
// released once its warming object is removed, and each restart (a new
// pid, or a reset uptime) lets the next node begin; then the roll is done.
func TestRollMovesEachHolderWarmThenAwaitsItsRestart(t *testing.T) {
	w, log := rollWorld3(t)
	doc, err := w.roll(mcribapi.Roll{Nodes: []string{"c2", "b1"}})
	if err != nil {
		t.Fatalf("StartRoll: %v", err)
	}
	e := doc.Roll
	if e == nil || e.State != mcribapi.RollRolling || len(e.Nodes) != 2 || e.Nodes[0].State != mcribapi.RollReleased || e.Nodes[1].State != mcribapi.RollWaiting || e.By != "ops" {
		t.Fatalf("roll document %+v", e)
	}
	if ev := rollEvents(log, mcribapi.EventRollRelease); len(ev) != 1 || !strings.HasPrefix(ev[0].Reason, "roll: restart c2 now") {
		t.Fatalf("release events %+v", ev)
	}
	if n := w.node("c2"); n.Roll != mcribapi.RollReleased {
		t.Errorf("c2 in the status: roll %q", n.Roll)
	}
	if got := w.loop.readySpares(); got != 2 {
		t.Errorf("%d ready spares while c2 is released, want 2", got)
	}
	// Nothing else moves until c2 restarts.
	w.after(time.Second)
	if n := w.rollNode("b1"); n.State != mcribapi.RollWaiting {
		t.Fatalf("b1 %s before c2 restarted", n.State)
	}
	gen := w.storedGen()
	w.restart("c2", 2)
	w.after(time.Second)
	if n := w.rollNode("c2"); n.State != mcribapi.RollRestarted {
		t.Fatalf("c2 %s after a new pid", n.State)
	}
	b1 := w.rollNode("b1")
	m, _ := w.store.stored()
	if b1.State != mcribapi.RollMoving || b1.Slot == nil || *b1.Slot != 1 || b1.To != "b2" || m.Incoming(1) == nil || m.Incoming(1).NodeID != "b2" {
		t.Fatalf("b1 %+v, slot 1 incoming %+v", b1, m.Incoming(1))
	}
	w.serve()
	m, _ = w.store.stored()
	if m.Slot(1).ID != "b2" || m.Warming(1) == nil || m.Warming(1).NodeID != "b1" || m.Generation() != gen+1 {
		t.Fatalf("after the serve: slots %v, warming %+v, generation %d (was %d)", slotIDs(m), m.Warming(1), m.Generation(), gen)
	}
	w.passUntil("b1 released", time.Minute, func() bool { return w.rollNode("b1").State == mcribapi.RollReleased })
	if m, _ := w.store.stored(); m.Warming(1) != nil {
		t.Fatalf("b1 released while its warming object stays")
	}
	// The same pid, its uptime reset.
	w.after(20 * time.Second)
	if n := w.rollNode("b1"); n.State != mcribapi.RollReleased {
		t.Fatalf("b1 %s before it restarted", n.State)
	}
	w.restart("b1", 0)
	w.after(time.Second)
	if r := w.store.storedRoll(t); r.State != mcribapi.RollDone || r.EndedAt == nil || r.Nodes[1].State != mcribapi.RollRestarted {
		t.Fatalf("roll after the last restart: %+v", r)
	}
	if len(rollEvents(log, mcribapi.EventRollOver)) != 1 || len(rollEvents(log, mcribapi.EventRollRestarted)) != 2 {
		t.Errorf("events %+v", log.Since(0))
	}
	if m, _ := w.store.stored(); m.Generation() != gen+1 {
		t.Errorf("generation %d: only b1's slot moved", m.Generation())
	}
	// A done entry stays an hour.
	w.after(59 * time.Minute)
	if w.store.storedRoll(t) == nil {
		t.Fatalf("the done entry went before an hour")
	}
	w.after(time.Minute)
	if w.store.storedRoll(t) != nil || w.loop.RollDoc().Roll != nil {
		t.Fatalf("the done entry stays after an hour")
	}
}

func (w *world) storedGen() uint64 {
	m, _ := w.store.stored()
	return m.Generation()
}

// readySpares counts the ready spares, as a test reads them.
func (l *Loop) readySpares() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.readySparesLocked(l.clock.Now())
}

// TestRollCarriedOnByANewLeader: a leader that takes over mid-move serves
// the stored announce and goes on from the stored entry; nothing moves
// twice and no restarted node is released again.
func TestRollCarriedOnByANewLeader(t *testing.T) {
	w, _ := rollWorld3(t)
	if _, err := w.roll(mcribapi.Roll{Nodes: []string{"c2", "b1", "a1"}}); err != nil {
		t.Fatal(err)
	}
	w.restart("c2", 2)
	w.after(time.Second) // c2 restarted, b1's slot announced to b2
	gen := w.storedGen()
	w2 := w.sibling()
	w.lead.loseLock()
	w2.lead.win("s2")
	w2.clk.Advance(cachenodes.AnnounceLead + 2*time.Second)
	w2.probe()
	w2.pass(mcribapi.OutcomeOK)
	w2.passUntil("the announce served", 10*time.Second, func() bool { m, _ := w2.store.stored(); return m.Slot(1).ID == "b2" })
	if g := w2.storedGen(); g != gen+1 {
		t.Fatalf("generation %d after the takeover, want %d: one move", g, gen+1)
	}
	w2.passUntil("b1 released", time.Minute, func() bool { return w2.rollNode("b1").State == mcribapi.RollReleased })
	if n := w2.rollNode("c2"); n.State != mcribapi.RollRestarted {
		t.Fatalf("c2 %s under the new leader", n.State)
	}
	w2.restart("b1", 3)
	w2.after(time.Second)
	// a1's slot 0 goes to a2 (its zone's spare), not to b1 or c2 ...
	m, _ := w2.store.stored()
	if n := w2.rollNode("a1"); n.State != mcribapi.RollMoving || m.Incoming(0) == nil || m.Incoming(0).NodeID != "a2" {
		t.Fatalf("a1 %+v, slot 0 incoming %+v", n, m.Incoming(0))
	}
	if slices.Contains(slotIDs(m), "b1") || m.Slot(1).ID != "b2" {
		t.Fatalf("slots %v: b1's slot moved again", slotIDs(m))
	}
}

// TestRollBlockedWhenANodeDoesNotRestart: a released node that does not
// restart within restart_timeout blocks the roll, naming it, and nothing
// else moves; its restart later lets the roll go on.
func TestRollBlockedWhenANodeDoesNotRestart(t *testing.T) {
	w, log := rollWorld3(t)
	if _, err := w.roll(mcribapi.Roll{Nodes: []string{"c2", "a2"}, RestartTimeout: 10 * time.Second, RestartTimeoutText: "10s"}); err != nil {
		t.Fatal(err)
	}
	before, _ := w.store.stored()
	w.after(9 * time.Second)
	if r := w.store.storedRoll(t); r.State != mcribapi.RollRolling {
		t.Fatalf("roll %s before its timeout", r.State)
	}
	w.after(time.Second)
	r := w.store.storedRoll(t)
	if r.State != mcribapi.RollBlocked || !strings.Contains(r.Blocked, "node c2 did not restart within 10s") || r.Nodes[1].State != mcribapi.RollWaiting {
		t.Fatalf("roll at its timeout: %+v", r)
	}
	if ev := rollEvents(log, mcribapi.EventRollBlocked); len(ev) != 1 || !strings.Contains(ev[0].Reason, "c2") {
		t.Fatalf("blocked events %+v", ev)
	}
	w.after(time.Minute)
	if m, _ := w.store.stored(); !m.Equal(before) && m.Generation() != before.Generation() {
		t.Fatalf("the map changed while the roll was blocked")
	}
	if len(rollEvents(log, mcribapi.EventRollBlocked)) != 1 {
		t.Errorf("the blocked event repeats")
	}
	w.restart("c2", 9)
	w.after(time.Second)
	if r := w.store.storedRoll(t); r.State != mcribapi.RollRolling || r.Nodes[0].State != mcribapi.RollRestarted || r.Nodes[1].State != mcribapi.RollReleased {
		t.Fatalf("roll after the late restart: %+v", r)
	}
}

// TestRollPaused: any freeze, a fault of discovery or a drain pauses a
// roll (no new move; a released node is still awaited), and it goes on
// when that ends.
func TestRollPaused(t *testing.T) {
	tests := []struct {
		name      string
		pause     func(w *world)
		unpause   func(w *world)
		sentence  string
		awaitsOld bool
	}{
		{"an operator freeze", func(w *world) {
			_ = w.store.PutFreeze(context.Background(), mcribapi.FreezeDoc{Frozen: true, Reason: "incident", By: "ops"})
		}, func(w *world) { _ = w.store.DeleteFreeze(context.Background()) }, "operator freeze", true},
		{"a fault of discovery", func(w *world) { w.answer("a1") }, func(w *world) { w.answer("a1", "b1", "c1", "a2", "b2", "c2") }, "fault of discovery", true},
		{"a drain", func(w *world) { w.drain("az-a", 100, 100, time.Second) }, func(w *world) {
			if _, err := w.loop.Undrain(context.Background(), "az-a"); err != nil {
				w.t.Fatal(err)
			}
		}, "drained", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, _ := rollWorld3(t)
			if _, err := w.roll(mcribapi.Roll{Nodes: []string{"c2", "b1"}}); err != nil {
				t.Fatal(err)
			}
			tt.pause(w)
			w.after(time.Second)
			w.restart("c2", 2)
			w.after(time.Second)
			r := w.store.storedRoll(t)
			if r.State != mcribapi.RollPaused || !strings.Contains(r.Blocked, tt.sentence) {
				t.Fatalf("roll under %s: %s %q", tt.name, r.State, r.Blocked)
			}
			if r.Nodes[0].State != mcribapi.RollRestarted || r.Nodes[1].State != mcribapi.RollWaiting {
				t.Fatalf("nodes while paused: %+v (c2 awaited and restarted, b1 waiting)", r.Nodes)
			}
			if m, _ := w.store.stored(); m.Incoming(1) != nil {
				t.Fatalf("b1's slot announced while paused")
			}
			tt.unpause(w)
			w.passUntil("the roll goes on", 2*time.Minute, func() bool { return w.rollNode("b1").State != mcribapi.RollWaiting })
			if r := w.store.storedRoll(t); r.State != mcribapi.RollRolling || r.Blocked != "" {
				t.Fatalf("roll after the pause: %s %q", r.State, r.Blocked)
			}
		})
	}
}

// TestRollRefusals: the 404 and 409 of PUT /v1/roll, the 404 of DELETE,
// and a resize refused while a roll runs.
func TestRollRefusals(t *testing.T) {
	w, log := rollWorld3(t)
	ctx := context.Background()
	check := func(what string, err, want error, words string) {
		t.Helper()
		if !errors.Is(err, want) || !strings.Contains(err.Error(), words) {
			t.Errorf("%s: %v, want %v with %q", what, err, want, words)
		}
	}
	_, err := w.loop.StopRoll(ctx, "ops")
	check("stop with none", err, mcribapi.ErrNoRoll, "no roll runs")
	_, err = w.roll(mcribapi.Roll{Nodes: []string{"zz"}})
	check("an unknown node", err, mcribapi.ErrUnknownNode, "zz")
	_, err = w.roll(mcribapi.Roll{Zone: "az-q", HasZone: true})
	check("an unknown zone", err, mcribapi.ErrUnknownZone, "az-q")
	_ = w.store.PutFreeze(ctx, mcribapi.FreezeDoc{Frozen: true, Reason: "incident", By: "ops"})
	_, err = w.roll(mcribapi.Roll{All: true})
	check("frozen", err, mcribapi.ErrRefused, "frozen")
	_ = w.store.DeleteFreeze(ctx)

	doc, err := w.roll(mcribapi.Roll{Zone: "az-b", HasZone: true})
	if err != nil {
		t.Fatal(err)
	}
	if ids := []string{doc.Roll.Nodes[0].NodeID, doc.Roll.Nodes[1].NodeID}; !slices.Equal(ids, []string{"b2", "b1"}) {
		t.Errorf("zone b rolls %v, want the spare first", ids)
	}
	_, err = w.roll(mcribapi.Roll{All: true})
	check("another roll", err, mcribapi.ErrRefused, "another roll runs")
	_, err = w.resize(6, 50, time.Second)
	check("a resize during a roll", err, mcribapi.ErrRefused, "a roll runs")
	stopped, err := w.loop.StopRoll(ctx, "ops")
	if err != nil || stopped.Roll.State != mcribapi.RollStopped || stopped.Roll.EndedAt == nil {
		t.Fatalf("StopRoll: %+v, %v", stopped.Roll, err)
	}
	if len(rollEvents(log, mcribapi.EventRollStopped)) != 1 || len(rollEvents(log, mcribapi.EventRollStarted)) != 1 {
		t.Errorf("events %+v", log.Since(0))
	}
	_, err = w.loop.StopRoll(ctx, "ops")
	check("stop a stopped roll", err, mcribapi.ErrNoRoll, "no roll runs")

	// No ready spare for a holder: every spare but one released by a roll
	// of spares, the last one away.
	w2 := leadingWorld(t, []string{"a1", "b1"}, "c1")
	w2.away("c1")
	w2.pass(mcribapi.OutcomeOK)
	_, err = w2.roll(mcribapi.Roll{Nodes: []string{"a1"}})
	check("no ready spare", err, mcribapi.ErrRefused, "no ready spare")
}
