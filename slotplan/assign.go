package slotplan

import (
	"fmt"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/revert"
	"github.com/mcrib/mcrib/mcribapi"
)

// NodeView is what the loop knows of one node at the moment of a decision.
type NodeView struct {
	cachenodes.Node
	// Listed is true when the last accepted Consul answer lists the node.
	Listed bool
	// Present is true when Consul lists the node with every check passing.
	Present bool
	// Maintenance is true when the node is in Consul maintenance mode.
	Maintenance bool
	// Reachable is true when mcrib's last probe of the node succeeded (or
	// the node was not probed yet: nothing was observed against it).
	Reachable bool
	// Due is true when the hold has run out: absent and unreachable, both
	// for the whole hold.
	Due bool
	// DueSoon is true when the hold runs out within
	// cachenodes.AnnounceLead (Due implies it): absent and unreachable,
	// both counting. A replacement after the hold is announced then, so
	// that it serves as the hold ends (docs/api.md, "Announce, then
	// serve").
	DueSoon bool
	// Restarted is true when the node's memcached restarted (another pid,
	// or its uptime went back) since the loop's mark of it: its flush as
	// an incoming node, or the loop's first reading of it as one. An
	// incoming node that restarted lost its tombstones: its announce is
	// dropped; a warming's new holder that did ends the warming.
	Restarted bool
	// Suppressed is true while flap damping keeps the node from promotion.
	Suppressed bool
	// OwesFlush is true while the flushes document names the node
	// (invariant 2): nothing copies from it, so a move off it is cold
	// (invariant 9), and it is no ready spare.
	OwesFlush bool
	// Released is true while a roll has released the node and awaits its
	// restart (docs/api.md, "Rolling restarts"): it is no ready spare.
	Released bool
}

// warmSource reports whether a holder may warm its slot's new holder: it
// answers by the pool's verdict and owes no flush.
func (n NodeView) warmSource() bool { return n.Reachable && !n.OwesFlush }

// EligibleSpare reports whether a node without a slot may be placed: it
// is listed and present, not in maintenance, answers, is not held back by
// flap damping, owes no flush and is not released by a roll.
func (n NodeView) EligibleSpare() bool {
	return n.Listed && n.Present && !n.Maintenance && n.Reachable && !n.Suppressed && !n.OwesFlush && !n.Released
}

// listedSpare reports whether a node without a slot belongs in the spares
// list of the slot map document.
func (n NodeView) listedSpare() bool {
	return n.Listed && n.Present && !n.Maintenance && n.Reachable
}

// Input is everything Decide needs; it holds no I/O and reads no clock
// (Now is given).
type Input struct {
	Pool     string
	NumSlots int
	// Prev is the current map; nil for a new pool (the first fill places
	// without flushing).
	Prev *cachenodes.SlotMap
	// PrevShift places the instants of Prev, written by the clock of the
	// process that wrote it, on the clock of Now (the caller measures it,
	// as controlloop/remoteclock.go does). Zero for a map this process
	// wrote.
	PrevShift time.Duration
	// WarmEnds, when not nil, has one entry per slot of Prev: when clients
	// stop reading the slot's warm source (its ended_at, or its until), on
	// the clock of Now (the caller places each instant once, when first
	// read). A nil WarmEnds places every one at its ReadsUntil + PrevShift.
	// The warming object is removed WarmWriteGrace later.
	WarmEnds []time.Time
	// NoWriteGrace removes a warming object as soon as its reads end,
	// without the WarmWriteGrace that protects lagging readers: the bug
	// of revert.EndedWarmingGrace, for the simulation's self-test.
	// Production leaves it false.
	NoWriteGrace bool
	// RewriteEnded marks the slots whose ended_at is written again now:
	// the write that ended their warming took longer than ClockSkew.
	RewriteEnded map[int]bool
	// Incoming, when not nil, has one entry per slot of Prev: what the
	// loop knows of the slot's incoming node (announce.go); a slot without
	// an entry is taken as announced by another leader and not judged yet.
	Incoming []IncomingView
	// Nodes lists every node the loop knows: slot holders, warm sources and
	// the nodes of the last accepted Consul answer. A node ID appears at
	// most once.
	Nodes []NodeView
	// Frozen stops every change of a slot's node (operator or automatic)
	// but the drain and return steps.
	Frozen bool
	// OperatorFrozen is set under an operator's freeze: it holds back the
	// drain and return steps as well (docs/api.md, "Drain").
	OperatorFrozen bool
	// Budget is how many slot holders may be replaced now (the ceiling).
	Budget int
	// Ceiling is --max-replacements-per-minute, for the refusal of a
	// replace beyond it.
	Ceiling int

	// Drained lists the drained zones: their nodes take a slot only by
	// their own return steps.
	Drained map[string]bool
	// Steps are the drain and return steps due in this pass, by zone.
	Steps map[string]ZoneStep
	// WarmFor, when above 0, makes a planned move off a holder that
	// answers warm: the old holder warms the new one until Now + WarmFor.
	WarmFor time.Duration
	// Warmth holds what the loop read of each warming slot of Prev, by
	// slot (converge.go); a slot without an entry is judged by its until
	// and its nodes' answers alone. WarmRule judges it: a warming whose
	// new holder converged ends, and so does one whose warm source is in
	// a drained zone once DrainedCap(WarmFor) has passed since its start.
	Warmth   map[int]*WarmHistory
	WarmRule WarmRule
	// Now is the time of the pass: warmings whose until has passed end.
	Now time.Time
	// Replace names a node whose slot an operator moves now ("": none).
	Replace string
	// Split is the most twins a resize's split step moves in this pass
	// (split.go); 0 when no split step is due. An operator freeze holds
	// the step back; an automatic freeze does not, but for a fault of
	// discovery (DiscoveryFault): the splits wait then.
	Split int
	// DiscoveryFault is set while Consul's last answer was taken as a
	// fault of discovery (invariant 5): nothing is replaced (Frozen is set
	// too) and the splits wait.
	DiscoveryFault bool
	// SplitsPaused is set while a drain pauses the resize's splits: no
	// split step is due (Split is 0), and a split announced is dropped.
	SplitsPaused bool
	// Roll is the roll's node whose slot moves (roll.go): its move is
	// planned when not paused and not frozen, and an announce of it is
	// dropped otherwise. It counts against no ceiling.
	Roll RollInput

	// reverted are the fixes the simulation's self-test turned off
	// (revert.go); zero in production.
	reverted revert.Set
}

