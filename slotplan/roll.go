package slotplan

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/mcribapi"
)

// The rules of a roll (docs/api.md, "Rolling restarts"): which node is
// next, where it stands in the map, whether its memcached restarted, and
// its slot's move, a planned move to a ready spare by the spread rule
// (announced, warm), carried out by Decide.

// RollInput is what Decide needs of a roll: the node whose slot the roll
// moves (its current node; "" when the roll has none moving), and
// whether the roll is paused (no new move; an announce of it is
// dropped).
type RollInput struct {
	Node   string
	Paused bool
}

// RollOrder returns the order a roll of a zone or of every node takes
// ids in: the nodes without a slot first, then the rest, each by node ID
// in byte order. holds reports whether a node holds a slot.
func RollOrder(ids []string, holds func(id string) bool) []string {
	out := slices.Clone(ids)
	slices.SortFunc(out, func(a, b string) int {
		ha, hb := holds(a), holds(b)
		switch {
		case ha != hb && !ha:
			return -1
		case ha != hb:
			return 1
		}
		return strings.Compare(a, b)
	})
	return out
}

// RollTurn returns the index of the node whose turn it is: the first not
// restarted or skipped; -1 when every node is behind the roll.
func RollTurn(nodes []mcribapi.RollNode) int {
	return slices.IndexFunc(nodes, func(n mcribapi.RollNode) bool { return !n.State.Finished() })
}

// RollPlace is where a node stands in a slot map, for a roll.
type RollPlace struct {
	// Slot is the slot it holds (-1: none); Incoming the slot it is
	// announced to (-1: none); WarmSource the slot whose warming object
	// names it as the warm source, ended or not (-1: none).
	Slot, Incoming, WarmSource int
}

// Free reports whether the node holds no slot, is announced to none and
// is named by no warming object: its move is done (or it had none), and
// it may be released.
func (p RollPlace) Free() bool { return p.Slot < 0 && p.Incoming < 0 && p.WarmSource < 0 }

// RollPlaceOf returns where node id stands in m (nil: nowhere).
func RollPlaceOf(m *cachenodes.SlotMap, id string) RollPlace {
	if m == nil {
		return RollPlace{Slot: -1, Incoming: -1, WarmSource: -1}
	}
	return RollPlace{Slot: m.SlotOf(id), Incoming: m.IncomingOf(id), WarmSource: m.WarmingOf(id)}
}

// RestartSlack is how much later a memcached's start time (the reading's
// time less its uptime) must be than the one marked at a node's release
// to count as a restart with the same pid: memcached counts its uptime in
// whole seconds, and a mark written by another leader's clock may be 1 s
// apart from this one.
const RestartSlack = 3 * time.Second

// RollRestarted reports whether the memcached of n, released, restarted
// since its release: a reading (taken after the release) shows another
// pid than the one marked, or a start later than the one marked (a reset
// uptime). With nothing marked (no reading before the release), a start
// after the release counts.
func RollRestarted(n mcribapi.RollNode, pid int, started time.Time) bool {
	if pid == 0 || started.IsZero() {
		return false
	}
	switch {
	case n.PID != 0 && pid != n.PID:
		return true
	case n.StartedAt != nil:
		return started.After(n.StartedAt.Add(RestartSlack))
	case n.ReleasedAt != nil:
		return started.After(n.ReleasedAt.Add(-time.Second))
	}
	return false
}

// rollMove plans the roll's move of in.Roll.Node's slot, if it holds one
// that may move now: a planned move to a ready spare by the spread rule,
// announced, warm when the node answers. It waits (nothing moves, nothing
// blocked) while the slot is announced already, warms, or its twin is
// announced; it says in Blocked when no spare can take the slot.
func rollMove(in Input, idx *assignIndex, z *zoneIndex, warm warmState, inc incomingState, plan *Plan) StepOutcome {
	slot := -1
	if in.Prev != nil {
		slot = in.Prev.SlotOf(in.Roll.Node)
	}
	if slot < 0 || idx.twin(slot) || inc.announced(slot) || z.touched[slot] || warm.busy[slot] || warm.lending[slot] ||
		(twinIncoming(&in, idx, slot) && inc.announced(slot+in.Prev.ResizedFrom())) {
		return StepOutcome{}
	}
	v, known := idx.holderView(in, slot)
	holder := idx.prevSlot(slot)
	ev := Eviction{Slot: slot, Node: holder, Reason: mcribapi.EvictionRoll, Move: true,
		Warm: known && v.warmSource() && in.WarmFor > 0,
		Why:  fmt.Sprintf("a roll moves slot %d off node %s, which it restarts next", slot, holder.ID)}
	if !z.announceMove(plan, ev, false) {
		return StepOutcome{Blocked: fmt.Sprintf("no ready spare can take slot %d of node %s: %s", slot, holder.ID, noSpareWhy(in, idx, warm))}
	}
	return StepOutcome{Moved: 1}
}

// rollDropWhy says why an announce of a roll's move of slot i (held by
// holder) is dropped now, or "" when it is not: any freeze, a paused
// roll, or a roll that no longer moves its holder.
func rollDropWhy(in *Input, holder string) string {
	switch {
	case in.Frozen:
		return "membership is frozen: the roll waits until the freeze lifts"
	case in.Roll.Paused:
		return "the roll is paused"
	case in.Roll.Node != holder:
		return fmt.Sprintf("the roll no longer moves node %s", holder)
	}
	return ""
}
