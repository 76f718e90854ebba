package slotplan

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/mcribapi"
)

// servesAt is the serves_at of the announces the tests start from: an
// announce written at assignNow.
var servesAt = assignNow.Add(cachenodes.AnnounceLead)

// announcedMap builds a previous map from slot holders and spares (as
// slotMapOf) where each slot of incoming is announced to its node, serving
// at servesAt, warm for warmFor; revision 5.
func announcedMap(t testing.TB, slots, spares []string, incoming map[int]string, warmFor time.Duration) *cachenodes.SlotMap {
	t.Helper()
	spec := slotMapOf(t, 4, slots, spares).Spec()
	spec.Revision = 5
	spec.Incoming = make([]*cachenodes.Incoming, len(spec.Slots))
	for i, id := range incoming {
		spec.Incoming[i] = &cachenodes.Incoming{NodeID: id, Addr: cacheNode(id).Addr, ServesAt: servesAt, Until: servesAt.Add(warmFor)}
	}
	m, err := cachenodes.NewSlotMap(spec)
	if err != nil {
		t.Fatalf("building the announced map: %v", err)
	}
	return m
}

// own is the loop's view of an announce it wrote for reason, judged.
func own(reason mcribapi.EvictionReason) IncomingView {
	return IncomingView{ServesAt: servesAt, Judged: true, Own: true, Reason: reason}
}

// views returns one IncomingView per slot of n, with v at slot i.
func views(n int, at map[int]IncomingView) []IncomingView {
	out := make([]IncomingView, n)
	for i, v := range at {
		out[i] = v
	}
	return out
}

func serveStrings(ps []Placement) []string {
	var out []string
	for _, p := range ps {
		kind := "cold"
		if p.Warm {
			kind = "warm"
		}
		out = append(out, fmt.Sprintf("%d=%s %s", p.Slot, p.Node.ID, kind))
	}
	return out
}

func dropStrings(ds []Drop) []string {
	var out []string
	for _, d := range ds {
		s := fmt.Sprintf("%d=%s", d.Slot, d.Node.ID)
		if d.GiveBack {
			s += " back"
		}
		out = append(out, s)
	}
	return out
}

// with returns v changed by f.
func with(v NodeView, f func(*NodeView)) NodeView { f(&v); return v }