// ZoneStep is a drain or return step due for one zone in this pass.
type ZoneStep struct {
	// Target is the number of slots the zone should hold.
	Target int
	// Size is the most slots one step moves.
	Size int
	// Moved are the slots the zone's drain steps moved off it, ascending:
	// a return step gives these back first (undrain.go).
	Moved []int
}

// StepOutcome is what Decide did of one zone's due step.
type StepOutcome struct {
	// Moved counts the slots the step moves (off the zone or back to it).
	Moved int
	// Blocked says, in one sentence, what stopped the step short; "" when
	// nothing did.
	Blocked string
}

// Eviction takes a node out of its slot.
type Eviction struct {
	Slot int
	Node cachenodes.Node
	// Why is one sentence for the log and the metrics label.
	Why string
	// Reason is mcribapi.EvictionHoldExpired or mcribapi.EvictionMaintenance, or
	// for a planned move mcribapi.EvictionDrain, mcribapi.EvictionReturn or mcribapi.EvictionReplace.
	Reason mcribapi.EvictionReason
	// Move marks a planned move: the holder keeps the slot until its
	// successor is placed (a failed flush of the successor moves nothing).
	Move bool
	// Warm marks a move whose old holder warms the new one.
	Warm bool
}

// CountsAgainstCeiling reports whether the eviction is a replacement that
// --max-replacements-per-minute bounds (drain and return steps are not).
func (ev Eviction) CountsAgainstCeiling() bool {
	return ev.Reason.IsReplacement()
}

// Placement puts a spare into a slot: announced (Plan.Placements: the
// loop flushes the spare, Build writes it as the slot's incoming node), or
// served (Plan.Serves: the announce's node takes the slot). In the first
// fill of a new pool, Plan.Placements take their slots at once, unflushed.
type Placement struct {
	Slot int
	Node cachenodes.Node
	// From is the node the slot is taken from when the placement is part
	// of a replacement or a move; zero for a slot that was vacant.
	From cachenodes.Node
	// Warm marks a warm move: the slot keeps From as its warm source (for
	// an announce: the move is meant warm, and decided again when served).
	Warm bool
	// Reason is the eviction's reason for a move or replacement; "" for a
	// vacant slot.
	Reason mcribapi.EvictionReason
	// Why says in one sentence why the slot moves.
	Why string
	// Until is when a served warm move's warming ends: the announce's.
	Until time.Time
}

