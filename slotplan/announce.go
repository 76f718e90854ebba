package slotplan

import (
	"fmt"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/mcribapi"
)

// Announce, then serve (docs/api.md, "Announce, then serve"). Every
// placement into a slot but the first fill of a new pool (and the twins of
// a resize's first write) is announced first: Decide plans it as a
// Placement, the loop flushes the new node and Build writes it as the
// slot's incoming node (same generation), serving cachenodes.AnnounceLead
// after that write. The slot's holder keeps it meanwhile. A later pass
// whose Input.Incoming says the announce may serve (ServesAt passed, the
// loop's own verdict on both nodes) plans it in Plan.Serves, and Build
// writes the move itself: generation + 1, the incoming node removed, warm
// until the announce's until when the old holder answers and owes no
// flush, cold otherwise. The new node is not flushed again (the
// tombstones the clients left in it must stay).
//
// An announce is dropped (Plan.Drops: the entry removed, nothing moved,
// the move tried again by the rules that chose it) when its node stops
// answering, restarted since its flush, owes a flush, leaves Consul or
// changes its address; when a freeze that would stop the move holds (any
// freeze for a replacement, a vacant slot's fill or a replace; an
// operator's for a drain or return step or a split; a fault of discovery
// or a drain that pauses the splits (Input.SplitsPaused) for a split
// too); for a replacement after the hold
// when the holder answers or is present again; for a maintenance move
// when the holder is back in service; for a drain or return step when its
// zone is no longer drained; for a split when slot s's holder does not
// answer or owes a flush; and when a replacement of a slot without a live
// holder takes its node. A dropped announce that counted against the ceiling
// gives its count back (Drop.GiveBack).
//
// Reasons: a process knows why it announced (IncomingView.Reason); an
// announce another leader wrote is taken by what the pool shows
// (inferReason): a twin's own is a split, a vacant slot's a fill, a
// holder in a drained zone a drain step, a node of a drained zone a return
// step, a holder in maintenance a maintenance move, a holder absent or
// unreachable a replacement after the hold, and any other an operator's
// replace.

// IncomingView is what the loop knows of one slot's incoming node in
// Input.Prev: when it may serve, whether the loop has its own verdict on
// both nodes, and why it was announced.
type IncomingView struct {
	// ServesAt is when the node may serve, on the clock of Input.Now: the
	// stored serves_at for an announce this process wrote (no earlier
	// than AnnounceLead after its write completed), the stored one placed
	// on this clock plus cachenodes.ClockSkew for one another leader
	// wrote.
	ServesAt time.Time
	// Judged is set once the loop has its own verdict on the slot's
	// holder (slot s's for a split) and on the incoming node: it wrote the
	// announce, or it probed both since it first saw it. Until then the
	// announce neither serves nor is dropped for what the nodes show.
	Judged bool
	// Own is set when this process wrote the announce; Reason is then why
	// (the empty reason: a vacant slot's fill).
	Own    bool
	Reason mcribapi.EvictionReason
}

// Drop is an announce Decide drops.
type Drop struct {
	Slot int
	// Node is the incoming node dropped; From the slot's holder.
	Node, From cachenodes.Node
	// Reason is why it was announced; Why, in one sentence, why it is
	// dropped.
	Reason mcribapi.EvictionReason
	Why    string
	// GiveBack is set when the announce counted against the replacement
	// ceiling: its count is given back. ServesAt is the dropped entry's
	// serves_at as written (its announce was written AnnounceLead before).
	GiveBack bool
	ServesAt time.Time
}

// countsAtAnnounce reports whether an announce for reason counts against
// the replacement ceiling (at the announce): a replacement after the
// hold, a maintenance move, a replace.
func countsAtAnnounce(r mcribapi.EvictionReason) bool {
	return r == mcribapi.EvictionHoldExpired || r == mcribapi.EvictionMaintenance || r == mcribapi.EvictionReplace
}