// TestAnnounceRules: what becomes of an announce of the previous map in
// one pass: it serves (warm or cold), waits, or is dropped, and a dropped
// one that counted against the ceiling gives its count back.
func TestAnnounceRules(t *testing.T) {
	up := []NodeView{vUp("a1"), vUp("b1"), vUp("c1"), vUp("c2")}
	type tc struct {
		name     string
		nodes    []NodeView
		incoming map[int]IncomingView // default: slot 1 own replace, judged
		tweak    func(in *Input)
		// want: the serves ("slot=node warm|cold") and drops ("slot=node",
		// "back" when it gives its count back); why a drop's Why holds.
		wantServes, wantDrops []string
		why                   string
	}
	tests := []tc{
		{name: "an own announce waits for its serves_at", nodes: up,
			tweak: func(in *Input) { in.Now = servesAt.Add(-time.Millisecond) }},
		{name: "at serves_at it serves warm from a holder that answers", nodes: up, wantServes: []string{"1=c1 warm"}},
		{name: "cold from a holder that does not answer", nodes: []NodeView{vUp("a1"), vUnreachable("b1"), vUp("c1")}, wantServes: []string{"1=c1 cold"}},
		{name: "cold from a holder that owes a flush", nodes: []NodeView{vUp("a1"), with(vUp("b1"), func(v *NodeView) { v.OwesFlush = true }), vUp("c1")},
			wantServes: []string{"1=c1 cold"}},
		{name: "cold with --warm-for 0s", nodes: up, tweak: func(in *Input) { in.WarmFor = 0 }, wantServes: []string{"1=c1 cold"}},
		{name: "a new leader without its own verdict waits, past serves_at", nodes: up,
			incoming: map[int]IncomingView{1: {ServesAt: servesAt}}, tweak: func(in *Input) { in.Now = servesAt.Add(time.Hour) }},
		{name: "a new leader drops what it cannot tell from a replacement whose holder came back", nodes: up,
			incoming: map[int]IncomingView{1: {ServesAt: servesAt, Judged: true}}, wantDrops: []string{"1=c1 back"}, why: "cannot be told"},
		{name: "a new leader serves an inherited drain step", nodes: up,
			incoming: map[int]IncomingView{1: {ServesAt: servesAt, Judged: true}}, tweak: func(in *Input) { in.Drained = map[string]bool{"az-b": true} },
			wantServes: []string{"1=c1 warm"}},
		{name: "the node stops answering", nodes: []NodeView{vUp("a1"), vUp("b1"), vUnreachable("c1")}, wantDrops: []string{"1=c1 back"}, why: "stopped answering"},
		{name: "the node restarted since its flush", nodes: []NodeView{vUp("a1"), vUp("b1"), with(vUp("c1"), func(v *NodeView) { v.Restarted = true })},
			wantDrops: []string{"1=c1 back"}, why: "restarted"},
		{name: "the node owes a flush, judged or not", nodes: []NodeView{vUp("a1"), vUp("b1"), with(vUp("c1"), func(v *NodeView) { v.OwesFlush = true })},
			incoming: map[int]IncomingView{1: {ServesAt: servesAt}}, wantDrops: []string{"1=c1 back"}, why: "owes a flush"},
		{name: "the node leaves Consul", nodes: []NodeView{vUp("a1"), vUp("b1"), vAway("c1")}, wantDrops: []string{"1=c1 back"}, why: "left Consul"},
		{name: "the node is put in maintenance", nodes: []NodeView{vUp("a1"), vUp("b1"), vMaintPassing("c1")}, wantDrops: []string{"1=c1 back"}, why: "maintenance"},
		{name: "the node moved to another address", nodes: []NodeView{vUp("a1"), vUp("b1"), vMoved("c1", "10.9.9.9:11211")}, wantDrops: []string{"1=c1 back"}, why: "registered at"},
		{name: "any freeze drops a replace", nodes: up, tweak: func(in *Input) { in.Frozen = true }, wantDrops: []string{"1=c1 back"}, why: "frozen"},
		{name: "an automatic freeze does not drop a drain step", nodes: up, incoming: map[int]IncomingView{1: own(mcribapi.EvictionDrain)},
			tweak: func(in *Input) { in.Frozen, in.Drained = true, map[string]bool{"az-b": true} }, wantServes: []string{"1=c1 warm"}},
		{name: "an operator freeze does", nodes: up, incoming: map[int]IncomingView{1: own(mcribapi.EvictionDrain)},
			tweak: func(in *Input) { in.Frozen, in.OperatorFrozen, in.Drained = true, true, map[string]bool{"az-b": true} }, wantDrops: []string{"1=c1"}, why: "operator freeze"},
		{name: "a drain step whose zone is no longer drained", nodes: up, incoming: map[int]IncomingView{1: own(mcribapi.EvictionDrain)},
			wantDrops: []string{"1=c1"}, why: "no longer drained"},
		{name: "a replacement after the hold serves once the holder is due", nodes: []NodeView{vUp("a1"), vDue("b1"), vUp("c1")},
			incoming: map[int]IncomingView{1: own(mcribapi.EvictionHoldExpired)}, wantServes: []string{"1=c1 cold"}},
		{name: "and waits while the loop's hold of the holder runs", nodes: []NodeView{vUp("a1"), vFailing("b1"), vUp("c1")},
			incoming: map[int]IncomingView{1: own(mcribapi.EvictionHoldExpired)}},
		{name: "and is dropped, giving its count back, when the holder answers again", nodes: []NodeView{vUp("a1"), vAway("b1"), vUp("c1")},
			incoming: map[int]IncomingView{1: own(mcribapi.EvictionHoldExpired)}, wantDrops: []string{"1=c1 back"}, why: "answers again"},
		{name: "or is present again", nodes: []NodeView{vUp("a1"), with(vFailing("b1"), func(v *NodeView) { v.Listed, v.Present = true, true }), vUp("c1")},
			incoming: map[int]IncomingView{1: own(mcribapi.EvictionHoldExpired)}, wantDrops: []string{"1=c1 back"}, why: "present in Consul again"},
		{name: "or under an automatic freeze (a fault of discovery)", nodes: []NodeView{vUp("a1"), vDue("b1"), vUp("c1")},
			incoming: map[int]IncomingView{1: own(mcribapi.EvictionHoldExpired)}, tweak: func(in *Input) { in.Frozen, in.DiscoveryFault = true, true },
			wantDrops: []string{"1=c1 back"}, why: "frozen"},
		{name: "a maintenance move whose holder left maintenance", nodes: up, incoming: map[int]IncomingView{1: own(mcribapi.EvictionMaintenance)},
			wantDrops: []string{"1=c1 back"}, why: "left Consul maintenance"},
		{name: "a vacant slot's fill counts nothing to give back", nodes: []NodeView{vUp("a1"), vUnreachable("c1")},
			incoming: map[int]IncomingView{1: own("")}, tweak: func(in *Input) {
				in.Prev = announcedMap(t, []string{"a1", ""}, nil, map[int]string{1: "c1"}, time.Minute)
			}, wantDrops: []string{"1=c1"}},
		{name: "and serves cold", nodes: []NodeView{vUp("a1"), vUp("c1")},
			incoming: map[int]IncomingView{1: own("")}, tweak: func(in *Input) {
				in.Prev = announcedMap(t, []string{"a1", ""}, nil, map[int]string{1: "c1"}, time.Minute)
			}, wantServes: []string{"1=c1 cold"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inc := tt.incoming
			if inc == nil {
				inc = map[int]IncomingView{1: own(mcribapi.EvictionReplace)}
			}
			in := Input{Pool: assignPool, NumSlots: 2, Prev: announcedMap(t, []string{"a1", "b1"}, []string{"c2"}, map[int]string{1: "c1"}, time.Minute),
				Nodes: tt.nodes, Budget: 2, WarmFor: time.Minute, Now: servesAt}
			if tt.tweak != nil {
				tt.tweak(&in)
			}
			in.Incoming = views(in.NumSlots, inc)
			plan := Decide(in)
			if got := serveStrings(plan.Serves); !slices.Equal(got, tt.wantServes) {
				t.Errorf("serves %v, want %v", got, tt.wantServes)
			}
			if got := dropStrings(plan.Drops); !slices.Equal(got, tt.wantDrops) {
				t.Errorf("drops %v, want %v", got, tt.wantDrops)
			}
			if tt.why != "" && (len(plan.Drops) == 0 || !strings.Contains(plan.Drops[0].Why, tt.why)) {
				t.Errorf("drops %+v, want a Why with %q", plan.Drops, tt.why)
			}
			next, err := Build(in, plan, nil, in.Now)
			if err != nil {
				t.Fatal(err)
			}
			checkSlotMap(t, next, in.NumSlots)
			switch {
			case len(plan.Serves) > 0:
				p := plan.Serves[0]
				if next.Slot(1).ID != "c1" || next.Incoming(1) != nil || next.Generation() != in.Prev.Generation()+1 || next.Revision() != in.Prev.Revision()+1 {
					t.Errorf("served: slots %v, incoming %+v, generation %d revision %d", slotIDs(next), next.Incoming(1), next.Generation(), next.Revision())
				}
				ws := next.Warming(1)
				switch {
				case p.Warm && (ws == nil || ws.NodeID != "b1" || !ws.Until.Equal(in.Prev.Incoming(1).Until)):
					t.Errorf("a warm serve warms %+v, want from b1 until the announce's until %v", ws, in.Prev.Incoming(1).Until)
				case !p.Warm && ws != nil:
					t.Errorf("a cold serve warms %+v", ws)
				}
			case len(plan.Drops) > 0:
				if next.Incoming(1) != nil || next.Generation() != in.Prev.Generation() || next.Revision() != in.Prev.Revision()+1 || next.Slot(1).ID != in.Prev.Slot(1).ID {
					t.Errorf("dropped: slots %v, incoming %+v, generation %d revision %d", slotIDs(next), next.Incoming(1), next.Generation(), next.Revision())
				}
			default:
				if next.Incoming(1) == nil || !next.Incoming(1).Equal(in.Prev.Incoming(1)) {
					t.Errorf("a waiting announce became %+v, want %+v", next.Incoming(1), in.Prev.Incoming(1))
				}
			}
		})
	}
}

