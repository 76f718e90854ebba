package slotplan

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
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
	// Suppressed is true while flap damping keeps the node from promotion.
	Suppressed bool
	// OwesFlush is true while the flushes document names the node
	// (invariant 2): nothing copies from it, so a move off it is cold
	// (invariant 9), and it is no ready spare.
	OwesFlush bool
}

// warmSource reports whether a holder may warm its slot's new holder: it
// answers by the pool's verdict and owes no flush.
func (n NodeView) warmSource() bool { return n.Reachable && !n.OwesFlush }

// EligibleSpare reports whether a node without a slot may be placed: it
// is listed and present, not in maintenance, answers, is not held back by
// flap damping and owes no flush.
func (n NodeView) EligibleSpare() bool {
	return n.Listed && n.Present && !n.Maintenance && n.Reachable && !n.Suppressed && !n.OwesFlush
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
	// WarmEnds, when not nil, has one entry per slot of Prev: when the
	// slot's warming ends on the clock of Now (the caller places each
	// warming once, when first read). A nil WarmEnds places every warming
	// at its until + PrevShift.
	WarmEnds []time.Time
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
	// Now is the time of the pass: warmings whose until has passed end.
	Now time.Time
	// Replace names a node whose slot an operator moves now ("": none).
	Replace string
	// Split is the most twins a resize's split step moves in this pass
	// (split.go); 0 when no split step is due. An operator freeze holds
	// the step back; an automatic freeze does not.
	Split int
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
	// Reason is EvictionHoldExpired or EvictionMaintenance, or
	// for a planned move EvictionDrain, EvictionReturn or EvictionReplace.
	Reason EvictionReason
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

// Placement puts a spare into a slot.
type Placement struct {
	Slot int
	Node cachenodes.Node
	// From is the node the slot is taken from when the placement is part
	// of a replacement or a move; zero for a slot that was vacant.
	From cachenodes.Node
	// Warm marks a warm move: the slot keeps From as its warm source.
	Warm bool
	// Reason is the eviction's reason for a move or replacement; "" for a
	// vacant slot.
	Reason EvictionReason
}

// Plan is the difference Decide wants between the previous and the next map.
type Plan struct {
	Evictions  []Eviction
	Placements []Placement
	// FirstFill is true when the pool is new: placements need no flush.
	FirstFill bool
	// Blocked counts evictions that were due but held back by the freeze
	// or the ceiling, and the maintenance of nodes that still answer held
	// back until a spare can be warmed from them.
	Blocked int
	// EndWarming lists the slots whose warming ends in this pass (until
	// passed, or the warm source stopped answering).
	EndWarming []int
	// Steps tells, for each zone of Input.Steps, what its step did.
	Steps map[string]StepOutcome
	// Refused, when Input.Replace was set and cannot be carried out, says
	// why in one sentence.
	Refused string
	// Split tells what the split step did; nil when none was due.
	Split *StepOutcome

	index *assignIndex
}

// Decide computes the plan for one pass. It frees before it places: due
// and maintenance nodes leave their slots first (within Budget and only
// when not frozen), then vacant slots take eligible spares by the spread
// rule (spread.go); then the planned moves (an operator's replace, the
// maintenance of a node that still answers) and the drain and return steps
// due pick their new holders the same way. A full slot table never stops
// it: extra nodes stay spares, missing nodes leave slots vacant. It runs in
// time linear in the nodes when in.Nodes is sorted by ID (as the loop
// passes them); otherwise it sorts a copy of the spares.
func Decide(in Input) Plan {
	plan := Plan{FirstFill: in.Prev == nil}
	idx := newAssignIndex(in)
	plan.index = idx
	warm := endWarmings(in)
	plan.EndWarming = warm.ended
	budget := in.Budget
	var vacated, moves []Eviction
	replaceSlot := -1
	if in.Replace != "" {
		ev, refused := replaceMove(in, idx, warm)
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
		if holder.IsZero() || i == replaceSlot || idx.twin(i) {
			continue // a twin goes where slot s goes
		}
		v, known := idx.holderView(in, i)
		if !known {
			continue // not known to the loop: nothing observed against it
		}
		var ev Eviction
		switch {
		case v.Maintenance:
			ev = Eviction{Slot: i, Node: holder, Reason: EvictionMaintenance,
				Why: fmt.Sprintf("node %s in slot %d is in Consul maintenance mode", holder.ID, i)}
			if v.warmSource() && (warm.keep[i] || warm.lending[i]) {
				// It still answers and is itself being warmed: it keeps
				// the slot until the warming ends (then it moves warm).
				plan.Blocked++
				continue
			}
			if v.warmSource() && in.WarmFor > 0 {
				ev.Move, ev.Warm = true, true
				ev.Why += "; it still answers, so its slot moves warm"
			}
		case v.Due:
			ev = Eviction{Slot: i, Node: holder, Reason: EvictionHoldExpired,
				Why: fmt.Sprintf("node %s in slot %d was absent from Consul and unreachable for the whole hold", holder.ID, i)}
		default:
			continue
		}
		if in.Frozen {
			plan.Blocked++
			continue
		}
		if ev.Move {
			// A warm move takes the budget only when a spare takes the
			// slot (below); until then the holder keeps it.
			moves = append(moves, ev)
			continue
		}
		if budget <= 0 {
			plan.Blocked++
			continue
		}
		budget--
		vacated = append(vacated, ev)
	}
	plan.Evictions = vacated
	stepping := len(in.Steps) > 0 && !in.OperatorFrozen
	hasVacant := len(vacated) > 0
	if !in.Frozen && !hasVacant {
		for i := range in.NumSlots {
			if idx.prevSlot(i).IsZero() && !idx.twin(i) {
				hasVacant = true
				break
			}
		}
	}
	splitting := in.Split > 0 && !in.OperatorFrozen && idx.twins > 0
	if (in.Frozen || !hasVacant) && len(moves) == 0 && !stepping && !splitting {
		return plan
	}
	z := newZoneIndex(in, idx, vacated, warm)
	if !in.Frozen {
		// Slots vacated in this pass come first, so each takes a spare of
		// its departed node's zone before an already vacant slot (with no
		// zone to prefer) takes one.
		for _, ev := range vacated {
			j, ok := z.pick(ev.Node.AZ, true)
			if !ok {
				break
			}
			plan.Placements = append(plan.Placements, Placement{Slot: ev.Slot, Node: in.Nodes[j].Node, From: ev.Node, Reason: ev.Reason})
		}
		for i := range in.NumSlots {
			if !idx.prevSlot(i).IsZero() || idx.twin(i) {
				continue
			}
			j, ok := z.pick("", false)
			if !ok {
				break
			}
			plan.Placements = append(plan.Placements, Placement{Slot: i, Node: in.Nodes[j].Node})
		}
	}
	for _, ev := range moves {
		if ev.Reason == EvictionReplace {
			if !z.move(&plan, ev) {
				plan.Refused = fmt.Sprintf("no spare can take slot %d of node %s: %s", ev.Slot, ev.Node.ID, noSpareWhy(in, idx, warm))
			}
			continue
		}
		// The maintenance of a node that still answers: it keeps its slot
		// (and its contents) until a spare can be warmed from it
		// (invariant 9), held back like a replacement beyond the ceiling.
		if budget <= 0 || !z.move(&plan, ev) {
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
	return plan
}

// replaceMove checks an operator's replace of in.Replace and returns its
// move, or why it cannot be done.
func replaceMove(in Input, idx *assignIndex, warm warmState) (Eviction, string) {
	slot := -1
	if in.Prev != nil {
		slot = in.Prev.SlotOf(in.Replace)
	}
	switch {
	case slot < 0:
		return Eviction{}, fmt.Sprintf("node %s holds no slot", in.Replace)
	case in.OperatorFrozen:
		return Eviction{}, "membership is frozen by an operator (mcrib unfreeze lifts it)"
	case in.Frozen:
		return Eviction{}, "membership is frozen automatically (see auto_freeze_reason in the status)"
	case warm.keep[slot]:
		// Its new holder is being filled from the old one: moving it now
		// would cost the slot what it has gathered.
		ws := in.Prev.Warming(slot)
		return Eviction{}, fmt.Sprintf("slot %d is still being warmed from %s until %s", slot, ws.NodeID, in.WarmEnd(slot).UTC().Format(time.RFC3339))
	case warm.lending[slot]:
		t := slot + in.Prev.ResizedFrom()
		return Eviction{}, fmt.Sprintf("node %s is warming slot %d, split from its slot %d, until %s", in.Replace, t, slot, in.WarmEnd(t).UTC().Format(time.RFC3339))
	}
	v, known := idx.holderView(in, slot)
	holder := idx.prevSlot(slot)
	ev := Eviction{Slot: slot, Node: holder, Reason: EvictionReplace, Move: true,
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

// Build applies the evictions of plan and the placements that were carried
// out (done; with a flush unless FirstFill) to the previous map, refreshes
// the addresses of listed slot holders and the spares list, and returns the
// next map. The generation rises by one exactly when a slot's node changed;
// updated_at moves whenever the document changed; an unchanged document is
// returned as in.Prev itself, without building anything.
func Build(in Input, plan Plan, done []Placement, now time.Time) (*cachenodes.SlotMap, error) {
	idx := plan.index
	if idx == nil {
		idx = newAssignIndex(in)
	}
	// The few slots this pass changes; every other slot keeps its holder.
	changed := make(map[int]cachenodes.Node, len(plan.Evictions)+len(done))
	var moving map[int]bool
	for _, ev := range plan.Evictions {
		if ev.Move {
			if moving == nil {
				moving = make(map[int]bool)
			}
			moving[ev.Slot] = true
			continue // the holder stays until its successor is placed
		}
		if idx.prevSlot(ev.Slot).ID == ev.Node.ID {
			changed[ev.Slot] = cachenodes.Node{}
		}
	}
	placed := make(map[string]bool, len(done))
	var warmed map[int]*cachenodes.Warming
	for _, p := range done {
		if cur, ok := changed[p.Slot]; (ok && cur.IsZero()) || (!ok && (idx.prevSlot(p.Slot).IsZero() || moving[p.Slot])) {
			changed[p.Slot] = p.Node
			placed[p.Node.ID] = true
			if p.Warm && in.WarmFor > 0 {
				if warmed == nil {
					warmed = make(map[int]*cachenodes.Warming)
				}
				from, src := p.From, p.Slot
				if p.Reason == EvictionSplit {
					src -= in.Prev.ResizedFrom() // slot s's holder warms its split twin
				}
				if v, ok := idx.holderView(in, src); ok && v.ID == from.ID && v.Listed && v.Addr != "" {
					from = v.Node
				}
				warmed[p.Slot] = &cachenodes.Warming{NodeID: from.ID, Addr: from.Addr, Until: now.Add(in.WarmFor)}
			}
		}
	}
	// The twins left: those of Prev that no split of this pass took.
	var twins []int
	if idx.twins > 0 {
		rf := in.Prev.ResizedFrom()
		for t := rf; t < in.NumSlots; t++ {
			if _, split := changed[t]; in.Prev.IsTwin(t) && !split {
				twins = append(twins, t)
			}
		}
	}
	warming, sources := nextWarming(in, plan, changed, warmed, twins)
	slotAt := func(i int) cachenodes.Node {
		if n, ok := changed[i]; ok {
			return n
		}
		n := idx.prevSlot(i)
		if v, ok := idx.holderView(in, i); ok && v.Listed && v.Addr != "" {
			return v.Node
		}
		return n
	}
	// The addresses of the next map's warm sources: a node registered at
	// one of them (the same memcached under another service ID) is no
	// spare either (section 7).
	var taken map[string]bool
	for _, w := range warming {
		if w != nil {
			if taken == nil {
				taken = make(map[string]bool)
			}
			taken[w.Addr] = true
		}
	}
	isSpare := func(j int) bool {
		n := &in.Nodes[j]
		if i := idx.slotOf[j]; i >= 0 {
			if cur, ok := changed[int(i)]; !ok || cur.ID == n.ID {
				return false // still holds its slot
			}
		}
		return n.listedSpare() && (len(placed) == 0 || !placed[n.ID]) && (sources == nil || !sources[n.ID]) && !taken[n.Addr]
	}
	slots := make([]cachenodes.Node, in.NumSlots)
	for i := range slots {
		if _, split := changed[i]; split || !idx.twin(i) {
			slots[i] = slotAt(i)
		}
	}
	keepAddrsDistinct(slots, idx)
	var twinMarks []bool
	if len(twins) > 0 {
		// Each twin left names slot s's node in the same write.
		twinMarks = make([]bool, in.NumSlots)
		for _, t := range twins {
			slots[t] = slots[t-in.Prev.ResizedFrom()]
			twinMarks[t] = true
		}
	}
	// The spares, by ID: one memcached is listed once, and never one a
	// slot holder or a warm source has (the same memcached registered
	// under a second service ID, section 7).
	order := make([]int, 0, len(in.Nodes))
	for j := range in.Nodes {
		if isSpare(j) {
			order = append(order, j)
		}
	}
	if !idx.sorted {
		slices.SortFunc(order, func(a, b int) int { return cmp.Compare(in.Nodes[a].ID, in.Nodes[b].ID) })
	}
	listed := make(map[string]bool, len(slots)+len(order))
	for _, n := range slots {
		if n.Addr != "" {
			listed[n.Addr] = true
		}
	}
	spareNodes := make([]cachenodes.Node, 0, len(order))
	for _, j := range order {
		if n := in.Nodes[j].Node; !listed[n.Addr] {
			listed[n.Addr] = true
			spareNodes = append(spareNodes, n)
		}
	}

	if in.Prev != nil && in.Prev.Pool() == in.Pool && in.Prev.NumSlots() == in.NumSlots && len(plan.EndWarming) == 0 && warmed == nil &&
		in.Prev.NumSpares() == len(spareNodes) {
		same := true
		for i := 0; same && i < in.NumSlots; i++ {
			same = slots[i] == in.Prev.Slot(i)
		}
		for k := 0; same && k < len(spareNodes); k++ {
			same = in.Prev.Spare(k) == spareNodes[k]
		}
		if same {
			return in.Prev, nil
		}
	}

	spec := cachenodes.SlotMapSpec{Pool: in.Pool, Slots: slots, Spares: spareNodes, UpdatedAt: now, Warming: warming, Twins: twinMarks}
	if in.Prev != nil && in.Prev.NumSlots() == in.NumSlots {
		spec.ResizedFrom = in.Prev.ResizedFrom()
	}
	switch {
	case in.Prev == nil:
		spec.Generation = 1
	case !sameIDs(in.Prev, spec.Slots):
		spec.Generation = in.Prev.Generation() + 1
	default:
		spec.Generation = in.Prev.Generation()
		if in.Prev.Pool() == in.Pool && sameDoc(in.Prev, spec) {
			return in.Prev, nil
		}
	}
	// A warming kept from Prev keeps its until exactly as first written,
	// whichever clock writes the map now: clients stop reading the old
	// holder at until by their own clocks and send it their writes until
	// until plus the clock skew, so an until that moved would let one
	// client read the old holder after another stopped writing to it.
	next, err := cachenodes.NewSlotMap(spec)
	if err != nil {
		return nil, fmt.Errorf("building the next slot map: %w", err)
	}
	return next, nil
}

func sameIDs(m *cachenodes.SlotMap, slots []cachenodes.Node) bool {
	if m.NumSlots() != len(slots) {
		return false
	}
	for i, n := range slots {
		if m.Slot(i).ID != n.ID {
			return false
		}
	}
	return true
}

// sameDoc reports whether m holds exactly the slots and spares of spec.
func sameDoc(m *cachenodes.SlotMap, spec cachenodes.SlotMapSpec) bool {
	if m.NumSlots() != len(spec.Slots) || m.NumSpares() != len(spec.Spares) {
		return false
	}
	for i, n := range spec.Slots {
		if m.Slot(i) != n {
			return false
		}
	}
	for i, n := range spec.Spares {
		if m.Spare(i) != n {
			return false
		}
	}
	if !m.AnyWarming() && spec.Warming == nil {
		return true
	}
	for i := range spec.Slots {
		var w *cachenodes.Warming
		if spec.Warming != nil {
			w = spec.Warming[i]
		}
		if !m.Warming(i).Equal(w) {
			return false
		}
	}
	return true
}