// incomingState is what Decide found of the previous map's announces.
type incomingState struct {
	// live marks the slots whose announce stays (neither served nor
	// dropped); served the slots served now; nodes the incoming nodes of
	// the live and served announces, by ID (slot of each): none of them
	// is a spare; reasons the reason of each announce of the previous
	// map, by slot.
	live, served map[int]bool
	nodes        map[string]int
	reasons      map[int]mcribapi.EvictionReason
	// stealable are the live announces a replacement of a slot without a
	// live holder may take the node of: drain and return steps and splits
	// (their rules try them again), by slot.
	stealable map[int]bool
}

// announced reports whether slot i keeps an incoming node or is served
// now: no other placement takes it in this pass.
func (st *incomingState) announced(i int) bool { return st.live[i] || st.served[i] }

// incomingAt returns the announce of slot i in Prev that Decide judges:
// nil for none, and for a twin that carries slot s's (judged there).
func incomingAt(in *Input, idx *assignIndex, i int) *cachenodes.Incoming {
	if in.Prev == nil || !in.Prev.AnyIncoming() || i >= in.Prev.NumSlots() {
		return nil
	}
	inc := in.Prev.Incoming(i)
	if inc == nil {
		return nil
	}
	if idx.twin(i) && inc.Equal(in.Prev.Incoming(i-in.Prev.ResizedFrom())) {
		return nil
	}
	return inc
}

// incomingView returns what the loop knows of slot i's announce.
func (in *Input) incomingView(i int) IncomingView {
	if i < len(in.Incoming) {
		return in.Incoming[i]
	}
	return IncomingView{}
}

// nodeView returns the view of node id, if the loop knows it.
func (idx *assignIndex) nodeView(in *Input, id string) (NodeView, bool) {
	if idx.byID == nil {
		idx.byID = make(map[string]int32, len(in.Nodes))
		for j := range in.Nodes {
			idx.byID[in.Nodes[j].ID] = int32(j)
		}
	}
	if j, ok := idx.byID[id]; ok {
		return in.Nodes[j], true
	}
	return NodeView{}, false
}

// judgeIncoming decides, for every announce of in.Prev, whether it serves
// now, is dropped or stays, and adds the serves and drops to plan.
func judgeIncoming(in *Input, idx *assignIndex, warm warmState, plan *Plan) incomingState {
	st := incomingState{live: map[int]bool{}, served: map[int]bool{}, nodes: map[string]int{}, reasons: map[int]mcribapi.EvictionReason{}, stealable: map[int]bool{}}
	if in.Prev == nil || !in.Prev.AnyIncoming() {
		return st
	}
	for i := range in.NumSlots {
		inc := incomingAt(in, idx, i)
		if inc == nil {
			continue
		}
		iv := in.incomingView(i)
		reason := iv.Reason
		if !iv.Own {
			reason = inferReason(in, idx, i, inc)
		}
		st.reasons[i] = reason
		holder := idx.prevSlot(i)
		if why := dropWhy(in, idx, warm, i, inc, iv, reason); why != "" {
			plan.Drops = append(plan.Drops, Drop{Slot: i, Node: inc.Node(), From: holder, Reason: reason, Why: why,
				GiveBack: countsAtAnnounce(reason), ServesAt: inc.ServesAt})
			continue
		}
		if iv.Judged && !in.Now.Before(iv.ServesAt) && holdEnded(in, idx, i, reason) {
			plan.Serves = append(plan.Serves, serve(in, idx, i, inc, reason))
			st.served[i] = true
			st.nodes[inc.NodeID] = i // it takes the slot: no spare either
			continue
		}
		st.live[i] = true
		st.nodes[inc.NodeID] = i
		if !holder.IsZero() && (reason == mcribapi.EvictionDrain || reason == mcribapi.EvictionReturn || reason == mcribapi.EvictionSplit) {
			st.stealable[i] = true // a step, tried again at its pace
		}
	}
	return st
}

// holdEnded reports whether slot i's announce for reason may serve as far
// as the hold goes: a replacement after the hold serves once the holder
// is due by the loop's own view (the announce came AnnounceLead before the
// hold's end; a new leader counts the hold itself), any other at once.
func holdEnded(in *Input, idx *assignIndex, i int, reason mcribapi.EvictionReason) bool {
	if reason != mcribapi.EvictionHoldExpired {
		return true
	}
	hv, known := idx.holderView(*in, i)
	return known && hv.Due
}

