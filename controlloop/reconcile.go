package controlloop

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/kvlayout"
	"github.com/mcrib/mcrib/internal/revert"
	"github.com/mcrib/mcrib/leader"
	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/slotplan"
)

// errConflict is the error of a pass whose check-and-set write failed.
var errConflict = errors.New("the slot map changed under this pass (check-and-set failed)")

// Result is the outcome of one reconcile pass.
type Result struct {
	// Outcome is one of mcribapi.Outcomes.
	Outcome mcribapi.Outcome
}

// Reconcile makes one level-based pass: it reads the pool's keys, decides
// the next slot map from the previous one and what is observed of the
// nodes, carries out the flushes it needs and writes the difference with
// check-and-set. A follower only adopts the stored map. A non-nil error
// means the pass failed (Outcome "error" or "conflict"); the caller backs
// off and calls again. Run calls it; tests may call it directly.
func (l *Loop) Reconcile(ctx context.Context) (Result, error) {
	l.passMu.Lock()
	defer l.passMu.Unlock()
	return l.reconcile(ctx)
}

// reconcile is one pass; l.passMu must be held. It decides (reading the
// pool's keys, then under the loop's mutex without I/O), writes what it
// decided (this replica's vote; for the leader the flushes and the pool's
// documents), and publishes what it did, once, at its end (publish.go).
func (l *Loop) reconcile(ctx context.Context) (Result, error) {
	var r report
	start := l.clock.Now()
	p, err := l.decide(ctx, &r)
	res := Result{Outcome: mcribapi.OutcomeError}
	if err == nil {
		res, err = l.write(ctx, p, &r)
	}
	r.outcome = res.Outcome
	took := l.clock.Now().Sub(start)
	r.count(func(m Metrics) { m.Pass(res.Outcome, took) })
	l.publish(ctx, &r)
	l.syncCopies()
	return res, err
}

// pass is what the decision of a pass hands to its write.
type pass struct {
	// st is the read the pass decided from, at now; lease is the leader
	// lock's term as the pass began, leading whether it was held.
	st      Snapshot
	now     time.Time
	lease   leader.Lease
	leading bool
	// vote is this replica's vote when it is due (nil: none).
	vote *pendingVote
	// d is the leader's decision; nil for a follower, and for a leader
	// with nothing to decide from.
	d *decision
}

// decision is what the leader's pass decided, for write to carry out.
type decision struct {
	prev      *cachenodes.SlotMap
	in        slotplan.Input
	plan      slotplan.Plan
	returning []cachenodes.Node
	// owed are the flushes the pool owes, with those decided in this
	// pass; flush are the slot holders among them flushed in this pass.
	owed  []OwedFlush
	flush []cachenodes.Node
	// flushNext is set when the pass decided a flush of a node that
	// answers already: stored by this pass, carried out by the next,
	// which it asks for.
	flushNext bool
	// replace is the operator's replace the pass carries out (nil: none).
	replace *replaceRequest
	// resize is what the pass decided of the resize; stored is the slot
	// map as read, for the generation of a first write.
	resize resizeDecision
	stored *cachenodes.SlotMap
	// roll is the roll's step of the pass (roll.go).
	roll rollStep
}