// TestAnnounceOfAPlacement: a placement is written as its slot's incoming
// node (same generation, revision + 1, serving AnnounceLead after the
// write, until --warm-for after that), the holder keeping the slot; the
// incoming node is no spare and is announced to no other slot.
func TestAnnounceOfAPlacement(t *testing.T) {
	prev := slotMapOf(t, 4, []string{"a1", "b1", ""}, []string{"c1", "c2"})
	in := Input{Pool: assignPool, NumSlots: 3, Prev: prev, Nodes: []NodeView{vUp("a1"), vUp("b1"), vUp("c1"), vUp("c2")},
		Budget: 2, WarmFor: time.Minute, Now: assignNow, Replace: "b1"}
	plan := Decide(in)
	if got := placementStrings(plan.Placements); !slices.Equal(got, []string{"2=c1", "1=c2"}) {
		t.Fatalf("placements %v, want the vacant slot's fill and the replace", got)
	}
	next, err := Build(in, plan, plan.Placements, assignNow)
	if err != nil {
		t.Fatal(err)
	}
	if next.Generation() != prev.Generation() || next.Revision() != prev.Revision()+1 || !slices.Equal(slotIDs(next), []string{"a1", "b1", ""}) {
		t.Fatalf("announce: slots %v, generation %d revision %d", slotIDs(next), next.Generation(), next.Revision())
	}
	for slot, id := range map[int]string{2: "c1", 1: "c2"} {
		ni := next.Incoming(slot)
		if ni == nil || ni.NodeID != id || !ni.ServesAt.Equal(servesAt) || !ni.Until.Equal(servesAt.Add(time.Minute)) {
			t.Errorf("slot %d's incoming %+v, want %s serving at %v", slot, ni, id, servesAt)
		}
	}
	if next.NumSpares() != 0 {
		t.Errorf("spares %v: an incoming node is no spare", nodeIDs(next.Spares()))
	}
	// The next pass announces nothing more: the incoming nodes are taken.
	in2 := in
	in2.Prev, in2.Replace, in2.Now = next, "", assignNow.Add(time.Second)
	in2.Incoming = ownIncoming(next, plan.Placements)
	in2.Prev = func() *cachenodes.SlotMap { // a vacant slot more, no spare for it
		spec := next.Spec()
		spec.Slots = append(spec.Slots, cachenodes.Node{})
		spec.Incoming = append(spec.Incoming, nil)
		m, err := cachenodes.NewSlotMap(spec)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}()
	in2.NumSlots, in2.Incoming = 4, append(in2.Incoming, IncomingView{})
	if plan2 := Decide(in2); len(plan2.Placements) != 0 || len(plan2.Serves) != 0 || len(plan2.Drops) != 0 {
		t.Errorf("a second pass placed %v, served %v, dropped %v", placementStrings(plan2.Placements), serveStrings(plan2.Serves), dropStrings(plan2.Drops))
	}
}