// inferReason takes an announce another leader wrote by what the pool
// shows (see the top of this file).
func inferReason(in *Input, idx *assignIndex, i int, inc *cachenodes.Incoming) mcribapi.EvictionReason {
	if idx.twin(i) {
		return mcribapi.EvictionSplit
	}
	holder := idx.prevSlot(i)
	if holder.IsZero() {
		return ""
	}
	if in.Roll.Node != "" && holder.ID == in.Roll.Node {
		return mcribapi.EvictionRoll
	}
	haz := idx.holderAZ(*in, i)
	bv, _ := idx.nodeView(in, inc.NodeID)
	switch hv, known := idx.holderView(*in, i); {
	case in.Drained[bv.AZ] && bv.AZ != "":
		return mcribapi.EvictionReturn
	case in.Drained[haz]:
		return mcribapi.EvictionDrain
	case known && hv.Maintenance:
		return mcribapi.EvictionMaintenance
	case known && (!hv.Reachable || !hv.Present):
		return mcribapi.EvictionHoldExpired
	}
	return mcribapi.EvictionReplace // dropped: see dropWhy
}

// dropWhy says why slot i's announce inc (reason, as the loop knows it:
// iv) is dropped now, or "" when it is not.
func dropWhy(in *Input, idx *assignIndex, warm warmState, i int, inc *cachenodes.Incoming, iv IncomingView, reason mcribapi.EvictionReason) string {
	switch reason {
	case mcribapi.EvictionRoll:
		if why := rollDropWhy(in, idx.prevSlot(i).ID); why != "" {
			return why
		}
	case mcribapi.EvictionDrain, mcribapi.EvictionReturn, mcribapi.EvictionSplit:
		if in.OperatorFrozen {
			return "an operator freeze holds the move back"
		}
		if reason == mcribapi.EvictionSplit && in.DiscoveryFault {
			return "Consul's last answer is taken as a fault of discovery: the splits wait"
		}
		if reason == mcribapi.EvictionSplit && in.SplitsPaused {
			return "a zone is drained: the splits wait until it is undrained"
		}
	default:
		if in.Frozen {
			return "membership is frozen: the move waits until the freeze lifts"
		}
	}
	bv, known := idx.nodeView(in, inc.NodeID)
	if !known {
		return fmt.Sprintf("node %s is no longer known", inc.NodeID)
	}
	if bv.OwesFlush {
		return fmt.Sprintf("node %s owes a flush", inc.NodeID)
	}
	if !iv.Judged {
		return ""
	}
	switch {
	case !bv.Reachable:
		return fmt.Sprintf("node %s stopped answering", inc.NodeID)
	case bv.Restarted:
		return fmt.Sprintf("node %s restarted since its flush (its tombstones are gone)", inc.NodeID)
	case !bv.Listed:
		return fmt.Sprintf("node %s left Consul", inc.NodeID)
	case bv.Maintenance:
		return fmt.Sprintf("node %s is in Consul maintenance", inc.NodeID)
	case !bv.Present:
		return fmt.Sprintf("node %s is absent from Consul", inc.NodeID)
	case bv.Addr != inc.Addr:
		return fmt.Sprintf("node %s is registered at %s now, not at %s, where it was flushed", inc.NodeID, bv.Addr, inc.Addr)
	}
	hv, hknown := idx.holderView(*in, idx.ownSlot(i))
	switch reason {
	case mcribapi.EvictionReplace:
		if !iv.Own {
			// Taken from the pool, it cannot be told from a replacement
			// after the hold whose holder came back: a new leader drops it
			// rather than move a slot that answers.
			return "it was announced by another leader, and its holder answers: it cannot be told from a replacement whose holder came back"
		}
	case mcribapi.EvictionDrain:
		if !in.Drained[idx.holderAZ(*in, i)] {
			return fmt.Sprintf("zone %q is no longer drained", idx.holderAZ(*in, i))
		}
	case mcribapi.EvictionReturn:
		if !in.Drained[bv.AZ] {
			return fmt.Sprintf("zone %q is no longer drained: its return is over", bv.AZ)
		}
	case mcribapi.EvictionHoldExpired:
		switch {
		case hknown && hv.Reachable:
			return fmt.Sprintf("its holder %s answers again", hv.ID)
		case hknown && hv.Present:
			return fmt.Sprintf("its holder %s is present in Consul again", hv.ID)
		}
	case mcribapi.EvictionMaintenance:
		if hknown && hv.Listed && hv.Present && !hv.Maintenance {
			return fmt.Sprintf("its holder %s left Consul maintenance", hv.ID)
		}
	case mcribapi.EvictionSplit:
		s := i - in.Prev.ResizedFrom()
		switch {
		case !hknown || !hv.Reachable:
			return fmt.Sprintf("node %s of slot %d does not answer; its twin %d waits", idx.prevSlot(s).ID, s, i)
		case hv.OwesFlush:
			return fmt.Sprintf("node %s of slot %d owes a flush; its twin %d waits", hv.ID, s, i)
		case warm.busy[s]:
			return fmt.Sprintf("slot %d has a warming object; its twin %d waits", s, i)
		}
	}
	return ""
}

