package controlloop

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/eventlog"
	"github.com/mcrib/mcrib/internal/leakcheck"
	"github.com/mcrib/mcrib/mcribapi"
)

// The lifecycle of an announce (docs/api.md, "Announce, then serve") on
// the fake world: a replace of b2 (slot 4 of threeZones) announces b3.

// replaceB2 announces b2's replace and returns the answer.
func replaceB2(t *testing.T, w *world) mcribapi.ReplaceAnswer {
	t.Helper()
	res, err := w.loop.Replace(context.Background(), "b2", "retire it", "ops")
	if err != nil || res.To != "b3" || res.Slot != 4 {
		t.Fatalf("replace: %+v, %v", res, err)
	}
	return res
}

// TestAnnounceStatusAndEvents: an announce shows in the status (the
// incoming node's state incoming, its slot and serves_at; the holder's
// incoming_node), in the events (slot move announced, naming from, to and
// serves_at, then the move's own events when it serves) and in the
// replace's answer (serves_at); the incoming node is no spare and no
// ready spare.
func TestAnnounceStatusAndEvents(t *testing.T) {
	leakcheck.Check(t)
	w := threeZones(t)
	w.loop.opts.WarmFor = time.Minute
	log := eventlog.NewLog(eventlog.Options{Clock: w.clk})
	w.loop.opts.Events = eventlog.Recorder{Log: log}
	ready := w.loop.Status().Capacity.SparesReady
	res := replaceB2(t, w)
	at := w.clk.Now().Add(cachenodes.AnnounceLead)
	if !res.ServesAt.Equal(at) || !res.Warm {
		t.Fatalf("replace answer %+v, want serves_at %v and warm", res, at)
	}
	n := w.node("b3")
	if n.State != mcribapi.NodeIncoming || n.Incoming == nil || *n.Incoming != 4 || n.ServesAt == nil || !n.ServesAt.Equal(at) || n.Slot != nil {
		t.Fatalf("node b3 %+v, want incoming to slot 4, serving at %v", n, at)
	}
	if n := w.node("b2"); n.State != mcribapi.NodeServing || n.IncomingNode != "b3" {
		t.Fatalf("node b2 %+v, want serving with b3 incoming", n)
	}
	if got := w.loop.Status().Capacity.SparesReady; got != ready-1 {
		t.Errorf("ready spares %d, want %d: an incoming node is none", got, ready-1)
	}
	if m, _ := w.store.stored(); slices.Contains(nodeIDs(m.Spares()), "b3") {
		t.Errorf("b3 listed as a spare while incoming")
	}
	var announced []mcribapi.Event
	for _, e := range log.Since(0) {
		if e.Kind == mcribapi.EventSlotMoveAnnounced {
			announced = append(announced, e)
		}
	}
	if len(announced) != 1 || announced[0].From != "b2" || announced[0].To != "b3" || announced[0].ServesAt == nil || !announced[0].ServesAt.Equal(at) ||
		announced[0].Slot == nil || *announced[0].Slot != 4 || announced[0].Who != "ops" || !strings.Contains(announced[0].Reason, "retire it") {
		t.Fatalf("announce events %+v", announced)
	}
	if slices.ContainsFunc(log.Since(0), func(e mcribapi.Event) bool { return e.Kind == mcribapi.EventReplace }) {
		t.Fatalf("the replace event was told before the move serves")
	}
	w.serve()
	if n := w.node("b3"); n.State != mcribapi.NodeServing || n.Slot == nil || *n.Slot != 4 || n.Incoming != nil {
		t.Fatalf("node b3 after the serve %+v", n)
	}
	kinds := map[mcribapi.EventKind]int{}
	for _, e := range log.Since(0) {
		kinds[e.Kind]++
	}
	if kinds[mcribapi.EventReplace] != 1 || kinds[mcribapi.EventWarmStart] != 1 {
		t.Errorf("events after the serve %v, want one replace and one warm start", kinds)
	}
	w.wantFlushes(t, map[string]int{"b3": 1}) // at the announce, not again at the move
}

