package slotplan

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
)

// The tests of Decide and Build name nodes "<zone letter><number>": node
// "b7" lives in zone "az-b", so IDs sort by zone first and a test can see
// at a glance which spare shares a zone with the node that left.

const assignPool = "default"

// assignPrevAt is the updated_at of every previous map; assignNow is the
// moment of the pass under test.
var (
	assignPrevAt = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	assignNow    = time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
)

// cacheNode returns the node id as Consul lists it by default.
func cacheNode(id string) cachenodes.Node {
	return cachenodes.Node{ID: id, Addr: id + ".cache:11211", AZ: "az-" + id[:1]}
}

// vUp is a node listed with every check passing that answers probes: a
// ready spare or a serving slot holder.
func vUp(id string) NodeView {
	return NodeView{Node: cacheNode(id), Listed: true, Present: true, Reachable: true}
}

// vAway is a node missing from Consul that still answers probes (a Consul
// agent restart): it is never due.
func vAway(id string) NodeView {
	v := vUp(id)
	v.Listed, v.Present = false, false
	return v
}

// vFailing is a node gone from Consul and unreachable, inside its hold.
func vFailing(id string) NodeView {
	v := vAway(id)
	v.Reachable = false
	return v
}

// vDue is a node absent and unreachable for the whole hold.
func vDue(id string) NodeView {
	v := vFailing(id)
	v.Due = true
	return v
}

// vDueListed is a due node that Consul still lists with a failing check.
func vDueListed(id string) NodeView {
	v := vDue(id)
	v.Listed = true
	return v
}

// vMaint is a node in Consul maintenance mode (its maintenance check is
// critical, so it is not present) that still answers probes.
func vMaint(id string) NodeView {
	v := vUp(id)
	v.Present, v.Maintenance = false, true
	return v
}

// vMaintPassing is a maintenance node that otherwise looks ready: only the
// Maintenance flag keeps it out.
func vMaintPassing(id string) NodeView {
	v := vUp(id)
	v.Maintenance = true
	return v
}

// vFlapping is a ready node that flap damping keeps from promotion.
func vFlapping(id string) NodeView {
	v := vUp(id)
	v.Suppressed = true
	return v
}

// vUnreachable is a node Consul lists as passing that mcrib cannot reach.
func vUnreachable(id string) NodeView {
	v := vUp(id)
	v.Reachable = false
	return v
}

// vNotPresent is a listed, reachable node with a failing Consul check.
func vNotPresent(id string) NodeView {
	v := vUp(id)
	v.Present = false
	return v
}

// vMoved is a ready node that Consul now lists at addr.
func vMoved(id, addr string) NodeView {
	v := vUp(id)
	v.Addr = addr
	return v
}

// vUpAt is vUp under another zone.
func vUpAt(id, az string) NodeView {
	v := vUp(id)
	v.AZ = az
	return v
}

// slotMapOf builds a previous map from slot holder IDs ("" for a vacant
// slot) and spare IDs, each node with its default address and zone.
func slotMapOf(t testing.TB, gen uint64, slots, spares []string) *cachenodes.SlotMap {
	t.Helper()
	spec := cachenodes.SlotMapSpec{Pool: assignPool, Generation: gen, UpdatedAt: assignPrevAt}
	for _, id := range slots {
		if id == "" {
			spec.Slots = append(spec.Slots, cachenodes.Node{})
			continue
		}
		spec.Slots = append(spec.Slots, cacheNode(id))
	}
	for _, id := range spares {
		spec.Spares = append(spec.Spares, cacheNode(id))
	}
	m, err := cachenodes.NewSlotMap(spec)
	if err != nil {
		t.Fatalf("building the previous map: %v", err)
	}
	return m
}

// slotIDs returns the node ID of every slot of m, "" for a vacant slot.
func slotIDs(m *cachenodes.SlotMap) []string {
	ids := make([]string, m.NumSlots())
	for i := range ids {
		ids[i] = m.Slot(i).ID
	}
	return ids
}

// nodeIDs returns the IDs of nodes in order.
func nodeIDs(nodes []cachenodes.Node) []string {
	ids := make([]string, len(nodes))
	for i, n := range nodes {
		ids[i] = n.ID
	}
	return ids
}

// evictionStrings renders evictions as "slot=id/reason".
func evictionStrings(evs []Eviction) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, fmt.Sprintf("%d=%s/%s", ev.Slot, ev.Node.ID, ev.Reason))
	}
	return out
}

// placementStrings renders placements as "slot=id".
func placementStrings(ps []Placement) []string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%d=%s", p.Slot, p.Node.ID))
	}
	return out
}

// carriedOut returns the placements of plan whose node is not in failed:
// what a loop passes to Build when the flush of each failed node failed.
func carriedOut(plan Plan, failed []string) []Placement {
	done := []Placement{}
	for _, p := range plan.Placements {
		if !slices.Contains(failed, p.Node.ID) {
			done = append(done, p)
		}
	}
	return done
}

// checkSlotMap asserts the rules of the slot map document (docs/api.md)
// on m: num_slots entries, vacant slots with empty strings, holders with
// an address, no node twice across slots and spares, spares sorted by ID,
// and a JSON round trip that gives the same document back.
func checkSlotMap(t testing.TB, m *cachenodes.SlotMap, numSlots int) {
	t.Helper()
	if m == nil {
		t.Fatalf("slot map is nil")
	}
	if m.NumSlots() != numSlots || len(m.Slots()) != numSlots {
		t.Errorf("slot map has %d slots (%d listed), want %d", m.NumSlots(), len(m.Slots()), numSlots)
	}
	seen := make(map[string]string)
	for i, n := range m.Slots() {
		if n.IsZero() {
			if n != (cachenodes.Node{}) {
				t.Errorf("vacant slot %d is %+v, want empty strings", i, n)
			}
			continue
		}
		if n.Addr == "" {
			t.Errorf("slot %d holds %q without an address", i, n.ID)
		}
		if m.IsTwin(i) {
			continue // slot s's node, checked there
		}
		if where, dup := seen[n.ID]; dup {
			t.Errorf("node %q in slot %d also appears in %s", n.ID, i, where)
		}
		seen[n.ID] = fmt.Sprintf("slot %d", i)
	}
	spares := m.Spares()
	for i, n := range spares {
		if n.IsZero() {
			t.Errorf("spare %d has no node ID", i)
		}
		if where, dup := seen[n.ID]; dup {
			t.Errorf("spare %q also appears in %s", n.ID, where)
		}
		seen[n.ID] = "the spares"
		if i > 0 && spares[i-1].ID >= n.ID {
			t.Errorf("spares not sorted by ID: %q before %q", spares[i-1].ID, n.ID)
		}
	}
	data, err := m.MarshalJSON()
	if err != nil {
		t.Fatalf("marshalling the slot map: %v", err)
	}
	back, err := cachenodes.ParseSlotMap(data)
	if err != nil {
		t.Fatalf("parsing the slot map back: %v\n%s", err, data)
	}
	if !back.Equal(m) || !back.UpdatedAt().Equal(m.UpdatedAt()) {
		t.Errorf("slot map changed in a JSON round trip:\n%s", data)
	}
}

