package slotplan

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/mcribapi"
)

// doubled builds a previous map from slot holders and spares (as
// slotMapOf) and doubles it: slot s + len(slots) is a twin of slot s.
func doubled(t testing.TB, slots, spares []string) *cachenodes.SlotMap {
	t.Helper()
	d, err := slotMapOf(t, 4, slots, spares).Double(assignPrevAt)
	if err != nil {
		t.Fatalf("doubling: %v", err)
	}
	return d
}

// checkTwinRules asserts the rules of a resize on one pass: the next map
// keeps resized_from; every twin left names slot s's node and carries its
// warming; a twin stops being one only by a split of this pass, which
// moves it to an eligible spare that held no slot, warm from slot s's
// holder exactly when WarmFor is above 0 and the holder answers; no more
// than in.Split twins split, none under an operator freeze; a split is
// never a replacement; no twin is evicted for another reason.
func checkTwinRules(t testing.TB, in Input, plan Plan, next *cachenodes.SlotMap) {
	t.Helper()
	prev := in.Prev
	rf := prev.ResizedFrom()
	if next.ResizedFrom() != rf {
		t.Errorf("resized_from went from %d to %d", rf, next.ResizedFrom())
	}
	views := make(map[string]NodeView, len(in.Nodes))
	for _, v := range in.Nodes {
		views[v.ID] = v
	}
	splits := map[int]Placement{}
	for _, p := range plan.Placements {
		if p.Reason == mcribapi.EvictionSplit {
			splits[p.Slot] = p
		}
	}
	for _, ev := range plan.Evictions {
		if ev.CountsAgainstCeiling() && ev.Reason == mcribapi.EvictionSplit {
			t.Errorf("a split counts against the ceiling: %+v", ev)
		}
		if prev.IsTwin(ev.Slot) && ev.Reason != mcribapi.EvictionSplit {
			t.Errorf("twin %d evicted with reason %s", ev.Slot, ev.Reason)
		}
	}
	if len(splits) > in.Split || (in.OperatorFrozen && len(splits) > 0) {
		t.Errorf("%d splits with a step of %d (operator freeze %v)", len(splits), in.Split, in.OperatorFrozen)
	}
	for tw := rf; rf > 0 && tw < next.NumSlots(); tw++ {
		s := tw - rf
		if next.IsTwin(tw) {
			if !prev.IsTwin(tw) {
				t.Errorf("slot %d became a twin again", tw)
			}
			if next.Slot(tw) != next.Slot(s) || !next.Warming(tw).Equal(next.Warming(s)) {
				t.Errorf("twin %d names %v warming %v; slot %d names %v warming %v", tw, next.Slot(tw), next.Warming(tw), s, next.Slot(s), next.Warming(s))
			}
			continue
		}
		if !prev.IsTwin(tw) {
			continue
		}
		p, ok := splits[tw]
		if !ok {
			t.Errorf("twin %d stopped being a twin without a split", tw)
			continue
		}
		holder := prev.Slot(s)
		v := views[p.Node.ID]
		if !v.EligibleSpare() || prev.SlotOf(p.Node.ID) >= 0 || prev.WarmingOf(p.Node.ID) >= 0 {
			t.Errorf("twin %d split to %+v, not a ready spare", tw, v)
		}
		hv := views[holder.ID]
		if !hv.Reachable || hv.OwesFlush {
			t.Errorf("twin %d split while slot %d's holder %+v does not answer or owes a flush", tw, s, hv)
		}
		if next.Slot(s).ID != holder.ID {
			t.Errorf("slot %d moved from %s to %s in the pass that split its twin", s, holder.ID, next.Slot(s).ID)
		}
		w := next.Warming(tw)
		until := buildAt(in).Add(cachenodes.AnnounceLead + in.WarmFor)
		switch {
		case in.WarmFor > 0 && (w == nil || w.NodeID != holder.ID || !w.Until.Equal(until)):
			t.Errorf("split of twin %d warms from %+v, want %s until %v", tw, w, holder.ID, until)
		case in.WarmFor == 0 && w != nil:
			t.Errorf("a cold split of twin %d warms from %+v", tw, w)
		}
	}
}