// TestReplacementAfterTheHoldIsAnnouncedEarly: a holder absent and
// unreachable whose hold ends within AnnounceLead (DueSoon) is announced
// to a spare at once, within the budget, and keeps its slot; without a
// spare it is not vacated before its hold ends (a due one is).
func TestReplacementAfterTheHoldIsAnnouncedEarly(t *testing.T) {
	soon := with(vFailing("b1"), func(v *NodeView) { v.DueSoon = true })
	prev := slotMapOf(t, 4, []string{"a1", "b1"}, []string{"b2"})
	in := Input{Pool: assignPool, NumSlots: 2, Prev: prev, Nodes: []NodeView{vUp("a1"), soon, vUp("b2")}, Budget: 1, Now: assignNow}
	plan := Decide(in)
	if got := placementStrings(plan.Placements); !slices.Equal(got, []string{"1=b2"}) || len(plan.Evictions) != 1 || !plan.Evictions[0].Move ||
		plan.Evictions[0].Reason != mcribapi.EvictionHoldExpired {
		t.Fatalf("placements %v, evictions %+v: want b2 announced to slot 1, b1 keeping it", got, plan.Evictions)
	}
	in.Budget = 0
	if plan := Decide(in); len(plan.Placements) != 0 || plan.Blocked != 0 {
		t.Errorf("beyond the ceiling: placements %v, blocked %d; want none (its hold still runs)", placementStrings(plan.Placements), plan.Blocked)
	}
	in.Budget, in.Nodes = 1, []NodeView{vUp("a1"), soon}
	if plan := Decide(in); len(plan.Evictions) != 0 {
		t.Errorf("without a spare: evictions %v, want none before the hold ends", evictionStrings(plan.Evictions))
	}
	in.Nodes = []NodeView{vUp("a1"), vDue("b1")}
	if plan := Decide(in); len(plan.Evictions) != 1 || plan.Evictions[0].Move {
		t.Errorf("without a spare once due: evictions %+v, want b1 out of its slot", plan.Evictions)
	}
}