// decide reads the pool's keys and, in one hold of the loop's mutex, takes
// them in and decides: a follower adopts the stored map, the leader
// decides the next one (decideLocked). It tells in r what it found. An
// error means the pass failed before deciding anything.
func (l *Loop) decide(ctx context.Context, r *report) (pass, error) {
	readAt := l.clock.Now()
	st, err := l.store.Read(ctx)
	now := l.clock.Now()
	if err != nil {
		l.mu.Lock()
		defer l.mu.Unlock()
		var ce *CorruptError
		if errors.As(err, &ce) {
			l.health.sawCorrupt(ce.Keys)
		}
		l.health.failed(err, !isKVRefusal(err))
		return pass{}, err
	}
	if err := l.checkSlots(st.SlotMap); err != nil {
		l.setPassError(err, false)
		return pass{}, err
	}
	var member leader.Lease
	hasMember := false
	if l.opts.ReplicaID != "" {
		member, hasMember = l.lead.Member()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.health.readMap(readAt)
	l.health.sawCorrupt(st.Corrupt)
	if err := l.checkStored(st.SlotMap, l.current); err != nil {
		r.log(slog.LevelError, "refusing the stored slot map", "err", err)
		l.health.failed(err, false)
		return pass{}, err
	}
	p := pass{st: st, now: now}
	p.lease, p.leading = l.lead.Lease()
	shift, base := l.takeInLocked(st, now, r)
	p.vote = l.votes.due(l.opts.ReplicaID, l.tr, member, hasMember)
	if !p.leading {
		l.followLocked(st.SlotMap, shift, now, r)
		r.serve(l.current)
		return p, nil
	}
	d, ok := l.decideLocked(st, shift, base, now, r)
	l.nodeEventsLocked(r, l.tr.drain()) // transitions the pass itself decided (an observer fault's end)
	if ok {
		p.d = &d
	}
	return p, nil
}

// takeInLocked takes in st, read at now: the freeze, the leader, the
// drains, the replicas' votes (r tells the node transitions they cause).
// It returns the shift that places the instants of st's map on this clock
// and the flushes the pool owes as st has them. l.mu must be held.
func (l *Loop) takeInLocked(st Snapshot, now time.Time, r *report) (shift time.Duration, owed []OwedFlush) {
	l.health.consulErr = nil
	l.freeze.doc, l.leaderID = st.Freeze, st.LeaderID
	l.drains.take(st)
	l.resizes.take(st)
	l.rolls.take(st)
	l.drains.placeSteps(&l.remote, now)
	l.resizes.placeStep(&l.remote, now)
	shift = l.remote.shiftOf(st.SlotMap, st.SlotMapIndex, now)
	owed = l.owed.take(st, l.tr, now)
	l.nodeEventsLocked(r, l.votes.take(l.opts.ReplicaID, st.Votes, &l.remote, l.tr, now))
	return shift, owed
}

// followLocked adopts the stored map m (keeping the known one when nothing
// is stored), whose instants shift places on this clock; r tells what the
// automatic freeze found. l.mu must be held.
func (l *Loop) followLocked(m *cachenodes.SlotMap, shift time.Duration, now time.Time, r *report) {
	if m != nil {
		l.moves.note(l.tr, l.current, m, now)
		l.warmth.track(m, now)
		l.current, l.currentShift = m, shift
		l.remote.placeWarmings(m, shift)       // placed when first seen, should this process lead
		l.announces.views(l.tr, m, shift, now) // the same for its announces
	}
	l.tr.ensure(l.current, now)
	l.tr.prune(l.current, now)
	l.tr.judgedEnded()
	l.autoFreezeLocked(l.current, r) // shown in the status; the leader acts on it
	l.health.passed(now)
	l.noteCapacityLocked(now)
}

// decideLocked decides the leader's pass from st, whose slot map's
// instants shift places on this clock and whose owed flushes are base; ok
// is false while there is nothing to decide from (no map known, no answer
// of discovery yet). r tells what it decided on the way (the automatic
// freeze, the flushes owed). l.mu must be held.
func (l *Loop) decideLocked(st Snapshot, shift time.Duration, base []OwedFlush, now time.Time, r *report) (d decision, ok bool) {
	prev := st.SlotMap
	if prev == nil || (l.current != nil && l.current.Generation() > prev.Generation()) {
		// The store lost its keys (a restarted dev agent) or holds an older
		// map: put back the map this process knows rather than start anew.
		prev, shift = l.current, l.currentShift
	}
	if prev == nil && !l.tr.haveAnswer {
		return decision{}, false
	}
	stored := prev
	numSlots, split := l.numSlots(), 0
	var rd resizeDecision
	if prev != nil {
		from := prev
		conflict := func(fresh bool) error { return l.resizeConflictLocked(st, from, now, fresh) }
		prev, split, rd = l.resizes.decide(prev, conflict, kvlayout.For(l.opts.KVPrefix, l.opts.Pool).Resize(), len(l.drains.drained()) > 0, &l.remote, now)
		numSlots = prev.NumSlots()
	}
	l.tr.ensure(prev, now)
	tripped := l.autoFreezeLocked(prev, r)
	var roll rollStep
	if keepsRoll(l.store) {
		roll = l.rollDecideLocked(st, prev, tripped, now)
	}
	owed := l.owed.decide(l.tr, prev, base, now, r)
	incoming := l.announces.views(l.tr, prev, shift, now)
	nodes := l.tr.views(now)
	for i := range nodes {
		if !l.reverted.Reverted(revert.WarmFromOwing) {
			nodes[i].OwesFlush = owedIndex(owed, nodes[i].ID) >= 0
		}
		nodes[i].Restarted = l.announces.restarted(l.tr, nodes[i].ID)
		nodes[i].Released = roll.released(nodes[i].ID)
	}
	in := slotplan.Input{
		Pool:           l.opts.Pool,
		NumSlots:       numSlots,
		Prev:           prev,
		PrevShift:      shift,
		WarmEnds:       l.remote.placeWarmings(prev, shift),
		RewriteEnded:   l.announces.rewriteSlots(),
		NoWriteGrace:   l.reverted.Reverted(revert.EndedWarmingGrace),
		Incoming:       incoming,
		Nodes:          nodes,
		Frozen:         st.Freeze != nil || tripped,
		OperatorFrozen: st.Freeze != nil,
		Budget:         l.adoptedBudgetLocked(st, shift, now),
		Ceiling:        l.opts.MaxReplacementsPerMinute,
		Drained:        l.drains.drained(),
		Steps:          l.drains.dueSteps(l.tr, &l.remote, prev, now),
		WarmFor:        l.opts.WarmFor,
		Now:            now,
		Split:          split,
		DiscoveryFault: l.tr.fault != "",
		SplitsPaused:   len(l.drains.drained()) > 0,
		Replace:        l.replace.node(),
		Roll:           roll.in,
	}
	if l.opts.Converge != nil {
		in.Warmth, in.WarmRule = l.warmth.histories(), *l.opts.Converge
	}
	if l.reverted != 0 {
		revert.Apply(&in, l.reverted) // the self-test's switch (revert.go)
	}
	var plan slotplan.Plan
	if !rd.doubled {
		// The first write of a resize carries the doubling alone (no slot
		// changes holder in it, docs/api.md, "Growing the pool").
		plan = slotplan.Decide(in)
	}
	l.announces.announcing(l.tr, plan)
	l.health.blocked = plan.Blocked
	l.replace.refused(plan.Refused)
	var returning []cachenodes.Node
	if !in.Frozen && l.tr.cfg.LegacyFlush {
		// The old path (revert.FollowerFlush): the nodes this process
		// marked itself from its own probe timing.
		returning = l.tr.returning(prev)
	}
	// A freeze, an operator's or the automatic one, holds back the owed
	// flushes too (invariant 7): they stay flush_pending until it lifts.
	flush, later := l.owed.toFlush(l.tr, prev, owed, base, in.Frozen)
	return decision{prev: prev, in: in, plan: plan, returning: returning, owed: owed, flush: flush, flushNext: later, replace: l.replace.req,
		resize: rd, stored: stored, roll: roll}, true
}

// adoptedBudgetLocked returns how many slot holders may be replaced now,
// counting the replacements the previous leader stored with the map (by
// its clock; shift places them on this one) as well as this process's
// own: the ceiling holds across a takeover, two replacements at one
// instant counting twice. With revert.CeilingAfterTakeover such twins
// count once, as they once did. l.mu must be held.
func (l *Loop) adoptedBudgetLocked(st Snapshot, shift time.Duration, now time.Time) int {
	times := shifted(st.Replacements, shift)
	if l.reverted.Reverted(revert.CeilingAfterTakeover) {
		times = slices.CompactFunc(slices.SortedFunc(slices.Values(times), func(a, b time.Time) int { return a.Compare(b) }),
			func(a, b time.Time) bool { return a.Equal(b) })
	}
	l.ceiling.Adopt(times)
	return l.ceiling.Remaining(now)
}