// runSplit runs one pass of Decide and Build over a resized map and, when
// it announced anything, the pass that serves it (serveAll), checks the
// slot map rules and the twin rules, and returns the first plan and the
// last map.
func runSplit(t testing.TB, in Input, failed []string) (Plan, *cachenodes.SlotMap) {
	t.Helper()
	plan := Decide(in)
	done := carriedOut(plan, failed)
	next, err := Build(in, plan, done, buildAt(in))
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	checkSlotMap(t, next, in.NumSlots)
	if len(done) > 0 {
		checkAnnounced(t, in, done, next)
		checkAnnouncedTwins(t, in, next)
		next = serveAll(t, in, plan, done, next)
		checkSlotMap(t, next, in.NumSlots)
	}
	checkTwinRules(t, in, plan, next)
	if !next.SameSlots(in.Prev) && next.Generation() != in.Prev.Generation()+1+genBetween(plan, done) {
		t.Errorf("slots changed, generation %d after %d", next.Generation(), in.Prev.Generation())
	}
	return plan, next
}

// checkAnnouncedTwins asserts the twin rules of an announce: a twin left
// carries slot s's incoming node, and a twin with its own (a split
// announced) belongs to a slot s that has none.
func checkAnnouncedTwins(t testing.TB, in Input, next *cachenodes.SlotMap) {
	t.Helper()
	rf := next.ResizedFrom()
	for tw := rf; rf > 0 && tw < next.NumSlots(); tw++ {
		if !next.IsTwin(tw) {
			continue
		}
		s := tw - rf
		own, ofS := next.Incoming(tw), next.Incoming(s)
		if ofS != nil && !own.Equal(ofS) {
			t.Errorf("twin %d carries incoming %+v, slot %d has %+v", tw, own, s, ofS)
		}
	}
}

// warmFrom renders slot i's warm source of m, "" when it does not warm.
func warmFrom(m *cachenodes.SlotMap, i int) string {
	if w := m.Warming(i); w != nil {
		return w.NodeID
	}
	return ""
}