// TestOnlyASlotWithoutALiveHolderTakesAnIncomingNode: with no spare left,
// a replacement of a due holder takes the node announced to a drain step
// (its announce dropped, announced afresh), never one announced to a
// replacement; a planned move never takes one.
func TestOnlyASlotWithoutALiveHolderTakesAnIncomingNode(t *testing.T) {
	prev := announcedMap(t, []string{"a1", "b1", "b2"}, nil, map[int]string{2: "c1"}, time.Minute)
	nodes := []NodeView{vDue("a1"), vUp("b1"), vUp("b2"), vUp("c1")}
	in := Input{Pool: assignPool, NumSlots: 3, Prev: prev, Nodes: nodes, Budget: 2, WarmFor: time.Minute, Now: assignNow,
		Drained: map[string]bool{"az-b": true}, Incoming: views(3, map[int]IncomingView{2: own(mcribapi.EvictionDrain)})}
	plan := Decide(in)
	if got := placementStrings(plan.Placements); !slices.Equal(got, []string{"0=c1"}) {
		t.Fatalf("placements %v, want c1 taken for slot 0", got)
	}
	if got := dropStrings(plan.Drops); !slices.Equal(got, []string{"2=c1"}) || !strings.Contains(plan.Drops[0].Why, "no live holder") {
		t.Fatalf("drops %+v, want slot 2's announce dropped", plan.Drops)
	}
	next, err := Build(in, plan, plan.Placements, assignNow)
	if err != nil {
		t.Fatal(err)
	}
	if next.Incoming(0) == nil || next.Incoming(0).NodeID != "c1" || next.Incoming(2) != nil {
		t.Fatalf("incoming of slot 0 %+v, of slot 2 %+v", next.Incoming(0), next.Incoming(2))
	}
	// A replacement's incoming node is not taken.
	in.Incoming = views(3, map[int]IncomingView{2: own(mcribapi.EvictionReplace)})
	in.Drained = nil
	if plan := Decide(in); len(plan.Placements) != 0 || len(plan.Drops) != 0 {
		t.Errorf("a replace's incoming node: placements %v, drops %v; want it left", placementStrings(plan.Placements), dropStrings(plan.Drops))
	}
}

