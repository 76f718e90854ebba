package slotplan

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
)

// zoned is a ready node mc-<zone>-<n> in zone <zone>.
func zoned(zone string, n int) NodeView {
	id := fmt.Sprintf("mc-%s-%d", zone, n)
	return NodeView{Node: cachenodes.Node{ID: id, Addr: id + ":11211", AZ: zone}, Listed: true, Present: true, Reachable: true}
}

// zoneCounts counts the slots each zone holds in m.
func zoneCounts(m *cachenodes.SlotMap) map[string]int {
	out := map[string]int{}
	for _, n := range m.Slots() {
		if !n.IsZero() {
			out[n.AZ]++
		}
	}
	return out
}

// twelveInThreeZones is a pool of 12 nodes in zones a, b, c whose
// IDs sort by zone (mc-a-1 … mc-c-4).
func twelveInThreeZones() []NodeView {
	var nodes []NodeView
	for _, z := range []string{"a", "b", "c"} {
		for n := 1; n <= 4; n++ {
			nodes = append(nodes, zoned(z, n))
		}
	}
	return nodes
}

func TestSpreadFirstFillAndReplacement(t *testing.T) {
	nodes := twelveInThreeZones()
	in := Input{Pool: assignPool, NumSlots: 8, Nodes: nodes}
	_, first := runAssign(t, in, nil)
	counts := zoneCounts(first)
	if want := map[string]int{"a": 3, "b": 3, "c": 2}; fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Fatalf("first fill: zones hold %v, want %v (slots %v)", counts, want, slotIDs(first))
	}
	for z, n := range counts {
		if n < 2 || n > 3 {
			t.Errorf("zone %s holds %d slots, want 2 or 3", z, n)
		}
	}
	// Within a zone, the lowest IDs go first.
	for _, id := range []string{"mc-a-1", "mc-a-2", "mc-a-3", "mc-b-1", "mc-b-2", "mc-b-3", "mc-c-1", "mc-c-2"} {
		if first.SlotOf(id) < 0 {
			t.Errorf("%s holds no slot after the first fill: %v", id, slotIDs(first))
		}
	}

	// A dead node's slot goes to a spare in its own zone.
	for _, dead := range []string{"mc-a-2", "mc-b-1", "mc-c-2"} {
		next := slices.Clone(nodes)
		for k := range next {
			if next[k].ID == dead {
				next[k].Listed, next[k].Present, next[k].Reachable, next[k].Due = false, false, false, true
			}
		}
		plan, m := runAssign(t, Input{Pool: assignPool, NumSlots: 8, Prev: first, Nodes: next, Budget: 2}, nil)
		if len(plan.Placements) != 1 {
			t.Fatalf("%s dead: placements %v", dead, placementStrings(plan.Placements))
		}
		p := plan.Placements[0]
		if p.Node.AZ != dead[3:4] || p.Slot != first.SlotOf(dead) {
			t.Errorf("%s dead: its slot %d went to %s in zone %s", dead, first.SlotOf(dead), p.Node.ID, p.Node.AZ)
		}
		if fmt.Sprint(zoneCounts(m)) != fmt.Sprint(counts) {
			t.Errorf("%s dead: zones hold %v, want %v", dead, zoneCounts(m), counts)
		}
	}
}

func TestSpreadOwnZoneFullGoesToFewest(t *testing.T) {
	// Zone a holds 2 of 4 slots (share 2 of two zones), b holds 1 and one
	// slot is vacant; a's holder dies: a without it holds 1 < 2, so a
	// spare of a takes it; the vacant slot goes to b, which holds fewest.
	nodes := []NodeView{zoned("a", 1), zoned("a", 2), zoned("a", 3), zoned("b", 1), zoned("b", 2)}
	prev := mapOfNodes(t, []NodeView{nodes[0], nodes[1], nodes[3], {}}, nil)
	nodes[0].Listed, nodes[0].Present, nodes[0].Reachable, nodes[0].Due = false, false, false, true
	plan, m := runAssign(t, Input{Pool: assignPool, NumSlots: 4, Prev: prev, Nodes: nodes, Budget: 1}, nil)
	if got, want := placementStrings(plan.Placements), []string{"0=mc-a-3", "3=mc-b-2"}; !slices.Equal(got, want) {
		t.Fatalf("placements %v, want %v", got, want)
	}
	if c := zoneCounts(m); c["a"] != 2 || c["b"] != 2 {
		t.Errorf("zones hold %v", c)
	}
}