// TestAnnounceDrops: an announce is dropped, nothing moving, when its node
// stops answering, restarts, owes a flush or leaves Consul, and under a
// freeze (an operator's, or the automatic one of a fault of discovery);
// a replace dropped gives its count back to the ceiling, in memory and in
// the stored times.
func TestAnnounceDrops(t *testing.T) {
	for _, tc := range []struct {
		name string
		do   func(w *world)
	}{
		{name: "it stops answering", do: func(w *world) { w.away("b3") }},
		{name: "its memcached restarts", do: func(w *world) {
			w.prober.mu.Lock()
			w.prober.stats[cacheNode("b3").Addr] = cachenodes.Stats{PID: 2, Uptime: time.Second}
			w.prober.mu.Unlock()
			w.probe()
		}},
		{name: "it owes a flush", do: func(w *world) {
			w.storeOwed(OwedFlush{NodeID: "b3", Addr: cacheNode("b3").Addr, PID: 1, Since: w.clk.Now(), Reason: "r"})
		}},
		{name: "it leaves Consul", do: func(w *world) {
			w.answer(slices.DeleteFunc(slices.Clone(w.listed), func(s string) bool { return s == "b3" })...)
		}},
		{name: "a fault of discovery (its automatic freeze)", do: func(w *world) { w.loop.onAnswer(cachenodes.Membership{}) }},
		{name: "an operator freeze", do: func(w *world) {
			w.store.PutFreeze(context.Background(), mcribapi.FreezeDoc{Frozen: true, Reason: "rollout"})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := threeZones(t)
			w.loop.opts.WarmFor = time.Minute
			log := eventlog.NewLog(eventlog.Options{Clock: w.clk})
			w.loop.opts.Events = eventlog.Recorder{Log: log}
			replaceB2(t, w)
			if rem := w.loop.ceiling.Remaining(w.clk.Now()); rem != 9 {
				t.Fatalf("ceiling: %d of 10 left after the announce, want 9", rem)
			}
			w.clk.Advance(time.Second)
			tc.do(w)
			w.pass(mcribapi.OutcomeOK)
			m, _ := w.store.stored()
			if m.Incoming(4) != nil || m.Slot(4).ID != "b2" || m.Generation() != 3 {
				t.Fatalf("after the drop: slots %v, incoming %+v, generation %d", slotIDs(m), m.Incoming(4), m.Generation())
			}
			if rem := w.loop.ceiling.Remaining(w.clk.Now()); rem != 10 {
				t.Errorf("ceiling: %d of 10 left after the drop, want the count given back", rem)
			}
			w.store.mu.Lock()
			stored := len(w.store.replacements)
			w.store.mu.Unlock()
			if stored != 0 {
				t.Errorf("%d replacement times stored after the drop, want none", stored)
			}
			var dropped []mcribapi.Event
			for _, e := range log.Since(0) {
				if e.Kind == mcribapi.EventSlotMoveDropped {
					dropped = append(dropped, e)
				}
			}
			if len(dropped) != 1 || dropped[0].To != "b3" || dropped[0].From != "b2" {
				t.Errorf("drop events %+v", dropped)
			}
			// Nothing moves when its serves_at comes.
			w.serve()
			if m, _ := w.store.stored(); m.Slot(4).ID != "b2" {
				t.Errorf("slots %v: the dropped move was carried out", slotIDs(m))
			}
		})
	}
}

// TestAnnounceSurvivesAFaultOfDiscovery: an empty Consul answer is a fault
// of discovery, not the incoming node leaving Consul: a drain step's
// announce (which an automatic freeze does not stop) still serves.
func TestAnnounceSurvivesAFaultOfDiscovery(t *testing.T) {
	w := threeZones(t)
	w.drain("az-b", 100, 50, time.Hour)
	w.pass(mcribapi.OutcomeOK)
	to := w.mustIncoming(t, 4)
	w.loop.onAnswer(cachenodes.Membership{})
	w.pass(mcribapi.OutcomeOK)
	if st := w.loop.Status(); !st.DiscoveryFault {
		t.Fatalf("no fault of discovery")
	}
	w.serve()
	if m, _ := w.store.stored(); m.Slot(4).ID != to {
		t.Fatalf("slots %v: the drain step did not serve during the fault", slotIDs(m))
	}
}