// TestNoAnnounceOverAWarmingObject: a slot with a warming object is not
// announced until the object is removed, WarmWriteGrace after its reads
// end; the maintenance of its holder ends the warming first (ended_at),
// an operator's replace too, refused until the object is removed.
func TestNoAnnounceOverAWarmingObject(t *testing.T) {
	spec := slotMapOf(t, 4, []string{"a1", "b3"}, []string{"b4"}).Spec()
	spec.Warming = []*cachenodes.Warming{nil, {NodeID: "b2", Addr: cacheNode("b2").Addr, Until: assignNow.Add(time.Minute)}}
	prev, err := cachenodes.NewSlotMap(spec)
	if err != nil {
		t.Fatal(err)
	}
	nodes := []NodeView{vUp("a1"), vUp("b2"), vMaint("b3"), vUp("b4")}
	in := Input{Pool: assignPool, NumSlots: 2, Prev: prev, Nodes: nodes, Budget: 2, WarmFor: time.Minute, Now: assignNow}
	plan := Decide(in)
	if len(plan.Placements) != 0 || plan.Blocked != 1 || len(plan.EndWarming) != 1 || plan.EndWarming[0].Slot != 1 || !strings.Contains(plan.EndWarming[0].Why, "maintenance") {
		t.Fatalf("maintenance of a warming holder: placements %v, blocked %d, ended %+v", placementStrings(plan.Placements), plan.Blocked, plan.EndWarming)
	}
	next, err := Build(in, plan, nil, assignNow)
	if err != nil {
		t.Fatal(err)
	}
	ws := next.Warming(1)
	if ws == nil || !ws.EndedAt.Equal(assignNow) || next.Generation() != prev.Generation() {
		t.Fatalf("warming after the end %+v", ws)
	}
	// The object stays until ended_at + 12s, never sooner, and nothing is
	// announced to the slot meanwhile; then the move is announced.
	in.Prev, in.Now = next, assignNow.Add(cachenodes.WarmWriteGrace-time.Millisecond)
	if plan := Decide(in); len(plan.RemovedWarming) != 0 || len(plan.Placements) != 0 {
		t.Fatalf("before ended_at + 12s: removed %v, placements %v", plan.RemovedWarming, placementStrings(plan.Placements))
	}
	in.Now = assignNow.Add(cachenodes.WarmWriteGrace)
	plan = Decide(in)
	if !slices.Equal(plan.RemovedWarming, []int{1}) || !slices.Equal(placementStrings(plan.Placements), []string{"1=b4"}) {
		t.Fatalf("at ended_at + 12s: removed %v, placements %v", plan.RemovedWarming, placementStrings(plan.Placements))
	}
	// An operator's replace of a warming slot ends its warming and is
	// refused, saying from when it can be made.
	in = Input{Pool: assignPool, NumSlots: 2, Prev: prev, Nodes: []NodeView{vUp("a1"), vUp("b2"), vUp("b3"), vUp("b4")}, Budget: 2,
		WarmFor: time.Minute, Now: assignNow, Replace: "b3"}
	plan = Decide(in)
	if len(plan.EndWarming) != 1 || !strings.Contains(plan.Refused, "its warming is ended now") || len(plan.Placements) != 0 {
		t.Fatalf("a replace of a warming slot: ended %+v, refused %q, placements %v", plan.EndWarming, plan.Refused, placementStrings(plan.Placements))
	}
}

// TestWarmingEnds: a warming's reads end early (ended_at) when its source
// stops answering or owes a flush, or its new holder stops answering or
// restarted; at its until nothing is written; its object goes
// WarmWriteGrace after either, and its source is no spare until then.
func TestWarmingEnds(t *testing.T) {
	spec := slotMapOf(t, 4, []string{"a1", "b3"}, nil).Spec()
	spec.Warming = []*cachenodes.Warming{nil, {NodeID: "b2", Addr: cacheNode("b2").Addr, Until: assignNow.Add(time.Minute)}}
	prev, err := cachenodes.NewSlotMap(spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name          string
		source, hold  NodeView
		now           time.Duration
		wantEnd, gone bool
		why           string
	}{
		{name: "both answer: it goes on", source: vUp("b2"), hold: vUp("b3")},
		{name: "its source stops answering", source: vUnreachable("b2"), hold: vUp("b3"), wantEnd: true, why: "warm source b2 stopped answering"},
		{name: "its source owes a flush", source: with(vUp("b2"), func(v *NodeView) { v.OwesFlush = true }), hold: vUp("b3"), wantEnd: true, why: "owes a flush"},
		{name: "its new holder stops answering", source: vUp("b2"), hold: vUnreachable("b3"), wantEnd: true, why: "new holder b3 stopped answering"},
		{name: "its new holder restarted", source: vUp("b2"), hold: with(vUp("b3"), func(v *NodeView) { v.Restarted = true }), wantEnd: true, why: "restarted"},
		{name: "at its until: nothing written, the object stays", source: vUp("b2"), hold: vUp("b3"), now: time.Minute},
		{name: "12s after its until: the object goes", source: vUp("b2"), hold: vUp("b3"), now: time.Minute + cachenodes.WarmWriteGrace, gone: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := Input{Pool: assignPool, NumSlots: 2, Prev: prev, Nodes: []NodeView{vUp("a1"), tt.source, tt.hold}, WarmFor: time.Minute, Now: assignNow.Add(tt.now)}
			plan := Decide(in)
			if (len(plan.EndWarming) == 1) != tt.wantEnd || (tt.wantEnd && !strings.Contains(plan.EndWarming[0].Why, tt.why)) {
				t.Fatalf("ended %+v, want ended %v (%q)", plan.EndWarming, tt.wantEnd, tt.why)
			}
			if gone := slices.Equal(plan.RemovedWarming, []int{1}); gone != tt.gone {
				t.Fatalf("removed %v, want gone %v", plan.RemovedWarming, tt.gone)
			}
			next, err := Build(in, plan, nil, in.Now)
			if err != nil {
				t.Fatal(err)
			}
			ws := next.Warming(1)
			switch {
			case tt.gone:
				if ws != nil || !slices.Contains(nodeIDs(next.Spares()), "b2") {
					t.Errorf("after its object went: warming %+v, spares %v", ws, nodeIDs(next.Spares()))
				}
			case ws == nil || ws.Ended() != tt.wantEnd || (tt.wantEnd && !ws.EndedAt.Equal(in.Now)):
				t.Errorf("warming %+v, want ended %v at %v", ws, tt.wantEnd, in.Now)
			case slices.Contains(nodeIDs(next.Spares()), "b2"):
				t.Errorf("the warm source of an object kept is a spare")
			}
		})
	}
}