func TestSpreadNeverEvensOutAlone(t *testing.T) {
	// Everything in zone a, spares in b and c: nothing moves.
	nodes := []NodeView{zoned("a", 1), zoned("a", 2), zoned("b", 1), zoned("c", 1)}
	prev := mapOfNodes(t, []NodeView{nodes[0], nodes[1]}, []NodeView{nodes[2], nodes[3]})
	plan, m := runAssign(t, Input{Pool: assignPool, NumSlots: 2, Prev: prev, Nodes: nodes, Budget: 2}, nil)
	if len(plan.Evictions)+len(plan.Placements) > 0 || m != prev {
		t.Fatalf("the plan moves slots only to even out: %v %v", evictionStrings(plan.Evictions), placementStrings(plan.Placements))
	}
}

func TestSpreadSkipsDrainedZones(t *testing.T) {
	nodes := []NodeView{zoned("a", 1), zoned("a", 2), zoned("b", 1), zoned("b", 2), zoned("c", 1)}
	in := Input{Pool: assignPool, NumSlots: 4, Nodes: nodes, Drained: map[string]bool{"b": true}}
	_, m := runAssign(t, in, nil)
	if c := zoneCounts(m); c["b"] != 0 || c["a"] != 2 || c["c"] != 1 {
		t.Fatalf("zones hold %v with b drained (slots %v)", c, slotIDs(m))
	}
}

// mapOfNodes builds a map of generation 1 with these holders (a zero view:
// a vacant slot) and spares.
func mapOfNodes(t testing.TB, slots, spares []NodeView) *cachenodes.SlotMap {
	t.Helper()
	spec := cachenodes.SlotMapSpec{Pool: assignPool, Generation: 1, UpdatedAt: assignNow.Add(-1)}
	for _, v := range slots {
		spec.Slots = append(spec.Slots, v.Node)
	}
	for _, v := range spares {
		spec.Spares = append(spec.Spares, v.Node)
	}
	m, err := cachenodes.NewSlotMap(spec)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestReturnStepTakesFromTheRichestZone(t *testing.T) {
	// Zone b is drained and returning (target 2); a holds 3 (slots 0, 2,
	// 4), c holds 2 (1, 3), and slot 4 warms. The first return takes a's
	// highest slot that does not warm (2); then a and c hold 2 each: a,
	// first by name, gives its highest slot that does not warm (0).
	a1, a2, a3, b1, b2, c1, c2 := zoned("a", 1), zoned("a", 2), zoned("a", 3), zoned("b", 1), zoned("b", 2), zoned("c", 1), zoned("c", 2)
	spec := cachenodes.SlotMapSpec{Pool: assignPool, Generation: 4, UpdatedAt: assignNow.Add(-1),
		Slots:   []cachenodes.Node{a1.Node, c1.Node, a2.Node, c2.Node, a3.Node},
		Spares:  []cachenodes.Node{b1.Node, b2.Node},
		Warming: []*cachenodes.Warming{nil, nil, nil, nil, {NodeID: "mc-x-9", Addr: "x:1", Until: assignNow.Add(time.Minute)}}}
	prev, err := cachenodes.NewSlotMap(spec)
	if err != nil {
		t.Fatal(err)
	}
	x := zoned("x", 9)
	x.Addr = "x:1"
	in := Input{Pool: assignPool, NumSlots: 5, Prev: prev, Nodes: []NodeView{a1, a2, a3, b1, b2, c1, c2, x}, Now: assignNow,
		Drained: map[string]bool{"b": true}, Steps: map[string]ZoneStep{"b": {Target: 2, Size: 2}}}
	plan := Decide(in)
	if got, want := placementStrings(plan.Placements), []string{"2=mc-b-1", "0=mc-b-2"}; !slices.Equal(got, want) {
		t.Fatalf("return placements %v, want %v", got, want)
	}
	if o := plan.Steps["b"]; o.Moved != 2 || o.Blocked != "" {
		t.Fatalf("step outcome %+v", o)
	}
	next, err := Build(in, plan, plan.Placements, assignNow)
	if err != nil {
		t.Fatal(err)
	}
	if next.Warming(4) == nil || next.Generation() != 4 || next.Incoming(2).NodeID != "mc-b-1" || next.Incoming(0).NodeID != "mc-b-2" {
		t.Fatalf("the warming of slot 4 was lost, the generation is %d, or the returns are not announced: %v, %v", next.Generation(), next.Incoming(2), next.Incoming(0))
	}

	// Without a spare of its own, the return is blocked and says so.
	in.Nodes = []NodeView{a1, a2, a3, c1, c2, x}
	plan = Decide(in)
	if o := plan.Steps["b"]; o.Moved != 0 || !strings.Contains(o.Blocked, "no spare in zone \"b\"") {
		t.Fatalf("step outcome without spares %+v", o)
	}
}