// Plan is the difference Decide wants between the previous and the next map.
type Plan struct {
	// Evictions are the slots vacated (a replacement without a spare),
	// and the moves announced (Move set: the holder stays).
	Evictions []Eviction
	// Placements are the announces to carry out, each a spare the loop
	// flushes first (in the first fill of a new pool: the placements
	// themselves, unflushed).
	Placements []Placement
	// Serves are the announces of Prev that serve now: the moves written
	// in this pass, with no flush.
	Serves []Placement
	// Drops are the announces of Prev dropped now.
	Drops []Drop
	// FirstFill is true when the pool is new: placements need no flush.
	FirstFill bool
	// Blocked counts evictions that were due but held back by the freeze
	// or the ceiling, and the maintenance of nodes that still answer held
	// back until a spare can be warmed from them.
	Blocked int
	// EndWarming lists the warmings whose reads end in this pass, before
	// their until: the next map writes their ended_at. RemovedWarming
	// lists the slots whose warming object goes (WarmWriteGrace after its
	// reads ended).
	EndWarming     []WarmingEnd
	RemovedWarming []int
	// Steps tells, for each zone of Input.Steps, what its step did.
	Steps map[string]StepOutcome
	// Refused, when Input.Replace was set and cannot be carried out, says
	// why in one sentence.
	Refused string
	// Split tells what the split step did; nil when none was due.
	Split *StepOutcome
	// Roll tells what the roll's move did; nil when none was due.
	Roll *StepOutcome

	index *assignIndex
}