// checkPlan asserts what every plan must satisfy whatever the input:
// nothing moves while frozen, evictions stay within Budget and only take
// due or maintenance holders out, placements only fill slots that are
// vacant after the evictions, with eligible nodes that hold no other slot,
// were not evicted in the same pass, and appear once.
func checkPlan(t testing.TB, in Input, plan Plan) {
	t.Helper()
	if plan.FirstFill != (in.Prev == nil) {
		t.Errorf("FirstFill = %v with Prev nil = %v", plan.FirstFill, in.Prev == nil)
	}
	if in.Frozen && (len(plan.Evictions) > 0 || len(plan.Placements) > 0) {
		t.Errorf("frozen, but the plan evicts %v and places %v", evictionStrings(plan.Evictions), placementStrings(plan.Placements))
	}
	if len(plan.Evictions) > max(in.Budget, 0) {
		t.Errorf("%d evictions beyond a budget of %d", len(plan.Evictions), in.Budget)
	}
	if plan.Blocked < 0 {
		t.Errorf("Blocked = %d", plan.Blocked)
	}
	views := make(map[string]NodeView, len(in.Nodes))
	for _, v := range in.Nodes {
		views[v.ID] = v
	}
	vacant := make([]bool, in.NumSlots)
	holder := make(map[string]int)
	for i := range vacant {
		if in.Prev == nil || i >= in.Prev.NumSlots() || in.Prev.Slot(i).IsZero() {
			vacant[i] = true
			continue
		}
		holder[in.Prev.Slot(i).ID] = i
	}
	evicted := make(map[string]bool)
	for _, ev := range plan.Evictions {
		if ev.Slot < 0 || ev.Slot >= in.NumSlots {
			t.Errorf("eviction from slot %d out of range", ev.Slot)
			continue
		}
		if slot, ok := holder[ev.Node.ID]; !ok || slot != ev.Slot {
			t.Errorf("eviction of %q from slot %d, which it does not hold", ev.Node.ID, ev.Slot)
		}
		if evicted[ev.Node.ID] || vacant[ev.Slot] {
			t.Errorf("eviction %d=%s twice or from a vacant slot", ev.Slot, ev.Node.ID)
		}
		v := views[ev.Node.ID]
		switch ev.Reason {
		case "maintenance":
			if !v.Maintenance {
				t.Errorf("node %q evicted for maintenance but not in maintenance: %+v", ev.Node.ID, v)
			}
		case "hold_expired":
			if (!v.Due && (!ev.Move || !v.DueSoon)) || v.Maintenance {
				t.Errorf("node %q evicted with hold_expired but the view is %+v", ev.Node.ID, v)
			}
		default:
			t.Errorf("eviction of %q has reason %q", ev.Node.ID, ev.Reason)
		}
		if !strings.Contains(ev.Why, ev.Node.ID) {
			t.Errorf("eviction Why %q does not name the node %q", ev.Why, ev.Node.ID)
		}
		evicted[ev.Node.ID] = true
		vacant[ev.Slot] = true
	}
	placedSlot := make(map[int]bool)
	placedNode := make(map[string]bool)
	for _, p := range plan.Placements {
		if p.Slot < 0 || p.Slot >= in.NumSlots {
			t.Errorf("placement into slot %d out of range", p.Slot)
			continue
		}
		if !vacant[p.Slot] {
			t.Errorf("placement of %q into slot %d, which is not vacant", p.Node.ID, p.Slot)
		}
		if placedSlot[p.Slot] || placedNode[p.Node.ID] {
			t.Errorf("placement %d=%s repeats a slot or a node", p.Slot, p.Node.ID)
		}
		placedSlot[p.Slot], placedNode[p.Node.ID] = true, true
		if evicted[p.Node.ID] {
			t.Errorf("node %q placed back in the pass that evicted it", p.Node.ID)
		} else if slot, ok := holder[p.Node.ID]; ok {
			t.Errorf("node %q placed into slot %d while it holds slot %d", p.Node.ID, p.Slot, slot)
		}
		v, ok := views[p.Node.ID]
		if !ok || !v.Listed || !v.Present || v.Maintenance || !v.Reachable || v.Suppressed {
			t.Errorf("node %q placed but not an eligible spare: %+v (known %v)", p.Node.ID, v, ok)
		}
		if ok && p.Node != v.Node {
			t.Errorf("placement carries %+v, the node is %+v", p.Node, v.Node)
		}
	}
}

