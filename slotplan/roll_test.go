package slotplan

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/mcribapi"
)

// TestRollOrder: a roll of a zone or of every node takes the nodes
// without a slot first, then the rest, each by node ID in byte order.
func TestRollOrder(t *testing.T) {
	holds := map[string]bool{"mc-2": true, "mc-10": true, "mc-1": true}
	got := RollOrder([]string{"mc-2", "mc-9", "mc-10", "mc-3", "mc-1"}, func(id string) bool { return holds[id] })
	want := []string{"mc-3", "mc-9", "mc-1", "mc-10", "mc-2"}
	if !slices.Equal(got, want) {
		t.Fatalf("RollOrder = %v, want %v", got, want)
	}
}

// TestRollTurn: the turn is the first node neither restarted nor skipped.
func TestRollTurn(t *testing.T) {
	n := func(states ...mcribapi.RollNodeState) []mcribapi.RollNode {
		var out []mcribapi.RollNode
		for _, s := range states {
			out = append(out, mcribapi.RollNode{NodeID: "x", State: s})
		}
		return out
	}
	tests := []struct {
		nodes []mcribapi.RollNode
		want  int
	}{
		{n(mcribapi.RollWaiting, mcribapi.RollWaiting), 0},
		{n(mcribapi.RollRestarted, mcribapi.RollSkipped, mcribapi.RollMoving, mcribapi.RollWaiting), 2},
		{n(mcribapi.RollRestarted, mcribapi.RollReleased), 1},
		{n(mcribapi.RollRestarted, mcribapi.RollSkipped), -1},
		{nil, -1},
	}
	for _, tt := range tests {
		if got := RollTurn(tt.nodes); got != tt.want {
			t.Errorf("RollTurn(%v) = %d, want %d", tt.nodes, got, tt.want)
		}
	}
}

// TestRollPlace: a node is free once it holds no slot, is announced to
// none and no warming object names it, ended or not.
func TestRollPlace(t *testing.T) {
	m := announcedMap(t, []string{"a1", "b1"}, []string{"c2"}, map[int]string{1: "c1"}, time.Minute)
	for id, want := range map[string]RollPlace{
		"a1": {Slot: 0, Incoming: -1, WarmSource: -1},
		"c1": {Slot: -1, Incoming: 1, WarmSource: -1},
		"c2": {Slot: -1, Incoming: -1, WarmSource: -1},
	} {
		if got := RollPlaceOf(m, id); got != want {
			t.Errorf("RollPlaceOf(%s) = %+v, want %+v", id, got, want)
		}
	}
	if !RollPlaceOf(m, "c2").Free() || RollPlaceOf(m, "c1").Free() || RollPlaceOf(m, "a1").Free() {
		t.Errorf("only c2 is free")
	}
	spec := slotMapOf(t, 4, []string{"a1", "c1"}, nil).Spec()
	spec.Warming = make([]*cachenodes.Warming, 2)
	spec.Warming[1] = &cachenodes.Warming{NodeID: "b1", Addr: cacheNode("b1").Addr, Until: assignNow.Add(time.Minute), EndedAt: assignNow}
	w, err := cachenodes.NewSlotMap(spec)
	if err != nil {
		t.Fatal(err)
	}
	if p := RollPlaceOf(w, "b1"); p.Free() || p.WarmSource != 1 {
		t.Errorf("the warm source of an ended warming: %+v, want not free, source of slot 1", p)
	}
}