// Decide computes the plan for one pass. First it judges what the
// previous map carries: the warmings that end or go (warming.go), the
// announces that serve now or are dropped (announce.go). Then it frees
// before it places: due and maintenance holders give their slots to
// spares (within Budget and only when not frozen), announced 12 s before
// the hold ends, or leave them vacant when no spare can take them; then
// vacant slots take eligible spares by the spread rule (spread.go); then
// the planned moves (an operator's replace, the maintenance of a node that
// still answers), the drain and return steps due and the split step pick
// their new holders the same way. Every placement but the first fill of a
// new pool is an announce (Plan.Placements): the loop flushes the spare
// and Build writes it as the slot's incoming node. A full slot table
// never stops it: extra nodes stay spares, missing nodes leave slots
// vacant. It runs in time linear in the nodes when in.Nodes is sorted by
// ID (as the loop passes them); otherwise it sorts a copy of the spares.
func Decide(in Input) Plan {
	plan := Plan{FirstFill: in.Prev == nil}
	idx := newAssignIndex(in)
	plan.index = idx
	warm := endWarmings(in)
	inc := judgeIncoming(&in, idx, warm, &plan)
	budget := in.Budget
	var repl, moves []Eviction
	replaceSlot := -1
	if in.Replace != "" {
		ev, refused := replaceMove(in, idx, &warm, inc)
		switch {
		case refused != "":
			plan.Refused = refused
		case budget <= 0:
			plan.Refused = fmt.Sprintf("the replacement ceiling of %d a minute (--max-replacements-per-minute) is reached; try again in a minute", in.Ceiling)
		default:
			budget--
			replaceSlot = ev.Slot
			moves = append(moves, ev)
		}
	}
	for i := range in.NumSlots {
		holder := idx.prevSlot(i)
		if holder.IsZero() || i == replaceSlot || idx.twin(i) || inc.announced(i) {
			continue // a twin goes where slot s goes; an announced slot is judged above
		}
		v, known := idx.holderView(in, i)
		if !known {
			continue // not known to the loop: nothing observed against it
		}
		var ev Eviction
		switch {
		case v.Maintenance:
			ev = Eviction{Slot: i, Node: holder, Reason: mcribapi.EvictionMaintenance,
				Why: fmt.Sprintf("node %s in slot %d is in Consul maintenance mode", holder.ID, i)}
			if v.warmSource() && (warm.busy[i] || warm.lending[i]) {
				// It still answers and its slot has a warming object: the
				// warming ends first (it would cost the slot what it
				// gathers, but the node is going), the slot moves once
				// the object is removed.
				if !in.Frozen {
					warm.end(&in, i, fmt.Sprintf("its holder %s is in Consul maintenance", holder.ID))
				}
				plan.Blocked++
				continue
			}
			if v.warmSource() && in.WarmFor > 0 {
				ev.Move, ev.Warm = true, true
				ev.Why += "; it still answers, so its slot moves warm"
			}
		case v.Due || v.DueSoon:
			ev = Eviction{Slot: i, Node: holder, Reason: mcribapi.EvictionHoldExpired,
				Why: fmt.Sprintf("node %s in slot %d was absent from Consul and unreachable for the whole hold", holder.ID, i)}
			if !v.Due {
				ev.Why = fmt.Sprintf("node %s in slot %d is absent from Consul and unreachable, and its hold ends within %s", holder.ID, i, cachenodes.AnnounceLead)
			}
			ev.Move = !v.Due // only a due holder leaves its slot vacant when no spare takes it
		default:
			continue
		}
		if in.Frozen {
			if v.Due || v.Maintenance {
				plan.Blocked++
			}
			continue
		}
		if warm.busy[i] || warm.lending[i] || (twinIncoming(&in, idx, i) && inc.announced(i+in.Prev.ResizedFrom())) {
			// No slot is announced while it has a warming object, nor slot
			// s while its twin is announced.
			if v.Due {
				plan.Blocked++
			}
			continue
		}
		if ev.Warm {
			moves = append(moves, ev) // after the vacant slots, as a planned move
			continue
		}
		repl = append(repl, ev)
	}
	stepping := len(in.Steps) > 0 && !in.OperatorFrozen
	hasVacant := false
	if !in.Frozen {
		for i := range in.NumSlots {
			if idx.prevSlot(i).IsZero() && !idx.twin(i) && !inc.announced(i) {
				hasVacant = true
				break
			}
		}
	}
	splitting := in.Split > 0 && !in.OperatorFrozen && idx.twins > 0
	rolling := in.Roll.Node != "" && !in.Roll.Paused && !in.Frozen
	if !hasVacant && len(repl) == 0 && len(moves) == 0 && !stepping && !splitting && !rolling {
		plan.EndWarming, plan.RemovedWarming = warm.ended, warm.removed
		return plan
	}
	z := newZoneIndex(in, idx, warm, inc)
	for _, ev := range repl {
		if budget <= 0 {
			if !ev.Move {
				plan.Blocked++
			}
			continue
		}
		if z.announceMove(&plan, ev, true) {
			budget--
			continue
		}
		if ev.Move {
			continue // its hold has not run out: it waits for a spare
		}
		// No spare: the due holder leaves its slot vacant (freeing comes
		// before placing); a spare fills it when one comes.
		budget--
		ev.Move = false
		z.vacate(ev)
		plan.Evictions = append(plan.Evictions, ev)
	}
	if !in.Frozen {
		for i := range in.NumSlots {
			if !idx.prevSlot(i).IsZero() || idx.twin(i) || inc.announced(i) || z.touched[i] {
				continue
			}
			j, ok := z.pickOrTake(&plan, "", false, i)
			if !ok {
				break
			}
			z.touched[i] = true
			plan.Placements = append(plan.Placements, Placement{Slot: i, Node: in.Nodes[j].Node,
				Why: fmt.Sprintf("a spare takes vacant slot %d", i)})
		}
	}
	for _, ev := range moves {
		if ev.Reason == mcribapi.EvictionReplace {
			if !z.announceMove(&plan, ev, false) {
				plan.Refused = fmt.Sprintf("no spare can take slot %d of node %s: %s", ev.Slot, ev.Node.ID, noSpareWhy(in, idx, warm))
			}
			continue
		}
		// The maintenance of a node that still answers: it keeps its slot
		// (and its contents) until a spare can be warmed from it
		// (invariant 9), held back like a replacement beyond the ceiling.
		if budget <= 0 || !z.announceMove(&plan, ev, false) {
			plan.Blocked++
			continue
		}
		budget--
	}
	if stepping {
		plan.Steps = z.steps(&plan)
	}
	if splitting {
		o := z.splits(&plan, warm)
		plan.Split = &o
	}
	if rolling {
		o := rollMove(in, idx, z, warm, inc, &plan)
		plan.Roll = &o
	}
	plan.EndWarming, plan.RemovedWarming = warm.ended, warm.removed
	return plan
}

// twinIncoming reports whether slot s has a twin in Prev (whose own
// announce, a split, keeps slot s from being announced).
func twinIncoming(in *Input, idx *assignIndex, s int) bool {
	return idx.twins > 0 && s < in.Prev.ResizedFrom() && idx.twin(s+in.Prev.ResizedFrom())
}