// TestReplacementAfterTheHoldServesAsTheHoldEnds: a dead holder's
// replacement is announced 12 s before its hold (1m) ends and counted
// against the ceiling then; it serves as the hold ends, so the dead
// node's keys wait no longer. With a hold under 12 s it is announced at
// once and serves 12 s later. The holder answering again drops it.
func TestReplacementAfterTheHoldServesAsTheHoldEnds(t *testing.T) {
	w := threeZones(t)
	// Probes fail from 0s and count from 1s; absent from 1s: the hold
	// counts from 1s and ends at 61s.
	w.prober.setDown(cacheNode("c1").Addr, true)
	w.probe()
	w.clk.Advance(time.Second)
	w.answer(slices.DeleteFunc(slices.Clone(w.listed), func(s string) bool { return s == "c1" })...)
	w.probe()
	start := w.clk.Now()
	var announcedAt, servedAt time.Duration
	for range 70 {
		w.after(time.Second)
		m, _ := w.store.stored()
		at := w.clk.Now().Sub(start)
		if announcedAt == 0 && m.Incoming(2) != nil {
			announcedAt = at
			if rem := w.loop.ceiling.Remaining(w.clk.Now()); rem != 9 {
				t.Errorf("ceiling: %d of 10 left at the announce, want 9", rem)
			}
		}
		if servedAt == 0 && m.Slot(2).ID != "c1" {
			servedAt = at
		}
	}
	if announcedAt != 48*time.Second || servedAt != 60*time.Second {
		t.Fatalf("announced at %v, served at %v; want 48s and 60s (the hold's end)", announcedAt, servedAt)
	}

	// A hold of 5s: announced as the episode begins, served 12s later.
	w2 := threeZones(t)
	w2.loop.tr.cfg.Hold.Duration = 5 * time.Second
	w2.prober.setDown(cacheNode("c1").Addr, true)
	w2.probe()
	w2.clk.Advance(time.Second)
	w2.answer(slices.DeleteFunc(slices.Clone(w2.listed), func(s string) bool { return s == "c1" })...)
	w2.probe()
	w2.pass(mcribapi.OutcomeOK)
	if m, _ := w2.store.stored(); m.Incoming(2) == nil {
		t.Fatalf("with a hold of 5s the replacement is not announced at once")
	}
	w2.serve()
	if m, _ := w2.store.stored(); m.Slot(2).ID == "c1" {
		t.Fatalf("with a hold of 5s, not served 12s after the announce")
	}

	// The holder answers again before the hold ends: dropped.
	w3 := threeZones(t)
	w3.prober.setDown(cacheNode("c1").Addr, true)
	w3.probe()
	w3.clk.Advance(time.Second)
	w3.answer(slices.DeleteFunc(slices.Clone(w3.listed), func(s string) bool { return s == "c1" })...)
	w3.probe()
	for range 50 {
		w3.after(time.Second)
	}
	if m, _ := w3.store.stored(); m.Incoming(2) == nil {
		t.Fatalf("not announced 50s into the hold")
	}
	w3.prober.setDown(cacheNode("c1").Addr, false)
	w3.after(time.Second)
	if m, _ := w3.store.stored(); m.Incoming(2) != nil || m.Slot(2).ID != "c1" {
		t.Fatalf("the holder answers again: slots %v, incoming %+v; want the announce dropped", slotIDs(m), m.Incoming(2))
	}
	if rem := w3.loop.ceiling.Remaining(w3.clk.Now()); rem != 10 {
		t.Errorf("ceiling: %d of 10 left, want its count given back", rem)
	}
}

// TestNewLeaderCarriesOnAnAnnounce: a follower that takes over an announce
// it did not write serves it once it has its own verdict on both nodes,
// and no earlier than serves_at + 1 s on its clock (placed as it placed
// the map); a drain step announced by the old leader serves warm.
func TestNewLeaderCarriesOnAnAnnounce(t *testing.T) {
	w := threeZones(t)
	w.loop.opts.WarmFor = time.Minute
	w.drain("az-b", 100, 50, time.Hour)
	w2 := w.sibling()
	w.pass(mcribapi.OutcomeOK)
	m, _ := w.store.stored()
	ni := m.Incoming(4)
	if ni == nil {
		t.Fatalf("no announce of the drain step: %v", slotIDs(m))
	}
	w2.pass(mcribapi.OutcomeFollower) // it first sees the announce now
	w.lead.loseLock()
	w2.lead.win("s2")
	w2.clk.Advance(cachenodes.AnnounceLead)
	w2.probe()
	w2.pass(mcribapi.OutcomeOK)
	if m, _ := w.store.stored(); m.Slot(4).ID != "b2" {
		t.Fatalf("the new leader served at serves_at, not serves_at + 1s")
	}
	w2.after(time.Second)
	m, _ = w.store.stored()
	if m.Slot(4).ID != ni.NodeID || m.Warming(4) == nil || m.Warming(4).NodeID != "b2" || !m.Warming(4).Until.Equal(ni.Until) {
		t.Fatalf("the new leader's serve: slots %v, warming %+v; want %s warm from b2 until %v", slotIDs(m), m.Warming(4), ni.NodeID, ni.Until)
	}
	if w.flushed(ni.NodeID) != 1 {
		t.Errorf("%s flushed %d times, want once (at the announce)", ni.NodeID, w.flushed(ni.NodeID))
	}

	// A new process that never probed the nodes waits for its own verdict.
	w3 := threeZones(t)
	w3.drain("az-b", 100, 50, time.Hour)
	w3.pass(mcribapi.OutcomeOK)
	fresh := w3.sibling()
	w3.lead.loseLock()
	fresh.lead.win("s3")
	fresh.clk.Advance(cachenodes.AnnounceLead + 2*time.Second)
	fresh.loop.tr.nodes[w3.mustIncoming(t, 4)].probed = false // as if not probed since
	fresh.pass(mcribapi.OutcomeOK)
	if m, _ := w3.store.stored(); m.Slot(4).ID != "b2" || m.Incoming(4) == nil {
		t.Fatalf("served without its own verdict on the incoming node: %v", slotIDs(m))
	}
	fresh.after(time.Second)
	if m, _ := w3.store.stored(); m.Slot(4).ID == "b2" {
		t.Fatalf("not served once it probed the nodes: %v", slotIDs(m))
	}
}