// serve is the move that serves slot i's announce inc now: warm from the
// slot's holder (slot s's for a split) until the announce's until when the
// holder answers and owes no flush and the announce leaves time to warm,
// cold otherwise.
func serve(in *Input, idx *assignIndex, i int, inc *cachenodes.Incoming, reason mcribapi.EvictionReason) Placement {
	holder := idx.prevSlot(i)
	bv, _ := idx.nodeView(in, inc.NodeID)
	node := bv.Node
	node.Addr = inc.Addr // where it was flushed (a changed address drops the announce)
	hv, known := idx.holderView(*in, idx.ownSlot(i))
	warm := reason != "" && !holder.IsZero() && known && hv.warmSource() && in.WarmFor > 0 && inc.Until.After(inc.ServesAt)
	var why string
	switch reason {
	case mcribapi.EvictionDrain:
		why = fmt.Sprintf("a drain step moves slot %d off zone %q (from node %s)", i, holder.AZ, holder.ID)
	case mcribapi.EvictionReturn:
		why = fmt.Sprintf("a return step gives slot %d back to zone %q (from node %s)", i, node.AZ, holder.ID)
	case mcribapi.EvictionSplit:
		why = fmt.Sprintf("a split step moves slot %d, the twin of slot %d, off node %s", i, idx.ownSlot(i), holder.ID)
	case mcribapi.EvictionReplace:
		why = fmt.Sprintf("an operator replaces node %s in slot %d", holder.ID, i)
	case mcribapi.EvictionRoll:
		why = fmt.Sprintf("a roll moves slot %d off node %s, which it restarts next", i, holder.ID)
	case mcribapi.EvictionMaintenance:
		why = fmt.Sprintf("node %s in slot %d is in Consul maintenance mode", holder.ID, i)
	case mcribapi.EvictionHoldExpired:
		why = fmt.Sprintf("node %s in slot %d was absent from Consul and unreachable for the whole hold", holder.ID, i)
	default:
		why = fmt.Sprintf("a spare takes vacant slot %d", i)
	}
	why += fmt.Sprintf("; node %s, announced to it, serves it from %s", inc.NodeID, inc.ServesAt.UTC().Format(time.RFC3339))
	return Placement{Slot: i, Node: node, From: holder, Warm: warm, Reason: reason, Why: why, Until: inc.Until}
}

// ownSlot returns the slot whose holder slot i names: slot s for a twin,
// else i itself.
func (idx *assignIndex) ownSlot(i int) int {
	if idx.twin(i) {
		return i - idx.prev.ResizedFrom()
	}
	return i
}

// ServesAt returns when an announce written at now serves: AnnounceLead
// after the write.
func ServesAt(now time.Time) time.Time { return now.Add(cachenodes.AnnounceLead) }