func TestSplitSentences(t *testing.T) {
	base := []string{"a1", "b1", "c1", "a2"}
	up := []NodeView{vUp("a1"), vUp("b1"), vUp("c1"), vUp("a2"), vUp("a3"), vUp("b2"), vUp("c2")}
	with := func(vs ...NodeView) []NodeView {
		out := slices.Clone(up)
		for _, v := range vs {
			i := slices.IndexFunc(out, func(o NodeView) bool { return o.ID == v.ID })
			if i < 0 {
				out = append(out, v)
			} else {
				out[i] = v
			}
		}
		return out
	}
	without := func(ids ...string) []NodeView {
		return slices.DeleteFunc(slices.Clone(up), func(v NodeView) bool { return slices.Contains(ids, v.ID) })
	}
	owes := vUp("a1")
	owes.OwesFlush = true
	tests := []struct {
		name      string
		prev      *cachenodes.SlotMap
		in        Input // Pool, NumSlots, Prev and Now are filled in
		wantSlots []string
		wantWarm  map[int]string // slot: warm source
		wantTwins int
		wantSplit string // "": no split step; else "moved/blocked substring"
		wantGen   uint64
	}{
		{name: "a pass without a split step moves no twin",
			in:        Input{Nodes: up, Budget: 2, WarmFor: time.Minute},
			wantSlots: []string{"a1", "b1", "c1", "a2", "a1", "b1", "c1", "a2"}, wantTwins: 4, wantGen: 5},
		{name: "a split step takes the lowest twins to spares by the spread rule, warm from slot s's holder, which keeps slot s",
			in:        Input{Nodes: up, Split: 2, WarmFor: time.Minute},
			wantSlots: []string{"a1", "b1", "c1", "a2", "b2", "c2", "c1", "a2"}, wantWarm: map[int]string{4: "a1", 5: "b1"},
			wantTwins: 2, wantSplit: "2/", wantGen: 6},
		{name: "the zone of slot s comes first while it holds less than its share",
			prev:      doubled(t, []string{"a1", "b1", "c1", "b3"}, nil),
			in:        Input{Nodes: with(vUp("b3")), Split: 1, WarmFor: time.Minute},
			wantSlots: []string{"a1", "b1", "c1", "b3", "a2", "b1", "c1", "b3"}, wantWarm: map[int]string{4: "a1"},
			wantTwins: 3, wantSplit: "1/", wantGen: 6},
		{name: "with warm-for 0s a split is cold",
			in:        Input{Nodes: up, Split: 1},
			wantSlots: []string{"a1", "b1", "c1", "a2", "b2", "b1", "c1", "a2"}, wantTwins: 3, wantSplit: "1/", wantGen: 6},
		{name: "an operator freeze holds the split step back",
			in:        Input{Nodes: up, Split: 2, Frozen: true, OperatorFrozen: true, WarmFor: time.Minute},
			wantSlots: []string{"a1", "b1", "c1", "a2", "a1", "b1", "c1", "a2"}, wantTwins: 4, wantGen: 5},
		{name: "an automatic freeze does not, nor the replacement ceiling",
			in:        Input{Nodes: up, Split: 1, Frozen: true, Budget: 0, WarmFor: time.Minute},
			wantSlots: []string{"a1", "b1", "c1", "a2", "b2", "b1", "c1", "a2"}, wantWarm: map[int]string{4: "a1"},
			wantTwins: 3, wantSplit: "1/", wantGen: 6},
		{name: "the twin of a holder that does not answer waits, the next one splits",
			in:        Input{Nodes: with(vUnreachable("a1")), Split: 1, WarmFor: time.Minute},
			wantSlots: []string{"a1", "b1", "c1", "a2", "a1", "b2", "c1", "a2"}, wantWarm: map[int]string{5: "b1"},
			wantTwins: 3, wantSplit: "1/", wantGen: 6},
		{name: "the twin of a holder that owes a flush waits and says so when nothing else moves",
			prev:      doubled(t, []string{"a1"}, nil),
			in:        Input{NumSlots: 2, Nodes: []NodeView{owes, vUp("b2")}, Split: 1, WarmFor: time.Minute},
			wantSlots: []string{"a1", "a1"}, wantTwins: 1, wantSplit: "0/node a1 of slot 0 owes a flush", wantGen: 5},
		{name: "the twin of a vacant slot waits",
			prev:      doubled(t, []string{"", "b1"}, nil),
			in:        Input{NumSlots: 4, Nodes: []NodeView{vUp("b1")}, Split: 1, WarmFor: time.Minute},
			wantSlots: []string{"", "b1", "", "b1"}, wantTwins: 2, wantSplit: "0/", wantGen: 5},
		{name: "no ready spare blocks the step and says so",
			in:        Input{Nodes: without("a3", "b2", "c2"), Split: 2, WarmFor: time.Minute},
			wantSlots: []string{"a1", "b1", "c1", "a2", "a1", "b1", "c1", "a2"}, wantTwins: 4,
			wantSplit: "0/no ready spare for the next split: every node holds a slot; add a memcached to the service", wantGen: 5},
		{name: "a replaced holder takes its twin along in the same write",
			in:        Input{Nodes: with(vDue("a1")), Budget: 1, WarmFor: time.Minute},
			wantSlots: []string{"a3", "b1", "c1", "a2", "a3", "b1", "c1", "a2"}, wantTwins: 4, wantGen: 6},
		{name: "a holder in maintenance that answers moves warm, and its twin carries the same warming",
			in:        Input{Nodes: with(vMaint("b1")), Budget: 1, WarmFor: time.Minute},
			wantSlots: []string{"a1", "b2", "c1", "a2", "a1", "b2", "c1", "a2"}, wantWarm: map[int]string{1: "b1", 5: "b1"},
			wantTwins: 4, wantGen: 6},
		{name: "a drain step moves a slot with its twin, counting the pair once",
			in: Input{Nodes: up, WarmFor: time.Minute, Drained: map[string]bool{"az-a": true},
				Steps: map[string]ZoneStep{"az-a": {Target: 1, Size: 5}}},
			wantSlots: []string{"a1", "b1", "c1", "b2", "a1", "b1", "c1", "b2"}, wantWarm: map[int]string{3: "a2", 7: "a2"},
			wantTwins: 4, wantGen: 6},
		{name: "a split goes on while a drain of another zone steps",
			in: Input{Nodes: up, WarmFor: time.Minute, Split: 1, Drained: map[string]bool{"az-a": true},
				Steps: map[string]ZoneStep{"az-a": {Target: 1, Size: 1}}},
			wantSlots: []string{"a1", "b1", "c1", "b2", "c2", "b1", "c1", "b2"}, wantWarm: map[int]string{3: "a2", 7: "a2", 4: "a1"},
			wantTwins: 3, wantSplit: "1/", wantGen: 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			in.Pool, in.Now = assignPool, assignNow
			in.Prev = tt.prev
			if in.Prev == nil {
				in.Prev = doubled(t, base, nil)
			}
			if in.NumSlots == 0 {
				in.NumSlots = 8
			}
			plan, next := runSplit(t, in, nil)
			if got := slotIDs(next); !slices.Equal(got, tt.wantSlots) {
				t.Errorf("slots = %q, want %q", got, tt.wantSlots)
			}
			for i := range next.NumSlots() {
				if got := warmFrom(next, i); got != tt.wantWarm[i] {
					t.Errorf("slot %d warms from %q, want %q", i, got, tt.wantWarm[i])
				}
			}
			if next.NumTwins() != tt.wantTwins || next.Generation() != tt.wantGen {
				t.Errorf("%d twins at generation %d, want %d at %d", next.NumTwins(), next.Generation(), tt.wantTwins, tt.wantGen)
			}
			switch {
			case tt.wantSplit == "" && plan.Split != nil:
				t.Errorf("split outcome %+v, want no split step", *plan.Split)
			case tt.wantSplit != "":
				moved, blocked, _ := strings.Cut(tt.wantSplit, "/")
				if plan.Split == nil || fmt.Sprint(plan.Split.Moved) != moved || !strings.Contains(plan.Split.Blocked, blocked) {
					t.Errorf("split outcome %+v, want %s moved and blocked containing %q", plan.Split, moved, blocked)
				}
			}
		})
	}
}