// mustIncoming returns the node announced to slot i in the stored map.
func (w *world) mustIncoming(t *testing.T, i int) string {
	t.Helper()
	m, _ := w.store.stored()
	ni := m.Incoming(i)
	if ni == nil {
		t.Fatalf("slot %d has no incoming node", i)
	}
	return ni.NodeID
}

// TestEndedAtRewrittenWhenItsWriteWasSlow: a warming that ends early is
// written with ended_at; when that write took longer than a second, the
// next pass writes ended_at again (later), and the object is removed 12 s
// after the later one.
func TestEndedAtRewrittenWhenItsWriteWasSlow(t *testing.T) {
	w := threeZones(t)
	w.loop.opts.WarmFor = time.Minute
	replaceB2(t, w)
	w.serve()
	w.away("b2")
	w.store.beforeWrite = func(s *fakeStore) {
		s.beforeWrite = nil
		w.clk.Advance(2 * time.Second) // the write takes 2s
	}
	w.pass(mcribapi.OutcomeOK)
	m, _ := w.store.stored()
	first := m.Warming(4).EndedAt
	if first.IsZero() {
		t.Fatalf("no ended_at: %+v", m.Warming(4))
	}
	w.pass(mcribapi.OutcomeOK)
	m, _ = w.store.stored()
	again := m.Warming(4).EndedAt
	if !again.After(first) || !again.Equal(w.clk.Now()) {
		t.Fatalf("ended_at %v after a slow write of %v, want it written again now (%v)", again, first, w.clk.Now())
	}
	w.pass(mcribapi.OutcomeOK)
	if m, _ := w.store.stored(); !m.Warming(4).EndedAt.Equal(again) {
		t.Fatalf("ended_at rewritten again after a quick write: %v", m.Warming(4).EndedAt)
	}
	w.clk.Advance(cachenodes.WarmWriteGrace - time.Second)
	w.probe()
	w.pass(mcribapi.OutcomeOK)
	if m, _ := w.store.stored(); m.Warming(4) == nil {
		t.Fatalf("removed before the rewritten ended_at + 12s")
	}
	w.after(time.Second)
	if m, _ := w.store.stored(); m.AnyWarming() {
		t.Fatalf("not removed 12s after the rewritten ended_at")
	}
}

// TestRouterConfigsIgnoreAnAnnounce: an incoming node changes nothing in
// the mcrouter and twemproxy configs; the move changes them when it
// serves.
func TestRouterConfigsIgnoreAnAnnounce(t *testing.T) {
	w := threeZones(t)
	before, _ := w.store.stored()
	replaceB2(t, w)
	announced, _ := w.store.stored()
	for name, render := range map[string]func(*cachenodes.SlotMap) ([]byte, error){
		"mcrouter":  func(m *cachenodes.SlotMap) ([]byte, error) { return MCRouterConfig(m, time.Hour) },
		"twemproxy": func(m *cachenodes.SlotMap) ([]byte, error) { return TwemproxyConfig(m, "127.0.0.1:22121") },
	} {
		a, err := render(before)
		if err != nil {
			t.Fatal(err)
		}
		b, err := render(announced)
		if err != nil {
			t.Fatal(err)
		}
		if string(a) != string(b) {
			t.Errorf("%s config changed with an announce:\n%s\n%s", name, a, b)
		}
	}
}