// checkNext asserts what Build must give for in, plan and done: the slots
// of the previous map less the evictions plus the placements carried out,
// the addresses of listed holders refreshed, the spares rebuilt, the
// generation up by one exactly when a slot's node changed, and updated_at
// moved exactly when the document changed.
func checkNext(t testing.TB, in Input, plan Plan, done []Placement, next *cachenodes.SlotMap, at time.Time) {
	t.Helper()
	checkSlotMap(t, next, in.NumSlots)
	if next.Pool() != in.Pool {
		t.Errorf("pool = %q, want %q", next.Pool(), in.Pool)
	}
	views := make(map[string]NodeView, len(in.Nodes))
	for _, v := range in.Nodes {
		views[v.ID] = v
	}
	want := make([]cachenodes.Node, in.NumSlots)
	if in.Prev != nil {
		copy(want, in.Prev.Slots())
	}
	placedAt := map[int]bool{}
	for _, p := range done {
		placedAt[p.Slot] = true
	}
	for _, ev := range plan.Evictions {
		if want[ev.Slot].ID == ev.Node.ID && (!ev.Move || placedAt[ev.Slot]) {
			want[ev.Slot] = cachenodes.Node{}
		}
	}
	for _, p := range done {
		if want[p.Slot].IsZero() {
			want[p.Slot] = p.Node
		}
	}
	inSlot := make(map[string]bool)
	for i, n := range want {
		if n.IsZero() {
			continue
		}
		inSlot[n.ID] = true
		if v, ok := views[n.ID]; ok && v.Listed && v.Addr != "" {
			want[i] = v.Node
		}
	}
	if got := next.Slots(); !slices.Equal(got, want) {
		t.Errorf("slots = %v, want %v", got, want)
	}
	// The spares, by ID: each memcached (address) once, and none that a
	// slot holder has.
	byID := slices.Clone(in.Nodes)
	slices.SortFunc(byID, func(a, b NodeView) int { return strings.Compare(a.ID, b.ID) })
	addrTaken := make(map[string]bool)
	for _, n := range want {
		if n.Addr != "" {
			addrTaken[n.Addr] = true
		}
	}
	var wantSpares []string
	for _, v := range byID {
		if !inSlot[v.ID] && v.Listed && v.Present && !v.Maintenance && v.Reachable && !addrTaken[v.Addr] {
			addrTaken[v.Addr] = true
			wantSpares = append(wantSpares, v.ID)
		}
	}
	if got := nodeIDs(next.Spares()); !slices.Equal(got, wantSpares) && len(got)+len(wantSpares) > 0 {
		t.Errorf("spares = %v, want %v", got, wantSpares)
	}
	for _, n := range next.Spares() {
		if n != views[n.ID].Node {
			t.Errorf("spare %+v, the node is %+v", n, views[n.ID].Node)
		}
	}
	switch {
	case in.Prev == nil:
		if next.Generation() != 1 || next.Revision() != 1 || !next.UpdatedAt().Equal(at) {
			t.Errorf("first map: generation %d revision %d at %v, want 1, 1 at %v", next.Generation(), next.Revision(), next.UpdatedAt(), at)
		}
	case !next.SameSlots(in.Prev):
		if next.Generation() != in.Prev.Generation()+1+genBetween(plan, done) || !next.UpdatedAt().Equal(at) {
			t.Errorf("slots changed: generation %d at %v, want %d at %v",
				next.Generation(), next.UpdatedAt(), in.Prev.Generation()+1, at)
		}
	case next.Generation() != in.Prev.Generation():
		t.Errorf("no slot's node changed, but the generation went from %d to %d", in.Prev.Generation(), next.Generation())
	case next.Equal(in.Prev):
		if next != in.Prev {
			t.Errorf("document unchanged, but Build returned a new map instead of Prev")
		}
		if !next.UpdatedAt().Equal(in.Prev.UpdatedAt()) {
			t.Errorf("document unchanged, but updated_at moved to %v", next.UpdatedAt())
		}
	default:
		if !next.UpdatedAt().Equal(at) {
			t.Errorf("document changed (addresses or spares), but updated_at is %v, want %v", next.UpdatedAt(), at)
		}
		if next.Revision() <= in.Prev.Revision() {
			t.Errorf("document changed, but its revision %d is not above %d", next.Revision(), in.Prev.Revision())
		}
	}
}

// genBetween is how many generations a pass that announced done takes
// before the pass that serves them: one when it also vacated a slot.
func genBetween(plan Plan, done []Placement) uint64 {
	if plan.FirstFill || len(done) == 0 {
		return 0
	}
	for _, ev := range plan.Evictions {
		if !ev.Move {
			return 1
		}
	}
	return 0
}

// runAssign runs one pass and, when it announced anything, the pass that
// serves it: Decide on in, Build with the placements whose node is not in
// failed, at assignNow (the announces: incoming nodes, checkAnnounced);
// then, AnnounceLead later, Decide on that map with the loop's own views
// of its announces and Build of the serves alone (checkServed). It checks
// every invariant of the plan and of the maps, and that no call changed
// its input, and returns the first plan and the last map.
func runAssign(t testing.TB, in Input, failed []string) (Plan, *cachenodes.SlotMap) {
	t.Helper()
	nodesBefore := slices.Clone(in.Nodes)
	var prevBefore []byte
	if in.Prev != nil {
		var err error
		if prevBefore, err = in.Prev.MarshalJSON(); err != nil {
			t.Fatalf("marshalling Prev: %v", err)
		}
	}
	plan := Decide(in)
	checkPlan(t, in, plan)
	done := carriedOut(plan, failed)
	next, err := Build(in, plan, done, buildAt(in))
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	if !reflect.DeepEqual(in.Nodes, nodesBefore) {
		t.Errorf("Decide or Build changed in.Nodes")
	}
	if in.Prev != nil {
		if after, _ := in.Prev.MarshalJSON(); string(after) != string(prevBefore) {
			t.Errorf("Decide or Build changed Prev:\nbefore %s\nafter  %s", prevBefore, after)
		}
	}
	if plan.FirstFill || len(done) == 0 {
		checkNext(t, in, plan, done, next, buildAt(in))
		return plan, next
	}
	checkAnnounced(t, in, done, next)
	final := serveAll(t, in, plan, done, next)
	checkNext(t, in, plan, done, final, buildAt(in).Add(cachenodes.AnnounceLead))
	return plan, final
}

// buildAt is when a test's pass over in builds its map: in.Now, or
// assignNow when in has none.
func buildAt(in Input) time.Time {
	if in.Now.IsZero() {
		return assignNow
	}
	return in.Now
}

// serveAll runs the pass that serves the announces done of in's pass,
// which built announced: AnnounceLead after it, with the loop's own views
// of them, building only what serves (no new announce), and returns the
// served map.
func serveAll(t testing.TB, in Input, plan Plan, done []Placement, announced *cachenodes.SlotMap) *cachenodes.SlotMap {
	t.Helper()
	at := buildAt(in).Add(cachenodes.AnnounceLead)
	in2 := in
	in2.Prev, in2.Now, in2.Incoming = announced, at, ownIncoming(announced, done)
	in2.Replace, in2.Steps, in2.Split, in2.Budget = "", nil, 0, 0
	if in.WarmEnds != nil {
		in2.WarmEnds = in.WarmEnds
	}
	plan2 := Decide(in2)
	if len(plan2.Drops) > 0 || len(plan2.Serves) != len(done) {
		t.Fatalf("serving %v: serves %v, drops %+v", placementStrings(done), placementStrings(plan2.Serves), plan2.Drops)
	}
	plan2.Placements, plan2.Evictions = nil, nil
	final, err := Build(in2, plan2, nil, at)
	if err != nil {
		t.Fatalf("Build of the serves: %v", err)
	}
	if final.AnyIncoming() {
		t.Errorf("an incoming node is left after every announce served: %v", final)
	}
	return final
}

// ownIncoming returns the loop's views of the announces of m that done
// made: its own, judged, serving at their serves_at.
func ownIncoming(m *cachenodes.SlotMap, done []Placement) []IncomingView {
	out := make([]IncomingView, m.NumSlots())
	for _, p := range done {
		if ni := m.Incoming(p.Slot); ni != nil {
			out[p.Slot] = IncomingView{ServesAt: ni.ServesAt, Judged: true, Own: true, Reason: p.Reason}
		}
	}
	return out
}