// TestAnnouncesAndTwins: a twin carries slot s's announce and follows it
// when it serves; a twin is not announced to split while slot s has an
// incoming node, and slot s is not announced while its twin is; a twin
// announced to split is dropped when slot s's holder stops answering.
func TestAnnouncesAndTwins(t *testing.T) {
	d := doubled(t, []string{"a1", "b1"}, []string{"a2", "b2", "c1"})
	nodes := []NodeView{vMaint("a1"), vUp("b1"), vUp("a2"), vUp("b2"), vUp("c1")}
	in := Input{Pool: assignPool, NumSlots: 4, Prev: d, Nodes: nodes, Budget: 2, WarmFor: time.Minute, Now: assignNow, Split: 2}
	plan := Decide(in)
	// a1 (slot 0, twin 2) in maintenance moves warm; slot 1's twin 3
	// splits; twin 2 waits for slot 0.
	if got := placementStrings(plan.Placements); !slices.Equal(got, []string{"0=a2", "3=c1"}) {
		t.Fatalf("placements %v", got)
	}
	next, err := Build(in, plan, plan.Placements, assignNow)
	if err != nil {
		t.Fatal(err)
	}
	if next.Incoming(0) == nil || !next.Incoming(2).Equal(next.Incoming(0)) || next.Incoming(3) == nil || next.Incoming(1) != nil || !next.IsTwin(2) || !next.IsTwin(3) {
		t.Fatalf("incoming 0 %+v, 2 %+v, 3 %+v, 1 %+v", next.Incoming(0), next.Incoming(2), next.Incoming(3), next.Incoming(1))
	}
	// No new announce to slot 1 (its twin is announced) nor twin 2 (slot 0
	// is); a replace of b1 is refused.
	in2 := in
	in2.Prev, in2.Now, in2.Incoming = next, assignNow.Add(time.Second), ownIncoming(next, plan.Placements)
	in2.Replace = "b1"
	plan2 := Decide(in2)
	if len(plan2.Placements) != 0 || !strings.Contains(plan2.Refused, "twin 3 is announced to split") {
		t.Fatalf("a pass over the announces: placements %v, refused %q", placementStrings(plan2.Placements), plan2.Refused)
	}
	// b1 stops answering: twin 3's split is dropped and waits.
	in2.Replace, in2.Nodes = "", []NodeView{vMaint("a1"), vUnreachable("b1"), vUp("a2"), vUp("b2"), vUp("c1")}
	if plan := Decide(in2); !slices.Equal(dropStrings(plan.Drops), []string{"3=c1"}) {
		t.Fatalf("drops %v, want twin 3's split", dropStrings(plan.Drops))
	}
	// At serves_at, slot 0 serves and twin 2 follows it, warm from a1 in
	// the same write; twin 3 splits off, warm from b1.
	in2.Nodes, in2.Now = nodes, servesAt
	plan3 := Decide(in2)
	if got := serveStrings(plan3.Serves); !slices.Equal(got, []string{"0=a2 warm", "3=c1 warm"}) {
		t.Fatalf("serves %v", got)
	}
	served, err := Build(in2, plan3, nil, servesAt)
	if err != nil {
		t.Fatal(err)
	}
	if got := slotIDs(served); !slices.Equal(got, []string{"a2", "b1", "a2", "c1"}) || !served.IsTwin(2) || served.IsTwin(3) || served.AnyIncoming() {
		t.Fatalf("served: slots %v, twins %v %v", got, served.IsTwin(2), served.IsTwin(3))
	}
	if w0, w2, w3 := served.Warming(0), served.Warming(2), served.Warming(3); w0 == nil || w0.NodeID != "a1" || !w2.Equal(w0) || w3 == nil || w3.NodeID != "b1" {
		t.Fatalf("warmings %+v %+v %+v", w0, w2, w3)
	}
}