// TestRollRestarted: a restart is a new pid, or a start later than the
// one marked at the release (a reset uptime, the same pid); with no mark,
// a start after the release.
func TestRollRestarted(t *testing.T) {
	rel := assignNow
	started := rel.Add(-time.Hour)
	marked := mcribapi.RollNode{State: mcribapi.RollReleased, ReleasedAt: &rel, PID: 4242, StartedAt: &started}
	unmarked := mcribapi.RollNode{State: mcribapi.RollReleased, ReleasedAt: &rel}
	tests := []struct {
		name    string
		n       mcribapi.RollNode
		pid     int
		started time.Time
		want    bool
	}{
		{"the same memcached", marked, 4242, started, false},
		{"the same, its start read a second off", marked, 4242, started.Add(time.Second), false},
		{"a new pid", marked, 4243, started, true},
		{"the same pid, its uptime reset", marked, 4242, rel.Add(30 * time.Second), true},
		{"no reading yet", marked, 0, time.Time{}, false},
		{"no mark: started after the release", unmarked, 7, rel.Add(5 * time.Second), true},
		{"no mark: started before it", unmarked, 7, started, false},
	}
	for _, tt := range tests {
		if got := RollRestarted(tt.n, tt.pid, tt.started); got != tt.want {
			t.Errorf("%s: RollRestarted = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestRollMove: the roll's move of its node's slot is a planned move to a
// ready spare by the spread rule, announced and warm, counting against no
// ceiling; it waits under any freeze, a pause, an announce or a warming of
// the slot; it says so when no spare can take the slot; a released node
// is no spare.
func TestRollMove(t *testing.T) {
	base := func() Input {
		return Input{Pool: assignPool, NumSlots: 2, Prev: slotMapOf(t, 4, []string{"a1", "b1"}, []string{"b2", "c1"}),
			Nodes: []NodeView{vUp("a1"), vUp("b1"), vUp("b2"), vUp("c1")}, Budget: 0, WarmFor: time.Minute, Now: assignNow,
			Roll: RollInput{Node: "b1"}}
	}
	tests := []struct {
		name    string
		tweak   func(*Input)
		want    []string // placements
		blocked string
		none    bool // no outcome: not due
	}{
		{name: "to the spare of its own zone, warm, beyond the ceiling", want: []string{"1=b2"}},
		{name: "a released spare is none: the next by the spread rule", tweak: func(in *Input) { in.Nodes[2].Released = true }, want: []string{"1=c1"}},
		{name: "cold from a holder that does not answer", tweak: func(in *Input) { in.Nodes[1].Reachable = false }, want: []string{"1=b2"}},
		{name: "no spare left", tweak: func(in *Input) { in.Nodes[2].Released, in.Nodes[3].Reachable = true, false },
			blocked: "no ready spare can take slot 1 of node b1"},
		{name: "paused", tweak: func(in *Input) { in.Roll.Paused = true }, none: true},
		{name: "any freeze", tweak: func(in *Input) { in.Frozen = true }, none: true},
		{name: "a node without a slot moves nothing", tweak: func(in *Input) { in.Roll.Node = "c1" }},
		{name: "a slot announced already waits", tweak: func(in *Input) {
			in.Prev = announcedMap(t, []string{"a1", "b1"}, []string{"c1"}, map[int]string{1: "b2"}, time.Minute)
			in.Incoming = views(2, map[int]IncomingView{1: {ServesAt: servesAt}})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := base()
			if tt.tweak != nil {
				tt.tweak(&in)
			}
			plan := Decide(in)
			switch {
			case tt.none:
				if plan.Roll != nil || len(plan.Placements) > 0 {
					t.Fatalf("a roll move held back: outcome %+v, placements %v", plan.Roll, placementStrings(plan.Placements))
				}
				return
			case plan.Roll == nil:
				t.Fatalf("no roll outcome")
			}
			var got []string
			for _, p := range plan.Placements {
				got = append(got, strings.SplitN(placementStrings([]Placement{p})[0], " ", 2)[0])
				if p.Reason != mcribapi.EvictionRoll || p.Warm != in.Nodes[1].Reachable || p.From.ID != "b1" {
					t.Errorf("placement %+v: want a roll move from b1, warm when it answers", p)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("placements %v, want %v", got, tt.want)
			}
			if plan.Roll.Moved != len(tt.want) || !strings.Contains(plan.Roll.Blocked, tt.blocked) || (tt.blocked == "") != (plan.Roll.Blocked == "") {
				t.Errorf("outcome %+v, want moved %d, blocked %q", plan.Roll, len(tt.want), tt.blocked)
			}
			if len(tt.want) == 0 {
				return
			}
			// Announced, then served by the usual rules, warm from b1.
			next, err := Build(in, plan, plan.Placements, in.Now)
			if err != nil {
				t.Fatal(err)
			}
			if ni := next.Incoming(1); ni == nil || ni.NodeID != tt.want[0][2:] || next.Slot(1).ID != "b1" {
				t.Fatalf("announce: incoming %+v, holder %s", ni, next.Slot(1).ID)
			}
			in2 := in
			in2.Prev, in2.Now, in2.Incoming = next, servesAt, ownIncoming(next, plan.Placements)
			plan2 := Decide(in2)
			if got := serveStrings(plan2.Serves); len(got) != 1 || !strings.HasPrefix(got[0], tt.want[0]) || plan2.Serves[0].Warm != in.Nodes[1].Reachable {
				t.Fatalf("serves %v, want %s", got, tt.want[0])
			}
			served, err := Build(in2, plan2, nil, servesAt)
			if err != nil {
				t.Fatal(err)
			}
			if p := RollPlaceOf(served, "b1"); p.Free() != !in.Nodes[1].Reachable {
				t.Errorf("after the serve b1 stands at %+v (free only after a cold move)", p)
			}
		})
	}
}

// TestRollAnnounce: a roll's announce serves like any planned move; a new
// leader takes it for the roll's by its node; any freeze, a pause or a
// roll that no longer moves its holder drops it, and it gives no count
// back.
func TestRollAnnounce(t *testing.T) {
	up := []NodeView{vUp("a1"), vUp("b1"), vUp("c1"), vUp("c2")}
	tests := []struct {
		name       string
		iv         IncomingView
		tweak      func(*Input)
		serves     []string
		drops, why string
	}{
		{name: "its own serves warm", iv: own(mcribapi.EvictionRoll), serves: []string{"1=c1 warm"}},
		{name: "a new leader serves one of the roll's node", iv: IncomingView{ServesAt: servesAt, Judged: true}, serves: []string{"1=c1 warm"}},
		{name: "a freeze drops it", iv: own(mcribapi.EvictionRoll), tweak: func(in *Input) { in.Frozen = true }, drops: "1=c1", why: "frozen"},
		{name: "a pause drops it", iv: own(mcribapi.EvictionRoll), tweak: func(in *Input) { in.Roll.Paused = true }, drops: "1=c1", why: "paused"},
		{name: "a stopped roll drops it", iv: own(mcribapi.EvictionRoll), tweak: func(in *Input) { in.Roll.Node = "" }, drops: "1=c1", why: "no longer moves"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := Input{Pool: assignPool, NumSlots: 2, Prev: announcedMap(t, []string{"a1", "b1"}, []string{"c2"}, map[int]string{1: "c1"}, time.Minute),
				Nodes: up, WarmFor: time.Minute, Now: servesAt, Roll: RollInput{Node: "b1"}}
			if tt.tweak != nil {
				tt.tweak(&in)
			}
			in.Incoming = views(2, map[int]IncomingView{1: tt.iv})
			plan := Decide(in)
			if got := serveStrings(plan.Serves); !slices.Equal(got, tt.serves) {
				t.Errorf("serves %v, want %v", got, tt.serves)
			}
			var want []string
			if tt.drops != "" {
				want = []string{tt.drops}
			}
			if got := dropStrings(plan.Drops); !slices.Equal(got, want) {
				t.Errorf("drops %v, want %v", got, want)
			}
			if tt.why != "" && (len(plan.Drops) == 0 || !strings.Contains(plan.Drops[0].Why, tt.why)) {
				t.Errorf("drops %+v, want a Why with %q", plan.Drops, tt.why)
			}
		})
	}
}