// checkAnnounced asserts what Build gives for the announces done of in's
// pass: each placement done is its slot's incoming node, serving
// AnnounceLead after assignNow, until WarmFor after that, with the slot's
// holder unchanged (a due holder vacated without a spare aside), in the
// same generation and a revision one higher, and no incoming node among
// the spares.
func checkAnnounced(t testing.TB, in Input, done []Placement, next *cachenodes.SlotMap) {
	t.Helper()
	checkSlotMap(t, next, in.NumSlots)
	wantGen := in.Prev.Generation()
	if !next.SameSlots(in.Prev) {
		wantGen++ // a due holder without a spare left its slot in the same pass
	}
	if next.Generation() != wantGen || next.Revision() != in.Prev.Revision()+1 {
		t.Errorf("announce: generation %d revision %d, want %d and %d", next.Generation(), next.Revision(), wantGen, in.Prev.Revision()+1)
	}
	at := buildAt(in).Add(cachenodes.AnnounceLead)
	for _, p := range done {
		ni := next.Incoming(p.Slot)
		if ni == nil || ni.NodeID != p.Node.ID || ni.Addr != p.Node.Addr || !ni.ServesAt.Equal(at) || !ni.Until.Equal(at.Add(max(in.WarmFor, 0))) {
			t.Errorf("slot %d's incoming %+v, want %s at %s serving from %v", p.Slot, ni, p.Node.ID, p.Node.Addr, at)
		}
		if in.Prev != nil && next.Slot(p.Slot).ID != in.Prev.Slot(p.Slot).ID {
			t.Errorf("slot %d changed hands in the announce: %q, was %q", p.Slot, next.Slot(p.Slot).ID, in.Prev.Slot(p.Slot).ID)
		}
	}
	for _, n := range next.Spares() {
		if next.IncomingOf(n.ID) >= 0 {
			t.Errorf("incoming node %s is listed as a spare", n.ID)
		}
	}
}