// TestSplitWarmSourceKeepsItsSlot checks the pass after a warm split: slot
// s's holder serves slot s and warms its split twin; it is no spare, slot s
// does not move (a replace is refused, a drain step waits) until that
// warming ends, and then slot s's holder keeps slot s alone.
func TestSplitWarmSourceKeepsItsSlot(t *testing.T) {
	nodes := []NodeView{vUp("a1"), vUp("b1"), vUp("a3"), vUp("c3")}
	in := Input{Pool: assignPool, NumSlots: 4, Prev: doubled(t, []string{"a1", "b1"}, nil), Nodes: nodes, Split: 1, WarmFor: time.Minute, Now: assignNow}
	_, split := runSplit(t, in, nil)
	// Zone c holds the fewest of the two slots that count.
	if split.Slot(2).ID != "c3" || warmFrom(split, 2) != "a1" || split.Slot(0).ID != "a1" {
		t.Fatalf("slots %q, slot 2 warms from %q", slotIDs(split), warmFrom(split, 2))
	}
	in = Input{Pool: assignPool, NumSlots: 4, Prev: split, Nodes: nodes, Budget: 2, WarmFor: time.Minute, Now: assignNow.Add(time.Second), Replace: "a1"}
	plan, _ := runSplit(t, in, nil)
	if !strings.Contains(plan.Refused, "node a1 is the warm source of slot 2, split from its slot 0") {
		t.Errorf("replace of a lending holder: refused %q", plan.Refused)
	}
	in.Replace, in.Drained, in.Steps = "", map[string]bool{"az-a": true}, map[string]ZoneStep{"az-a": {Target: 0, Size: 4}}
	plan, _ = runSplit(t, in, nil)
	if o := plan.Steps["az-a"]; o.Moved != 0 || !strings.Contains(o.Blocked, "slot 0 is still warming") {
		t.Errorf("drain step: %+v, want slot 0 to wait for the warming it lends", o)
	}
	in.Drained, in.Steps, in.Now = nil, nil, assignNow.Add(2*time.Minute)
	_, next := runSplit(t, in, nil)
	if next.Slot(0).ID != "a1" || next.Slot(2).ID != "c3" || next.AnyWarming() || next.SlotOf("a1") != 0 {
		t.Errorf("after the warming: slots %q, warming %v", slotIDs(next), next.AnyWarming())
	}
	if slices.ContainsFunc(next.Spares(), func(n cachenodes.Node) bool { return n.ID == "a1" }) {
		t.Error("slot 0's holder is listed as a spare")
	}
}

