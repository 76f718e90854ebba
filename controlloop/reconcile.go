package controlloop

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/eventlog"
	"github.com/mcrib/mcrib/internal/kvlayout"
	"github.com/mcrib/mcrib/internal/revert"
	"github.com/mcrib/mcrib/leader"
	"github.com/mcrib/mcrib/slotplan"
)

// Outcomes of a reconcile pass, the label values of Metrics.Pass.
const (
	// OutcomeOK: the leader's pass completed (written or nothing to write).
	OutcomeOK = "ok"
	// OutcomeError: the pass failed; Run backs off and retries.
	OutcomeError = "error"
	// OutcomeConflict: the check-and-set write failed because the slot
	// map, the freeze or the leader lock changed under the pass.
	OutcomeConflict = "conflict"
	// OutcomeFollower: this process follows the stored map.
	OutcomeFollower = "follower"
	// OutcomeWaiting: the leader knows no map yet and has no answer of
	// discovery to build the first one from.
	OutcomeWaiting = "waiting"
)

// errConflict is the error of a pass whose check-and-set write failed.
var errConflict = errors.New("the slot map changed under this pass (check-and-set failed)")

// Result is the outcome of one reconcile pass.
type Result struct {
	// Outcome is one of the Outcome constants.
	Outcome string
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

// reconcile is one pass; l.passMu must be held.
func (l *Loop) reconcile(ctx context.Context) (Result, error) {
	st, err := l.store.Read(ctx)
	now := l.clock.Now()
	if err != nil {
		var ce *CorruptError
		if errors.As(err, &ce) {
			l.mu.Lock()
			l.setCorruptLocked(ce.Keys)
			l.mu.Unlock()
		}
		l.setPassError(err, !isKVRefusal(err))
		return Result{Outcome: OutcomeError}, err
	}
	if err := l.checkSlots(st.SlotMap); err != nil {
		l.setPassError(err, false)
		return Result{Outcome: OutcomeError}, err
	}
	l.mu.Lock()
	known := l.current
	l.setCorruptLocked(st.Corrupt)
	l.mu.Unlock()
	if err := l.checkStored(st.SlotMap, known); err != nil {
		l.opts.Logger.Error("refusing the stored slot map", "err", err)
		l.setPassError(err, false)
		return Result{Outcome: OutcomeError}, err
	}
	lease, leading := l.lead.Lease()

	l.mu.Lock()
	l.health.consulErr = nil
	l.freeze.doc, l.leaderID = st.Freeze, st.LeaderID
	l.takeDrainLocked(st)
	l.placeStepsLocked(now)
	shift := l.remote.shiftOf(st.SlotMap, st.SlotMapIndex, now)
	base := l.owedBaseLocked(st, now)
	evs := l.takeVotesLocked(st.Votes, now)
	l.mu.Unlock()
	l.logEvents(evs)
	l.publishVote(ctx, now)
	l.mu.Lock()
	if !leading {
		cur := l.followLocked(st.SlotMap, shift, now)
		l.mu.Unlock()
		l.writeRouterConfig(cur)
		l.publish(cur)
		return Result{Outcome: OutcomeFollower}, nil
	}
	d, ok := l.decideLocked(st, shift, base, now)
	late := l.tr.drain() // transitions the pass itself decided (an observer fault's end)
	l.mu.Unlock()
	l.logEvents(late)
	if !ok {
		return Result{Outcome: OutcomeWaiting}, nil
	}
	l.deleteGoneVotes(ctx, st.GoneVotes)
	return l.act(ctx, st, lease, d, now)
}

// followLocked adopts the stored map m (keeping the known one when nothing
// is stored), whose instants shift places on this clock, and returns the
// map now current. l.mu must be held.
func (l *Loop) followLocked(m *cachenodes.SlotMap, shift time.Duration, now time.Time) *cachenodes.SlotMap {
	if m != nil {
		l.noteMovesLocked(l.current, m, now)
		l.current, l.currentShift = m, shift
		l.remote.placeWarmings(m, shift) // placed when first seen, should this process lead
	}
	l.tr.ensure(l.current, now)
	l.tr.prune(l.current, now)
	l.autoFreezeLocked(l.current) // shown in the status; the leader acts on it
	l.health.lastPass, l.health.passErr = now, nil
	return l.current
}

// decision is what the leader's pass decided, for act to carry out.
type decision struct {
	prev      *cachenodes.SlotMap
	in        slotplan.Input
	plan      slotplan.Plan
	returning []cachenodes.Node
	// owed are the flushes the pool owes, with those decided in this
	// pass; flush are the slot holders among them flushed in this pass.
	owed  []OwedFlush
	flush []cachenodes.Node
}

// decideLocked decides the leader's pass from st, whose slot map's
// instants shift places on this clock and whose owed flushes are base; ok
// is false while there is nothing to decide from (no map known, no answer
// of discovery yet). l.mu must be held.
func (l *Loop) decideLocked(st Snapshot, shift time.Duration, base []OwedFlush, now time.Time) (d decision, ok bool) {
	prev := st.SlotMap
	if prev == nil || (l.current != nil && l.current.Generation() > prev.Generation()) {
		// The store lost its keys (a restarted dev agent) or holds an older
		// map: put back the map this process knows rather than start anew.
		prev, shift = l.current, l.currentShift
	}
	if prev == nil && !l.tr.haveAnswer {
		return decision{}, false
	}
	l.tr.ensure(prev, now)
	tripped := l.autoFreezeLocked(prev)
	owed := l.decideFlushesLocked(prev, base, now)
	nodes := l.tr.views(now)
	if !l.opts.Reverted.Reverted(revert.WarmFromOwing) {
		for i := range nodes {
			nodes[i].OwesFlush = owedIndex(owed, nodes[i].ID) >= 0
		}
	}
	in := slotplan.Input{
		Pool:           l.opts.Pool,
		NumSlots:       l.opts.NumSlots,
		Prev:           prev,
		PrevShift:      shift,
		WarmEnds:       l.remote.placeWarmings(prev, shift),
		Nodes:          nodes,
		Frozen:         st.Freeze != nil || tripped,
		OperatorFrozen: st.Freeze != nil,
		Budget:         l.adoptedBudgetLocked(st, shift, now),
		Ceiling:        l.opts.MaxReplacementsPerMinute,
		Drained:        l.drainedLocked(),
		Steps:          l.dueStepsLocked(prev, now),
		WarmFor:        l.opts.WarmFor,
		Now:            now,
	}
	if l.replace.req != nil {
		in.Replace = l.replace.req.id
	}
	plan := slotplan.Decide(in)
	l.health.blocked = plan.Blocked
	if l.replace.req != nil && plan.Refused != "" {
		l.replace.out.refused = plan.Refused
	}
	var returning []cachenodes.Node
	if !in.Frozen && l.tr.cfg.LegacyFlush {
		// The old path (revert.FollowerFlush): the nodes this process
		// marked itself from its own probe timing.
		returning = l.returningLocked(prev)
	}
	// A freeze, an operator's or the automatic one, holds back the owed
	// flushes too (invariant 7): they stay flush_pending until it lifts.
	flush := l.owedToFlushLocked(prev, owed, in.Frozen)
	return decision{prev: prev, in: in, plan: plan, returning: returning, owed: owed, flush: flush}, true
}

// act carries out d: it flushes the slot holders that owe a flush and the
// spares to place, builds the next map and writes it, with the flushes
// the pool owes after the pass, when either differs from st's.
func (l *Loop) act(ctx context.Context, st Snapshot, lease leader.Lease, d decision, now time.Time) (Result, error) {
	if len(d.returning) > 0 || len(d.flush) > 0 || (len(d.plan.Placements) > 0 && !d.plan.FirstFill) {
		// A flush is a leader's action: only right after the lock itself
		// said this process still holds it (a leader cut off from Consul
		// may have been replaced meanwhile).
		confirmed, err := l.lead.Confirm(ctx)
		if err != nil {
			l.unmarkFlushing(d.returning)
			l.unmarkFlushing(d.flush)
			if errors.Is(err, leader.ErrNotLeader) {
				l.opts.Logger.Warn("this process lost the leader lock; stepping down, nothing flushed")
				return Result{Outcome: OutcomeFollower}, nil
			}
			err = fmt.Errorf("confirming the leader lock before a flush: %w", err)
			l.setPassError(err, true)
			return Result{Outcome: OutcomeError}, err
		}
		lease = confirmed
	}
	l.flushReturning(ctx, d.returning)
	flushed := l.flushOwed(ctx, d.flush)
	done := l.place(ctx, d.plan)
	next, err := slotplan.Build(d.in, d.plan, done, now)
	if err != nil {
		l.setPassError(err, false)
		return Result{Outcome: OutcomeError}, err
	}
	replaced := carriedOutReplacements(d.plan, done)
	forgotten := l.opts.Reverted.Reverted(revert.ForgottenFlush)
	var w PoolWrite
	l.mu.Lock()
	drain := l.nextDrainLocked(next, d.plan.Steps, done, now)
	owed := l.settleOwedLocked(d.owed, flushed, next)
	l.noteBlockedStepsLocked(d.in.Steps, d.plan.Steps, now)
	if st.SlotMap == nil || !next.Equal(st.SlotMap) {
		w.SlotMap, w.Replacements = next, l.ceiling.Recent(now, len(replaced))
	}
	l.mu.Unlock()
	if !forgotten && (!sameFlushes(owed, st.Flushes) || slices.Contains(st.Corrupt, kvlayout.Flushes)) {
		w.Flushes = flushesDoc(owed)
	}
	if _, keepsDrains := asDrainStore(l.store); keepsDrains {
		w.Drain = drain
	}
	if w.SlotMap != nil || w.Flushes != nil || w.Drain != nil {
		ok, err := l.store.WritePool(ctx, st, lease, w)
		if err != nil {
			var noAnswer *url.Error
			if w.Flushes != nil && errors.As(err, &noAnswer) {
				// No answer came (the HTTP call itself failed): the write
				// may have been carried out with its answer lost. The
				// flushes decided stay shown (flush_pending) until a read
				// of the store says otherwise. (Consul's refusal is an
				// answer: it wrote nothing.)
				l.mu.Lock()
				l.owed.known = owed
				l.mu.Unlock()
			}
			l.setPassError(err, true)
			return Result{Outcome: OutcomeError}, err
		}
		if !ok {
			if w.SlotMap != nil || w.Flushes != nil {
				l.confirmLeadership(ctx)
			}
			l.setPassError(errConflict, false)
			return Result{Outcome: OutcomeConflict}, errConflict
		}
	}
	if w.SlotMap != nil {
		l.logChange(d.prev, next, d.plan, done)
		l.emitChange(ctx, &d.in, d.plan, done)
	}
	l.mu.Lock()
	if next == d.prev {
		l.currentShift = d.in.PrevShift
	} else {
		l.currentShift = 0 // built on this clock
	}
	if w.SlotMap != nil {
		l.remote.wroteMap(next)
	}
	l.noteMovesLocked(d.prev, next, now)
	l.current = next
	l.owed.known = owed
	switch {
	case forgotten:
		l.owed.mem = owed
	case w.Flushes != nil:
		l.owed.good = owed
	}
	var over []string // zones whose return ended with this write
	kept := map[string][]int{}
	if w.Drain != nil {
		if l.drains.doc != nil {
			for zone, e := range l.drains.doc.Zones {
				if w.Drain.Zones[zone] == nil {
					over = append(over, zone)
					kept[zone] = movedSlots(e.MovedSlots, nil, next, zone)
				}
			}
		}
		for zone, e := range w.Drain.Zones {
			if e.LastStepAt != nil && e.LastStepAt.Equal(now) {
				l.remote.steppedAt(zone, now)
			}
		}
		l.drains.doc = w.Drain
	}
	for range replaced {
		l.ceiling.Record(now)
	}
	l.tr.prune(next, now)
	l.health.lastPass, l.health.passErr = now, nil
	drained := l.drainedLocked()
	left := -1 // the ready spares after the pass, counted when it placed
	if len(done) > 0 {
		left = l.readySparesLocked(now)
	}
	tookLast := tookLastSpare(done, drained, left)
	l.noteReplaceLocked(d.plan, done, left, tookLast)
	l.mu.Unlock()
	if tookLast && w.SlotMap != nil {
		l.emitLastSpare(ctx, done, drained)
	}
	slices.Sort(over)
	for _, zone := range over {
		l.opts.Logger.Info("zone drain over: it holds its baseline again", "zone", zone)
		reason := fmt.Sprintf("zone %s holds its baseline again: its drain is over", zone)
		if k := kept[zone]; len(k) > 0 {
			reason += fmt.Sprintf("; %d of the slots its drain moved (%s) stay where they are, and as many came from the zones holding the most", len(k), slotList(k))
		} else {
			reason += "; every slot its drain moved came back"
		}
		l.emitIn(ctx, eventlog.Event{Kind: KindDrainOver, Reason: reason})
	}
	for _, ev := range replaced {
		l.opts.Metrics.Replacement(ev.Reason)
	}
	for _, p := range done {
		if !p.From.IsZero() {
			l.opts.Metrics.SlotMove(moveKind(p.Warm && l.opts.WarmFor > 0))
		}
	}
	l.writeRouterConfig(next)
	l.publish(next)
	return Result{Outcome: OutcomeOK}, nil
}

// confirmLeadership asks the leader lock, after a failed check-and-set,
// whether this process still leads; Leadership steps down when it does not.
func (l *Loop) confirmLeadership(ctx context.Context) {
	if _, err := l.lead.Confirm(ctx); errors.Is(err, leader.ErrNotLeader) {
		l.opts.Logger.Warn("this process lost the leader lock; stepping down")
	}
}

// adoptedBudgetLocked returns how many slot holders may be replaced now,
// counting the replacements the previous leader stored with the map (by
// its clock; shift places them on this one) as well as this process's
// own: the ceiling holds across a takeover, two replacements at one
// instant counting twice. With revert.CeilingAfterTakeover such twins
// count once, as they once did. l.mu must be held.
func (l *Loop) adoptedBudgetLocked(st Snapshot, shift time.Duration, now time.Time) int {
	times := shifted(st.Replacements, shift)
	if l.opts.Reverted.Reverted(revert.CeilingAfterTakeover) {
		times = slices.CompactFunc(slices.SortedFunc(slices.Values(times), func(a, b time.Time) int { return a.Compare(b) }),
			func(a, b time.Time) bool { return a.Equal(b) })
	}
	l.ceiling.Adopt(times)
	return l.ceiling.Remaining(now)
}