func TestDecideBuild(t *testing.T) {
	tests := []struct {
		name       string
		numSlots   int      // 0: len(prev)
		prev       []string // slot holders of the previous map; nil: a new pool
		prevSpares []string
		prevGen    uint64
		nodes      []NodeView
		frozen     bool
		budget     int
		failed     []string // nodes whose placement flush failed

		wantEvict   []string // "slot=id/reason"
		wantPlace   []string // "slot=id"
		wantBlocked int
		wantSlots   []string
		wantSpares  []string
		wantGen     uint64
		wantSame    bool // Build returns Prev itself
		wantTouched bool // updated_at is assignNow
	}{
		// First fill of a new pool.
		{
			name:      "first fill spreads over the zones, lowest ID within each, and keeps the rest as sorted spares",
			numSlots:  3,
			nodes:     []NodeView{vUp("c1"), vUp("a2"), vUp("b2"), vUp("a1"), vUp("b1")},
			budget:    0, // a first fill replaces no holder
			wantPlace: []string{"0=a1", "1=b1", "2=c1"},
			wantSlots: []string{"a1", "b1", "c1"}, wantSpares: []string{"a2", "b2"},
			wantGen: 1, wantTouched: true,
		},
		{
			name:      "first fill with fewer nodes than slots leaves the rest vacant",
			numSlots:  4,
			nodes:     []NodeView{vUp("b1"), vUp("a1")},
			wantPlace: []string{"0=a1", "1=b1"},
			wantSlots: []string{"a1", "b1", "", ""},
			wantGen:   1, wantTouched: true,
		},
		{
			name:     "first fill takes only eligible nodes",
			numSlots: 3,
			nodes: []NodeView{vFlapping("a1"), vUnreachable("a2"), vMaintPassing("a3"), vNotPresent("a4"),
				vAway("a5"), vUp("c1"), vUp("b1")},
			wantPlace: []string{"0=b1", "1=c1"},
			wantSlots: []string{"b1", "c1", ""}, wantSpares: []string{"a1"},
			wantGen: 1, wantTouched: true,
		},
		{
			name:      "first fill without any node writes a vacant map",
			numSlots:  2,
			wantSlots: []string{"", ""},
			wantGen:   1, wantTouched: true,
		},
		{
			name:      "first fill while frozen places nothing",
			numSlots:  2,
			nodes:     []NodeView{vUp("a1"), vUp("b1")},
			frozen:    true,
			wantSlots: []string{"", ""}, wantSpares: []string{"a1", "b1"},
			wantGen: 1, wantTouched: true,
		},

		// Unchanged membership.
		{
			name: "unchanged membership returns the very same map",
			prev: []string{"a1", "b1", "c1"}, prevSpares: []string{"d1"}, prevGen: 7,
			nodes:     []NodeView{vUp("d1"), vUp("c1"), vUp("b1"), vUp("a1")},
			budget:    2,
			wantSlots: []string{"a1", "b1", "c1"}, wantSpares: []string{"d1"},
			wantGen: 7, wantSame: true,
		},
		{
			name: "unchanged with a vacant slot and no spare",
			prev: []string{"a1", ""}, prevGen: 3,
			nodes:     []NodeView{vUp("a1")},
			budget:    2,
			wantSlots: []string{"a1", ""},
			wantGen:   3, wantSame: true,
		},

		// The hold: reachable or not yet due holders stay.
		{
			name: "absent but reachable holder keeps its slot",
			prev: []string{"a1", "b1"}, prevSpares: []string{"c1"}, prevGen: 2,
			nodes:     []NodeView{vAway("a1"), vUp("b1"), vUp("c1")},
			budget:    2,
			wantSlots: []string{"a1", "b1"}, wantSpares: []string{"c1"},
			wantGen: 2, wantSame: true,
		},
		{
			name: "absent and unreachable holder inside its hold keeps its slot",
			prev: []string{"a1", "b1"}, prevSpares: []string{"c1"}, prevGen: 2,
			nodes:     []NodeView{vFailing("a1"), vUp("b1"), vUp("c1")},
			budget:    2,
			wantSlots: []string{"a1", "b1"}, wantSpares: []string{"c1"},
			wantGen: 2, wantSame: true,
		},
		{
			name: "holder the loop knows nothing of keeps its slot",
			prev: []string{"a1", "b1"}, prevSpares: []string{"c1"}, prevGen: 2,
			nodes:     []NodeView{vUp("b1"), vUp("c1")},
			budget:    2,
			wantSlots: []string{"a1", "b1"}, wantSpares: []string{"c1"},
			wantGen: 2, wantSame: true,
		},
		{
			name: "due holder is evicted and a spare placed in the same pass",
			prev: []string{"a1", "b1", "c1"}, prevSpares: []string{"a2", "d1"}, prevGen: 4,
			nodes:     []NodeView{vDue("a1"), vUp("b1"), vUp("c1"), vUp("a2"), vUp("d1")},
			budget:    1,
			wantEvict: []string{"0=a1/hold_expired"}, wantPlace: []string{"0=a2"},
			wantSlots: []string{"a2", "b1", "c1"}, wantSpares: []string{"d1"},
			wantGen: 5, wantTouched: true,
		},
		{
			name: "due holder still listed with a failing check is evicted",
			prev: []string{"a1", "b1"}, prevSpares: []string{"c1"}, prevGen: 4,
			nodes:     []NodeView{vUp("a1"), vDueListed("b1"), vUp("c1")},
			budget:    1,
			wantEvict: []string{"1=b1/hold_expired"}, wantPlace: []string{"1=c1"},
			wantSlots: []string{"a1", "c1"},
			wantGen:   5, wantTouched: true,
		},
		{
			name: "maintenance holder is evicted without waiting for the hold",
			prev: []string{"a1", "b1"}, prevSpares: []string{"c1"}, prevGen: 4,
			nodes:     []NodeView{vMaint("a1"), vUp("b1"), vUp("c1")},
			budget:    1,
			wantEvict: []string{"0=a1/maintenance"}, wantPlace: []string{"0=c1"},
			wantSlots: []string{"c1", "b1"},
			wantGen:   5, wantTouched: true,
		},
		{
			name: "a due and a maintenance holder in one pass move the generation once",
			prev: []string{"a1", "b1", "c1"}, prevSpares: []string{"d1", "e1"}, prevGen: 9,
			nodes:     []NodeView{vDue("a1"), vUp("b1"), vMaint("c1"), vUp("d1"), vUp("e1")},
			budget:    2,
			wantEvict: []string{"0=a1/hold_expired", "2=c1/maintenance"}, wantPlace: []string{"0=d1", "2=e1"},
			wantSlots: []string{"d1", "b1", "e1"},
			wantGen:   10, wantTouched: true,
		},

		// Freeze.
		{
			name: "frozen: no eviction and no placement, spares still refreshed",
			prev: []string{"a1", "b1", "c1", ""}, prevSpares: []string{"d1", "e1"}, prevGen: 3,
			nodes:  []NodeView{vDue("a1"), vMaint("b1"), vUp("c1"), vUp("e1"), vUp("f1")},
			frozen: true, budget: 5,
			wantBlocked: 2,
			wantSlots:   []string{"a1", "b1", "c1", ""}, wantSpares: []string{"e1", "f1"},
			wantGen: 3, wantTouched: true,
		},

		// The ceiling.
		{
			name: "budget 0 evicts nothing but still fills a vacant slot",
			prev: []string{"a1", ""}, prevSpares: []string{"c1"}, prevGen: 6,
			nodes:       []NodeView{vDue("a1"), vUp("c1")},
			budget:      0,
			wantPlace:   []string{"1=c1"},
			wantBlocked: 1,
			wantSlots:   []string{"a1", "c1"},
			wantGen:     7, wantTouched: true,
		},
		{
			name: "negative budget evicts nothing",
			prev: []string{"a1", "b1"}, prevSpares: []string{"c1"}, prevGen: 6,
			nodes:       []NodeView{vDue("a1"), vMaint("b1"), vUp("c1")},
			budget:      -1,
			wantBlocked: 2,
			wantSlots:   []string{"a1", "b1"}, wantSpares: []string{"c1"},
			wantGen: 6, wantSame: true,
		},

		// Free before place.
		{
			name: "full table: the due holder leaves and a spare takes its slot",
			prev: []string{"a1", "b1"}, prevSpares: []string{"c1", "d1", "e1"}, prevGen: 2,
			nodes:     []NodeView{vUp("a1"), vDue("b1"), vUp("c1"), vUp("d1"), vUp("e1")},
			budget:    2,
			wantEvict: []string{"1=b1/hold_expired"}, wantPlace: []string{"1=c1"},
			wantSlots: []string{"a1", "c1"}, wantSpares: []string{"d1", "e1"},
			wantGen: 3, wantTouched: true,
		},
		{
			name: "fewer nodes than slots: a due holder without a spare leaves its slot vacant",
			prev: []string{"a1", "b1", "c1"}, prevGen: 2,
			nodes:     []NodeView{vUp("a1"), vDue("b1"), vUp("c1")},
			budget:    2,
			wantEvict: []string{"1=b1/hold_expired"},
			wantSlots: []string{"a1", "", "c1"},
			wantGen:   3, wantTouched: true,
		},
		{
			name: "vacant slots are filled in slot order",
			prev: []string{"", "a1", ""}, prevSpares: []string{"b1", "c1", "d1"}, prevGen: 2,
			nodes:     []NodeView{vUp("a1"), vUp("d1"), vUp("c1"), vUp("b1")},
			budget:    0,
			wantPlace: []string{"0=b1", "2=c1"},
			wantSlots: []string{"b1", "a1", "c1"}, wantSpares: []string{"d1"},
			wantGen: 3, wantTouched: true,
		},

		// Zone preference.
		{
			name: "the spare in the evicted node's zone wins over a lower ID",
			prev: []string{"c1", "b1"}, prevSpares: []string{"a5", "b7", "c3"}, prevGen: 1,
			nodes:     []NodeView{vUp("c1"), vDue("b1"), vUp("a5"), vUp("c3"), vUp("b7")},
			budget:    1,
			wantEvict: []string{"1=b1/hold_expired"}, wantPlace: []string{"1=b7"},
			wantSlots: []string{"c1", "b7"}, wantSpares: []string{"a5", "c3"},
			wantGen: 2, wantTouched: true,
		},
		{
			name: "without a spare in the zone the lowest ID wins",
			prev: []string{"c1", "b1"}, prevSpares: []string{"a5", "c3"}, prevGen: 1,
			nodes:     []NodeView{vUp("c1"), vDue("b1"), vUp("c3"), vUp("a5")},
			budget:    1,
			wantEvict: []string{"1=b1/hold_expired"}, wantPlace: []string{"1=a5"},
			wantSlots: []string{"c1", "a5"}, wantSpares: []string{"c3"},
			wantGen: 2, wantTouched: true,
		},
		{
			name: "each vacated slot gets a spare of its own zone",
			prev: []string{"a1", "b1", "c1"}, prevSpares: []string{"a2", "b2", "c2"}, prevGen: 1,
			nodes:     []NodeView{vDue("a1"), vUp("b1"), vMaint("c1"), vUp("c2"), vUp("b2"), vUp("a2")},
			budget:    2,
			wantEvict: []string{"0=a1/hold_expired", "2=c1/maintenance"}, wantPlace: []string{"0=a2", "2=c2"},
			wantSlots: []string{"a2", "b1", "c2"}, wantSpares: []string{"b2"},
			wantGen: 2, wantTouched: true,
		},
		{
			name: "a vacated slot takes its zone's spare before an already vacant slot",
			prev: []string{"", "b1"}, prevSpares: []string{"b2", "c1"}, prevGen: 3,
			nodes:     []NodeView{vDue("b1"), vUp("b2"), vUp("c1")},
			budget:    1,
			wantEvict: []string{"1=b1/hold_expired"}, wantPlace: []string{"1=b2", "0=c1"},
			wantSlots: []string{"c1", "b2"}, wantSpares: []string{},
			wantGen: 4, wantTouched: true,
		},
		{
			name: "zone preference only among eligible spares",
			prev: []string{"c1", "b1"}, prevSpares: []string{"b2", "c3"}, prevGen: 1,
			nodes: []NodeView{vUp("c1"), vDue("b1"), vFlapping("b2"), vUnreachable("b3"),
				vMaintPassing("b4"), vUp("c3")},
			budget:    1,
			wantEvict: []string{"1=b1/hold_expired"}, wantPlace: []string{"1=c3"},
			wantSlots: []string{"c1", "c3"}, wantSpares: []string{"b2"},
			wantGen: 2, wantTouched: true,
		},
		{
			name: "zone is taken from the node Consul lists, not the ID",
			prev: []string{"a1", "b1"}, prevSpares: []string{"a2"}, prevGen: 1,
			nodes:     []NodeView{vUp("a1"), vDue("b1"), vUp("a2"), vUpAt("c9", "az-b")},
			budget:    1,
			wantEvict: []string{"1=b1/hold_expired"}, wantPlace: []string{"1=c9"},
			wantSlots: []string{"a1", "c9"}, wantSpares: []string{"a2"},
			wantGen: 2, wantTouched: true,
		},

		// Eligibility of spares.
		{
			name: "flapping, unreachable, non-present, unlisted and maintenance spares are never placed",
			prev: []string{"", "", "z1"}, prevGen: 5,
			nodes: []NodeView{vFlapping("a1"), vUnreachable("a2"), vNotPresent("a3"), vMaintPassing("a4"),
				vMaint("a5"), vAway("a6"), vFailing("a7"), vDue("a8"), vUp("b9"), vUp("z1")},
			budget:    3,
			wantPlace: []string{"0=b9"},
			wantSlots: []string{"b9", "", "z1"}, wantSpares: []string{"a1"},
			wantGen: 6, wantTouched: true,
		},
		{
			name: "an evicted node is not placed back in the same pass",
			prev: []string{"a1", ""}, prevGen: 5,
			// Due yet looking ready: only the same-pass rule keeps it out.
			nodes:     []NodeView{func() NodeView { v := vUp("a1"); v.Due = true; return v }()},
			budget:    1,
			wantEvict: []string{"0=a1/hold_expired"},
			wantSlots: []string{"", ""}, wantSpares: []string{"a1"},
			wantGen: 6, wantTouched: true,
		},

		// Placements not carried out (the flush failed).
		{
			// The announce is not written: the due holder keeps its slot,
			// and the next pass announces again.
			name: "failed flush of a replacement's spare leaves the due holder in its slot",
			prev: []string{"a1", "b1"}, prevSpares: []string{"c1"}, prevGen: 4,
			nodes:     []NodeView{vDue("a1"), vUp("b1"), vUp("c1")},
			budget:    1,
			failed:    []string{"c1"},
			wantEvict: []string{"0=a1/hold_expired"}, wantPlace: []string{"0=c1"},
			wantSlots: []string{"a1", "b1"}, wantSpares: []string{"c1"},
			wantGen: 4, wantSame: true,
		},
		{
			name: "failed flush into a vacant slot changes nothing",
			prev: []string{"a1", ""}, prevSpares: []string{"c1"}, prevGen: 4,
			nodes:     []NodeView{vUp("a1"), vUp("c1")},
			budget:    1,
			failed:    []string{"c1"},
			wantPlace: []string{"1=c1"},
			wantSlots: []string{"a1", ""}, wantSpares: []string{"c1"},
			wantGen: 4, wantSame: true,
		},
		{
			name: "one of two placements fails",
			prev: []string{"", ""}, prevSpares: []string{"a1", "b1"}, prevGen: 4,
			nodes:     []NodeView{vUp("a1"), vUp("b1")},
			failed:    []string{"a1"},
			wantPlace: []string{"0=a1", "1=b1"},
			wantSlots: []string{"", "b1"}, wantSpares: []string{"a1"},
			wantGen: 5, wantTouched: true,
		},
		{
			name:      "first fill with a failed placement still writes generation 1",
			numSlots:  2,
			nodes:     []NodeView{vUp("a1"), vUp("b1")},
			failed:    []string{"a1"},
			wantPlace: []string{"0=a1", "1=b1"},
			wantSlots: []string{"", "b1"}, wantSpares: []string{"a1"},
			wantGen: 1, wantTouched: true,
		},

		// Addresses and spares without a change of any slot's node.
		{
			name: "address change of a listed holder keeps the generation",
			prev: []string{"a1", "b1"}, prevGen: 5,
			nodes:     []NodeView{vMoved("a1", "10.9.9.9:11211"), vUp("b1")},
			budget:    1,
			wantSlots: []string{"a1", "b1"},
			wantGen:   5, wantTouched: true,
		},
		{
			name: "zone change of a listed holder keeps the generation",
			prev: []string{"a1", "b1"}, prevGen: 5,
			nodes:     []NodeView{vUp("a1"), vUpAt("b1", "az-z")},
			wantSlots: []string{"a1", "b1"},
			wantGen:   5, wantTouched: true,
		},
		{
			name: "address of a holder Consul no longer lists is kept",
			prev: []string{"a1", "b1"}, prevGen: 5,
			nodes: []NodeView{func() NodeView { v := vAway("a1"); v.Addr = "10.9.9.9:11211"; return v }(),
				vUp("b1")},
			wantSlots: []string{"a1", "b1"},
			wantGen:   5, wantSame: true,
		},
		{
			name: "listed holder without an address keeps the old one",
			prev: []string{"a1", "b1"}, prevGen: 5,
			nodes:     []NodeView{vMoved("a1", ""), vUp("b1")},
			wantSlots: []string{"a1", "b1"},
			wantGen:   5, wantSame: true,
		},
		{
			name: "new spare keeps the generation and moves updated_at",
			prev: []string{"a1"}, prevGen: 5,
			nodes:     []NodeView{vUp("a1"), vUp("b1")},
			wantSlots: []string{"a1"}, wantSpares: []string{"b1"},
			wantGen: 5, wantTouched: true,
		},
		{
			name: "spare that left Consul is dropped from the spares",
			prev: []string{"a1"}, prevSpares: []string{"b1", "c1"}, prevGen: 5,
			nodes:     []NodeView{vUp("a1"), vAway("b1"), vUp("c1")},
			wantSlots: []string{"a1"}, wantSpares: []string{"c1"},
			wantGen: 5, wantTouched: true,
		},
		{
			name: "spare address change keeps the generation",
			prev: []string{"a1"}, prevSpares: []string{"b1"}, prevGen: 5,
			nodes:     []NodeView{vUp("a1"), vMoved("b1", "10.9.9.9:11211")},
			wantSlots: []string{"a1"}, wantSpares: []string{"b1"},
			wantGen: 5, wantTouched: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Pool: assignPool, NumSlots: tc.numSlots, Nodes: tc.nodes, Frozen: tc.frozen, Budget: tc.budget}
			if tc.prev != nil {
				in.Prev = slotMapOf(t, tc.prevGen, tc.prev, tc.prevSpares)
				if in.NumSlots == 0 {
					in.NumSlots = len(tc.prev)
				}
			}
			plan, next := runAssign(t, in, tc.failed)

			if got := evictionStrings(plan.Evictions); !slices.Equal(got, tc.wantEvict) {
				t.Errorf("evictions = %v, want %v", got, tc.wantEvict)
			}
			if got := placementStrings(plan.Placements); !slices.Equal(got, tc.wantPlace) {
				t.Errorf("placements = %v, want %v", got, tc.wantPlace)
			}
			if plan.Blocked != tc.wantBlocked {
				t.Errorf("Blocked = %d, want %d", plan.Blocked, tc.wantBlocked)
			}
			if got := slotIDs(next); !slices.Equal(got, tc.wantSlots) {
				t.Errorf("slots = %q, want %q", got, tc.wantSlots)
			}
			if got := nodeIDs(next.Spares()); !slices.Equal(got, tc.wantSpares) && len(got)+len(tc.wantSpares) > 0 {
				t.Errorf("spares = %q, want %q", got, tc.wantSpares)
			}
			if next.Generation() != tc.wantGen {
				t.Errorf("generation = %d, want %d", next.Generation(), tc.wantGen)
			}
			if same := next == in.Prev; same != tc.wantSame {
				t.Errorf("Build returned Prev itself: %v, want %v", same, tc.wantSame)
			}
			wantAt := assignPrevAt
			if tc.wantTouched {
				wantAt = assignNow
				if in.Prev != nil && len(carriedOut(plan, tc.failed)) > 0 {
					wantAt = assignNow.Add(cachenodes.AnnounceLead) // the serve's write
				}
			}
			if !next.UpdatedAt().Equal(wantAt) {
				t.Errorf("updated_at = %v, want %v", next.UpdatedAt(), wantAt)
			}
		})
	}
}