// replaceMove checks an operator's replace of in.Replace and returns its
// move, or why it cannot be done. A replace of a slot that warms ends the
// warming (warm) and is refused until its object is removed.
func replaceMove(in Input, idx *assignIndex, warm *warmState, inc incomingState) (Eviction, string) {
	slot := -1
	if in.Prev != nil {
		slot = in.Prev.SlotOf(in.Replace)
	}
	at := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	switch {
	case slot < 0:
		return Eviction{}, fmt.Sprintf("node %s holds no slot", in.Replace)
	case in.OperatorFrozen:
		return Eviction{}, "membership is frozen by an operator (mcrib unfreeze lifts it)"
	case in.Frozen:
		return Eviction{}, "membership is frozen automatically (see auto_freeze_reason in the status)"
	case inc.announced(slot):
		ni := in.Prev.Incoming(slot)
		return Eviction{}, fmt.Sprintf("slot %d is announced to node %s already, which serves it from %s", slot, ni.NodeID, at(ni.ServesAt))
	case warm.keep[slot]:
		// Its new holder is being filled from the old one: the warming
		// ends first, and the slot moves once its warming object is gone.
		ws := in.Prev.Warming(slot)
		warm.end(&in, slot, "an operator replaces its holder "+in.Replace)
		return Eviction{}, fmt.Sprintf("slot %d was warming from %s: its warming is ended now, and the slot can be replaced once its warming object is removed, at %s; replace again then",
			slot, ws.NodeID, at(in.Now.Add(cachenodes.WarmWriteGrace)))
	case warm.busy[slot]:
		return Eviction{}, fmt.Sprintf("slot %d's warming ended; its warming object is removed at %s, and the slot can be replaced then", slot, at(in.WarmGone(slot)))
	case warm.lending[slot]:
		t := slot + in.Prev.ResizedFrom()
		return Eviction{}, fmt.Sprintf("node %s is the warm source of slot %d, split from its slot %d, until %s", in.Replace, t, slot, at(in.WarmGone(t)))
	case twinIncoming(&in, idx, slot) && inc.announced(slot+in.Prev.ResizedFrom()):
		t := slot + in.Prev.ResizedFrom()
		return Eviction{}, fmt.Sprintf("slot %d's twin %d is announced to split off to node %s; replace again once it serves, at %s", slot, t, in.Prev.Incoming(t).NodeID, at(in.Prev.Incoming(t).ServesAt))
	}
	v, known := idx.holderView(in, slot)
	holder := idx.prevSlot(slot)
	ev := Eviction{Slot: slot, Node: holder, Reason: mcribapi.EvictionReplace, Move: true,
		Warm: known && v.warmSource() && in.WarmFor > 0,
		Why:  fmt.Sprintf("an operator replaces node %s in slot %d", holder.ID, slot)}
	return ev, ""
}

// assignIndex is what Decide learned of the input, handed to Build so a
// pass reads the nodes once.
type assignIndex struct {
	prev     *cachenodes.SlotMap
	numSlots int
	twins    int     // how many slots of prev are twins
	slots    int     // numSlots less the twins: the slots that count
	holders  int     // how many of Nodes hold a slot
	view     []int32 // index in Nodes of each slot's holder; -1 if unknown
	slotOf   []int32 // slot of each node of Nodes in the previous map; -1 if none
	sorted   bool    // in.Nodes is sorted by ID
	// byID indexes Nodes by ID, built on demand (nodeView).
	byID map[string]int32
}

func newAssignIndex(in Input) *assignIndex {
	idx := &assignIndex{prev: in.Prev, numSlots: in.NumSlots, slots: in.NumSlots, view: make([]int32, in.NumSlots), slotOf: make([]int32, len(in.Nodes)), sorted: true}
	if in.Prev != nil && in.Prev.NumSlots() == in.NumSlots {
		idx.twins = in.Prev.NumTwins()
		idx.slots -= idx.twins
	}
	for i := range idx.view {
		idx.view[i] = -1
	}
	for j := range in.Nodes {
		id := in.Nodes[j].ID
		if j > 0 && in.Nodes[j-1].ID >= id {
			idx.sorted = false
		}
		idx.slotOf[j] = -1
		if in.Prev == nil {
			continue
		}
		if i := in.Prev.SlotOf(id); i >= 0 && i < in.NumSlots {
			idx.view[i] = int32(j)
			idx.slotOf[j] = int32(i)
			idx.holders++
		}
	}
	return idx
}

// twin reports whether slot i is a twin in the previous map: it counts as
// one slot with slot s and follows it.
func (idx *assignIndex) twin(i int) bool { return idx.twins > 0 && idx.prev.IsTwin(i) }

// prevSlot returns the node of slot i in the previous map.
func (idx *assignIndex) prevSlot(i int) cachenodes.Node {
	if idx.prev == nil || i >= idx.prev.NumSlots() {
		return cachenodes.Node{}
	}
	return idx.prev.Slot(i)
}

// holderView returns the view of slot i's previous holder, if known.
func (idx *assignIndex) holderView(in Input, i int) (NodeView, bool) {
	if j := idx.view[i]; j >= 0 {
		return in.Nodes[j], true
	}
	return NodeView{}, false
}