// TestSplitsWaitOnAFaultOrAPause: during a fault of discovery no split is
// announced, and one announced is dropped then, under a drain that pauses
// the splits, under an operator's freeze, and when slot s's holder stops
// answering.
func TestSplitsWaitOnAFaultOrAPause(t *testing.T) {
	d := doubled(t, []string{"a1", "b1"}, []string{"a2", "b2"})
	nodes := []NodeView{vUp("a1"), vUp("b1"), vUp("a2"), vUp("b2")}
	in := Input{Pool: assignPool, NumSlots: 4, Prev: d, Nodes: nodes, WarmFor: time.Minute, Now: assignNow, Split: 2, DiscoveryFault: true, Frozen: true}
	plan := Decide(in)
	if len(plan.Placements) != 0 || plan.Split == nil || !strings.Contains(plan.Split.Blocked, "fault of discovery") {
		t.Fatalf("during a fault of discovery: placements %v, split %+v", placementStrings(plan.Placements), plan.Split)
	}
	in.DiscoveryFault, in.Frozen = false, false
	plan = Decide(in)
	announced, err := Build(in, plan, plan.Placements, assignNow)
	if err != nil || len(plan.Placements) != 2 {
		t.Fatalf("splits %v: %v", placementStrings(plan.Placements), err)
	}
	in.Prev, in.Split, in.Incoming = announced, 0, ownIncoming(announced, plan.Placements)
	for name, tweak := range map[string]func(*Input){
		"a fault of discovery":   func(in *Input) { in.DiscoveryFault, in.Frozen = true, true },
		"a drain pauses them":    func(in *Input) { in.SplitsPaused = true },
		"an operator's freeze":   func(in *Input) { in.Frozen, in.OperatorFrozen = true, true },
		"slot s's holder is out": func(in *Input) { in.Nodes = []NodeView{vUnreachable("a1"), vUnreachable("b1"), vUp("a2"), vUp("b2")} },
	} {
		in := in
		tweak(&in)
		if plan := Decide(in); len(plan.Drops) != 2 {
			t.Errorf("%s: drops %v, want both splits", name, dropStrings(plan.Drops))
		}
	}
}

// TestAnnouncedSlotCountsForItsNewZone: the spread counts a slot announced
// away for the zone of its incoming node: a vacant slot is then filled in
// the zone that holds the fewest counting it.
func TestAnnouncedSlotCountsForItsNewZone(t *testing.T) {
	// Zone a holds slots 0 and 1, c slot 2, and slot 1 is announced to b2:
	// by the announce a, b and c hold one each, and the vacant slot 3 goes
	// to a, first by name (counted by holders alone it would go to b,
	// holding none).
	prev := announcedMap(t, []string{"a1", "a2", "c1", ""}, nil, map[int]string{1: "b2"}, 0)
	nodes := []NodeView{vUp("a1"), vUp("a2"), vUp("c1"), vUp("b2"), vUp("a3"), vUp("b3")}
	in := Input{Pool: assignPool, NumSlots: 4, Prev: prev, Nodes: nodes, Now: assignNow, Incoming: views(4, map[int]IncomingView{1: own(mcribapi.EvictionReplace)})}
	if got := placementStrings(Decide(in).Placements); !slices.Equal(got, []string{"3=a3"}) {
		t.Fatalf("placements %v, want 3=a3", got)
	}
}