func TestDecideBuildAddressChange(t *testing.T) {
	prev := slotMapOf(t, 5, []string{"a1", "b1"}, nil)
	in := Input{Pool: assignPool, NumSlots: 2, Prev: prev, Budget: 1,
		Nodes: []NodeView{vMoved("a1", "10.9.9.9:11211"), vUpAt("b1", "az-z")}}
	_, next := runAssign(t, in, nil)
	want := []cachenodes.Node{
		{ID: "a1", Addr: "10.9.9.9:11211", AZ: "az-a"},
		{ID: "b1", Addr: "b1.cache:11211", AZ: "az-z"},
	}
	if got := next.Slots(); !slices.Equal(got, want) {
		t.Errorf("slots = %+v, want %+v", got, want)
	}
	if next.Generation() != 5 {
		t.Errorf("generation = %d, want 5", next.Generation())
	}
	if !next.UpdatedAt().Equal(assignNow) {
		t.Errorf("updated_at = %v, want %v", next.UpdatedAt(), assignNow)
	}
}

func TestDecideBudgetIsACeiling(t *testing.T) {
	tests := []struct {
		name        string
		budget      int
		wantEvicted int
	}{
		{"budget 0", 0, 0},
		{"budget 1", 1, 1},
		{"budget 2", 2, 2},
		{"budget above the due count", 5, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prev := slotMapOf(t, 3, []string{"a1", "b1", "c1"}, []string{"d1", "e1"})
			in := Input{Pool: assignPool, NumSlots: 3, Prev: prev, Budget: tc.budget,
				Nodes: []NodeView{vDue("a1"), vUp("b1"), vDue("c1"), vUp("d1"), vUp("e1")}}
			plan, next := runAssign(t, in, nil)
			if len(plan.Evictions) != tc.wantEvicted {
				t.Errorf("%d evictions, want %d: %v", len(plan.Evictions), tc.wantEvicted, evictionStrings(plan.Evictions))
			}
			if plan.Blocked != 2-tc.wantEvicted {
				t.Errorf("Blocked = %d, want %d", plan.Blocked, 2-tc.wantEvicted)
			}
			if len(plan.Placements) != tc.wantEvicted {
				t.Errorf("%d placements, want one per eviction (%d)", len(plan.Placements), tc.wantEvicted)
			}
			stayed := 0
			for _, id := range []string{"a1", "c1"} {
				if next.SlotOf(id) >= 0 {
					stayed++
				}
			}
			if stayed != 2-tc.wantEvicted {
				t.Errorf("%d due holders kept their slot, want %d: slots %q", stayed, 2-tc.wantEvicted, slotIDs(next))
			}
			if next.SlotOf("b1") != 1 {
				t.Errorf("b1 moved: slots %q", slotIDs(next))
			}
			wantGen := uint64(3)
			if tc.wantEvicted > 0 {
				wantGen = 4
			}
			if next.Generation() != wantGen {
				t.Errorf("generation = %d, want %d", next.Generation(), wantGen)
			}
		})
	}
}