// TestSplitRandomPasses chains passes over a doubled pool with random
// membership, freezes, ceilings, drains and split steps, checking the slot
// map rules and the twin rules on each, and that a resize ends with no
// twin left once the fleet settles with spares enough.
func TestSplitRandomPasses(t *testing.T) {
	states := []func(string) NodeView{vUp, vUp, vUp, vUp, vAway, vFailing, vDue, vMaint, vFlapping, vUnreachable}
	ids := []string{"a1", "a2", "a3", "a4", "a5", "b1", "b2", "b3", "b4", "b5", "c1", "c2", "c3", "c4", "c5"}
	for seed := range uint64(20) {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 0x73706c6974))
			prev := doubled(t, []string{"a1", "b1", "c1", "a2", "", "b2"}, nil)
			now := assignNow
			for pass := range 300 {
				var nodes []NodeView
				settle := pass >= 250
				for _, id := range ids {
					v := vUp(id)
					if !settle {
						if rng.IntN(12) == 0 {
							continue
						}
						v = states[rng.IntN(len(states))](id)
						v.OwesFlush = rng.IntN(15) == 0
					}
					nodes = append(nodes, v)
				}
				in := Input{Pool: assignPool, NumSlots: 12, Prev: prev, Nodes: nodes, Now: now,
					Budget: rng.IntN(3), Split: rng.IntN(3), WarmFor: time.Duration(rng.IntN(3)) * time.Minute}
				if !settle {
					in.Frozen = rng.IntN(8) == 0
					in.OperatorFrozen = in.Frozen && rng.IntN(2) == 0
					if rng.IntN(6) == 0 {
						in.Drained = map[string]bool{"az-c": true}
						in.Steps = map[string]ZoneStep{"az-c": {Target: rng.IntN(2), Size: 1}}
					}
				} else {
					in.Split = 2
				}
				var failed []string
				if !settle && rng.IntN(5) == 0 {
					failed = []string{ids[rng.IntN(len(ids))]}
				}
				plan, next := runSplit(t, in, failed)
				for _, v := range nodes {
					if slot := prev.SlotOf(v.ID); slot >= 0 && v.Reachable && !v.Maintenance && in.Steps == nil && next.Slot(slot).ID != v.ID {
						t.Errorf("pass %d: reachable %+v lost slot %d", pass, v, slot)
					}
				}
				if t.Failed() {
					t.Fatalf("pass %d failed: input %+v, plan %+v", pass, in, plan)
				}
				prev = next
				now = now.Add(30 * time.Second)
			}
			if prev.NumTwins() != 0 {
				t.Errorf("after the fleet settled, %d twins are left: %q", prev.NumTwins(), slotIDs(prev))
			}
		})
	}
}