// assignStep is one pass of a scenario over consecutive maps.
type assignStep struct {
	name      string
	nodes     []NodeView
	frozen    bool
	budget    int
	failed    []string
	wantSlots []string
	wantGen   uint64
}

// runAssignSteps runs the passes of steps in order, each on the map the
// pass before built (the first on a new pool), and checks each.
func runAssignSteps(t *testing.T, numSlots int, steps []assignStep) {
	t.Helper()
	var prev *cachenodes.SlotMap
	for i, s := range steps {
		in := Input{Pool: assignPool, NumSlots: numSlots, Prev: prev, Nodes: s.nodes, Frozen: s.frozen, Budget: s.budget}
		_, next := runAssign(t, in, s.failed)
		if got := slotIDs(next); !slices.Equal(got, s.wantSlots) {
			t.Errorf("step %d (%s): slots = %q, want %q", i, s.name, got, s.wantSlots)
		}
		if next.Generation() != s.wantGen {
			t.Errorf("step %d (%s): generation = %d, want %d", i, s.name, next.Generation(), s.wantGen)
		}
		prev = next
	}
}

func TestDecideBuildScenarios(t *testing.T) {
	tests := []struct {
		name     string
		numSlots int
		steps    []assignStep
	}{
		{"consul agent restart moves nothing", 2, []assignStep{
			{"first fill", []NodeView{vUp("a1"), vUp("b1"), vUp("c1")}, false, 1, nil, []string{"a1", "b1"}, 1},
			{"agent gone, memcached answers", []NodeView{vAway("a1"), vAway("b1"), vAway("c1")}, false, 1, nil, []string{"a1", "b1"}, 1},
			{"still gone", []NodeView{vAway("a1"), vAway("b1")}, false, 1, nil, []string{"a1", "b1"}, 1},
			{"agent back", []NodeView{vUp("a1"), vUp("b1"), vUp("c1")}, false, 1, nil, []string{"a1", "b1"}, 1},
		}},
		{"hold runs out, the node comes back as a spare", 2, []assignStep{
			{"first fill", []NodeView{vUp("a1"), vUp("b1")}, false, 1, nil, []string{"a1", "b1"}, 1},
			{"a2 joins as a spare", []NodeView{vUp("a1"), vUp("b1"), vUp("a2")}, false, 1, nil, []string{"a1", "b1"}, 1},
			{"a1 inside its hold", []NodeView{vFailing("a1"), vUp("b1"), vUp("a2")}, false, 1, nil, []string{"a1", "b1"}, 1},
			{"a1 due", []NodeView{vDue("a1"), vUp("b1"), vUp("a2")}, false, 1, nil, []string{"a2", "b1"}, 2},
			{"a1 flapping back", []NodeView{vFlapping("a1"), vUp("b1"), vUp("a2")}, false, 1, nil, []string{"a2", "b1"}, 2},
			{"a1 ready", []NodeView{vUp("a1"), vUp("b1"), vUp("a2")}, false, 1, nil, []string{"a2", "b1"}, 2},
		}},
		{"failed flush is retried on the next pass", 2, []assignStep{
			{"first fill", []NodeView{vUp("a1"), vUp("b1"), vUp("c1")}, false, 1, nil, []string{"a1", "b1"}, 1},
			{"b1 due, flush of c1 fails", []NodeView{vUp("a1"), vDue("b1"), vUp("c1")}, false, 1, []string{"c1"}, []string{"a1", "b1"}, 1},
			{"flush fails again", []NodeView{vUp("a1"), vDue("b1"), vUp("c1")}, false, 1, []string{"c1"}, []string{"a1", "b1"}, 1},
			{"flush works", []NodeView{vUp("a1"), vDue("b1"), vUp("c1")}, false, 1, nil, []string{"a1", "c1"}, 2},
		}},
		{"freeze holds a due node until lifted", 2, []assignStep{
			{"first fill", []NodeView{vUp("a1"), vUp("b1"), vUp("c1")}, false, 1, nil, []string{"a1", "b1"}, 1},
			{"a1 due, frozen", []NodeView{vDue("a1"), vUp("b1"), vUp("c1")}, true, 1, nil, []string{"a1", "b1"}, 1},
			{"still frozen", []NodeView{vDue("a1"), vUp("b1"), vUp("c1")}, true, 1, nil, []string{"a1", "b1"}, 1},
			{"unfrozen", []NodeView{vDue("a1"), vUp("b1"), vUp("c1")}, false, 1, nil, []string{"c1", "b1"}, 2},
		}},
		{"fleet grows into vacant slots", 3, []assignStep{
			{"one node", []NodeView{vUp("b1")}, false, 0, nil, []string{"b1", "", ""}, 1},
			{"two more", []NodeView{vUp("b1"), vUp("c1"), vUp("a1")}, false, 0, nil, []string{"b1", "a1", "c1"}, 2},
			{"a fourth stays spare", []NodeView{vUp("b1"), vUp("c1"), vUp("a1"), vUp("a0")}, false, 0, nil, []string{"b1", "a1", "c1"}, 2},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { runAssignSteps(t, tc.numSlots, tc.steps) })
	}
}

// TestDecideBuildRandomPasses chains many passes over random membership
// and checks every invariant of checkPlan and checkNext on each, plus the
// hold: a holder that answers probes never leaves its slot unless it is in
// maintenance.
func TestDecideBuildRandomPasses(t *testing.T) {
	states := []func(string) NodeView{vUp, vUp, vUp, vAway, vFailing, vDue, vMaint, vFlapping, vUnreachable, vNotPresent}
	ids := []string{"a1", "a2", "a3", "a4", "b1", "b2", "b3", "b4", "c1", "c2", "c3", "c4"}
	for seed := range uint64(10) {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 0x6d63726962))
			const numSlots = 5
			var prev *cachenodes.SlotMap
			for pass := range 200 {
				var nodes []NodeView
				for _, id := range ids {
					if rng.IntN(10) == 0 {
						continue // not known to the loop this pass
					}
					v := states[rng.IntN(len(states))](id)
					if rng.IntN(8) == 0 {
						v.Addr = fmt.Sprintf("10.0.%d.%d:11211", pass%250, rng.IntN(250))
					}
					nodes = append(nodes, v)
				}
				rng.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
				var failed []string
				for _, id := range ids {
					if rng.IntN(5) == 0 {
						failed = append(failed, id)
					}
				}
				in := Input{Pool: assignPool, NumSlots: numSlots, Prev: prev, Nodes: nodes,
					Frozen: rng.IntN(10) == 0, Budget: rng.IntN(4)}
				plan, next := runAssign(t, in, failed)
				if prev != nil {
					for _, v := range nodes {
						slot := prev.SlotOf(v.ID)
						if slot >= 0 && v.Reachable && !v.Maintenance && next.Slot(slot).ID != v.ID {
							t.Errorf("pass %d: reachable %+v lost slot %d", pass, v, slot)
						}
					}
				}
				if t.Failed() {
					t.Fatalf("pass %d failed: input %+v, plan %+v", pass, in, plan)
				}
				prev = next
			}
		})
	}
}
