package controlloop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/kvlayout"
	"github.com/mcrib/mcrib/internal/revert"
	"github.com/mcrib/mcrib/leader"
	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/slotplan"
)

// write carries out what the pass p decided: it publishes this replica's
// vote when due; a follower's pass ends there, and so does a leader's with
// nothing to decide from. The leader then deletes the votes of replicas
// that are gone and carries out its decision (carryOut). What it does is
// told in r.
func (l *Loop) write(ctx context.Context, p pass, r *report) (Result, error) {
	l.publishVote(ctx, p.vote, p.now, r)
	switch {
	case !p.leading:
		return Result{Outcome: mcribapi.OutcomeFollower}, nil
	case p.d == nil:
		return Result{Outcome: mcribapi.OutcomeWaiting}, nil
	}
	l.deleteGoneVotes(ctx, p.st.GoneVotes, r)
	return l.carryOut(ctx, p.st, p.lease, *p.d, p.now, r)
}

// carryOut carries out the leader's decision d, taken from st at now:
// it flushes the slot holders that owe a flush and the spares to place
// (after confirming the leader lock), builds the next map and writes it,
// with the flushes the pool owes and the drain document, when any differs
// from st's; then it adopts what it wrote. r tells it all, and serves the
// map written.
func (l *Loop) carryOut(ctx context.Context, st Snapshot, lease leader.Lease, d decision, now time.Time, r *report) (Result, error) {
	if len(d.returning) > 0 || len(d.flush) > 0 || (len(d.plan.Placements) > 0 && !d.plan.FirstFill) {
		// A flush is a leader's action: only right after the lock itself
		// said this process still holds it (a leader cut off from Consul
		// may have been replaced meanwhile).
		confirmed, err := l.lead.Confirm(ctx)
		if err != nil {
			l.setFlushing(false, slices.Concat(d.returning, d.flush)...)
			if errors.Is(err, leader.ErrNotLeader) {
				r.log(slog.LevelWarn, "this process lost the leader lock; stepping down, nothing flushed")
				return Result{Outcome: mcribapi.OutcomeFollower}, nil
			}
			err = fmt.Errorf("confirming the leader lock before a flush: %w", err)
			l.setPassError(err, true)
			return Result{Outcome: mcribapi.OutcomeError}, err
		}
		lease = confirmed
	}
	l.flushReturning(ctx, d.returning, r)
	flushed := l.flushOwed(ctx, d.flush, r)
	done := l.place(ctx, d.plan, r)
	next, err := slotplan.Build(d.in, d.plan, done, now)
	if err == nil && d.resize.doubled && (next.Generation() != d.stored.Generation()+1 || next.Revision() != d.stored.Revision()+1) {
		// The first write of a resize is one write: the generation and
		// the revision rise by one.
		spec := next.Spec()
		spec.Generation, spec.Revision = d.stored.Generation()+1, d.stored.Revision()+1
		next, err = cachenodes.NewSlotMap(spec)
	}
	if err != nil {
		l.setPassError(err, false)
		return Result{Outcome: mcribapi.OutcomeError}, err
	}
	replaced := carriedOutReplacements(d.plan, done)
	l.mu.Lock()
	w, owed, resizeEvents := l.poolWriteLocked(st, d, next, done, flushed, len(replaced), now, r)
	l.mu.Unlock()
	if w.SlotMap != nil || w.Flushes != nil || w.Drain != nil || w.Resize != nil || w.Roll != nil {
		wroteAt := l.clock.Now()
		ok, err := l.store.WritePool(ctx, st, lease, w)
		if err == nil && ok {
			doneAt := l.clock.Now()
			l.mu.Lock()
			l.health.readMap(wroteAt)
			if w.SlotMap != nil {
				l.announces.wrote(d.plan, done, next, wroteAt, doneAt)
			}
			l.mu.Unlock()
		}
		if err != nil {
			var noAnswer *url.Error
			if w.Flushes != nil && errors.As(err, &noAnswer) && !l.reverted.Reverted(revert.LostWritePending) {
				// No answer came (the HTTP call itself failed): the write
				// may have been carried out with its answer lost. The
				// flushes decided stay shown (flush_pending) until a read
				// of the store says otherwise. (Consul's refusal is an
				// answer: it wrote nothing.)
				l.mu.Lock()
				l.owed.mayHaveWritten(owed)
				l.mu.Unlock()
			}
			l.setPassError(err, true)
			return Result{Outcome: mcribapi.OutcomeError}, err
		}
		if !ok {
			if w.SlotMap != nil || w.Flushes != nil {
				l.confirmLeadership(ctx, r)
			}
			l.setPassError(errConflict, false)
			return Result{Outcome: mcribapi.OutcomeConflict}, errConflict
		}
	}
	if w.SlotMap != nil {
		l.changeLog(r, d.prev, next, d.plan, done)
		l.changeEvents(r, &d.in, d.plan, done, next, d.replace)
	}
	for _, e := range resizeEvents {
		r.log(slog.LevelInfo, string(e.Kind), "reason", e.Reason)
		r.tracedEvent(e)
	}
	l.mu.Lock()
	a := l.adoptLocked(d, w, next, owed, done, len(replaced), l.announces.givenBack(d.plan), now)
	l.resizes.written()
	if l.rolls.req != nil && l.rolls.out.refused == nil {
		l.rolls.out.done = true
	}
	l.mu.Unlock()
	if a.tookLast && w.SlotMap != nil {
		lastSpareEvent(r, done, a.drained)
	}
	for _, zone := range a.over {
		r.log(slog.LevelInfo, "zone drain over: it holds its baseline again", "zone", zone)
		reason := fmt.Sprintf("zone %s holds its baseline again: its drain is over", zone)
		if k := a.kept[zone]; len(k) > 0 {
			reason += fmt.Sprintf("; %d of the slots its drain moved (%s) stay where they are, and as many came from the zones holding the most", len(k), slotList(k))
		} else {
			reason += "; every slot its drain moved came back"
		}
		r.tracedEvent(mcribapi.Event{Kind: mcribapi.EventDrainOver, Reason: reason})
	}
	if w.SlotMap != nil {
		for _, reason := range servedReplacements(d.plan) {
			r.count(func(m Metrics) { m.Replacement(reason) })
		}
		for _, p := range d.plan.Serves {
			if !p.From.IsZero() {
				kind := moveKind(p.Warm)
				r.count(func(m Metrics) { m.SlotMove(kind) })
			}
		}
	}
	r.serve(next)
	if d.flushNext && w.Flushes != nil {
		l.Kick() // the flush this pass stored, carried out by the next
	}
	return Result{Outcome: mcribapi.OutcomeOK}, nil
}

// poolWriteLocked returns what the leader's pass stores with next, the map
// built from d with the placements done (replaced of them counting against
// the ceiling), and the flushes the pool owes after it: the map and the
// replacement times when the map differs from st's, the flushes document
// when it differs, the drain and resize documents when they changed (for
// a store that keeps them), with the events of the resize entry written. It records the steps that moved nothing; r tells the owed
// flushes that end. l.mu must be held.
func (l *Loop) poolWriteLocked(st Snapshot, d decision, next *cachenodes.SlotMap, done []slotplan.Placement, flushed map[string]bool, replaced int, now time.Time, r *report) (PoolWrite, []OwedFlush, []mcribapi.Event) {
	var w PoolWrite
	drain := l.drains.next(l.tr, next, d.plan.Steps, done, d.plan.Serves, now)
	var events []mcribapi.Event
	if keepsResize(l.store) {
		w.Resize, events = l.resizes.next(d.resize, d.plan, next, done, l.drains.doc, l.tr.fault, &l.remote, now)
	}
	if keepsRoll(l.store) {
		var rollEvents []mcribapi.Event
		w.Roll, rollEvents = l.rolls.apply(d.roll, d.plan.Roll, done, now)
		events = append(events, rollEvents...)
	}
	owed := l.owed.settle(l.tr, d.owed, flushed, next, r)
	l.drains.noteBlocked(d.in.Steps, d.plan.Steps, now)
	if st.SlotMap == nil || !next.Equal(st.SlotMap) {
		w.SlotMap, w.Replacements = next, withoutTimes(l.ceiling.Recent(now, replaced), l.announces.givenBack(d.plan))
	}
	if !l.reverted.Reverted(revert.ForgottenFlush) && (!sameFlushes(owed, st.Flushes) || slices.Contains(st.Corrupt, kvlayout.Flushes)) {
		w.Flushes = flushesDoc(owed)
	}
	if _, keepsDrains := asDrainStore(l.store); keepsDrains {
		w.Drain = drain
	}
	return w, owed, events
}

// adopted is what adopting a written pass found that is still to tell.
type adopted struct {
	// over are the zones whose return ended with the write, by name, and
	// kept the slots each one's drain moved that stay where they are.
	over []string
	kept map[string][]int
	// drained are the drained zones after the write; tookLast is set when
	// its placements took the pool's last ready spare.
	drained  map[string]bool
	tookLast bool
}

// adoptLocked makes next, built from d and written with w (the placements
// done, replaced of them counting against the ceiling, givenBack the
// replacement times its dropped announces give back), the map this process
// serves, with the flushes owed after it, the drain document written, the
// replacements and the outcome of the operator's replace. l.mu must be
// held.
func (l *Loop) adoptLocked(d decision, w PoolWrite, next *cachenodes.SlotMap, owed []OwedFlush, done []slotplan.Placement, replaced int, givenBack []time.Time, now time.Time) adopted {
	if next == d.prev {
		l.currentShift = d.in.PrevShift
	} else {
		l.currentShift = 0 // built on this clock
	}
	if w.SlotMap != nil {
		l.remote.wroteMap(next)
	}
	l.moves.note(l.tr, d.prev, next, now)
	l.warmth.track(next, now)
	l.current = next
	l.owed.wrote(owed, l.reverted.Reverted(revert.ForgottenFlush), w.Flushes != nil)
	var a adopted
	if w.Drain != nil {
		a.over, a.kept = l.drains.wrote(w.Drain, next, &l.remote, now)
	}
	l.resizes.wrote(w.Resize, d.plan.Split, &l.remote, now)
	l.rolls.wrote(w.Roll)
	if w.SlotMap != nil {
		for _, t := range givenBack {
			l.ceiling.GiveBack(t)
		}
	}
	for range replaced {
		l.ceiling.Record(now)
	}
	l.tr.prune(next, now)
	l.health.passed(now)
	l.noteCapacityLocked(now)
	a.drained = l.drains.drained()
	left := -1 // the ready spares after the pass, counted when it placed
	if len(done) > 0 {
		left = l.readySparesLocked(now)
	}
	a.tookLast = tookLastSpare(done, a.drained, left)
	l.replace.wrote(done, next, l.opts.WarmFor > 0, left, a.tookLast, l.drains.doc != nil && len(l.drains.doc.Zones) > 0)
	return a
}

// confirmLeadership asks the leader lock, after a failed check-and-set,
// whether this process still leads; Leadership steps down when it does not.
func (l *Loop) confirmLeadership(ctx context.Context, r *report) {
	if _, err := l.lead.Confirm(ctx); errors.Is(err, leader.ErrNotLeader) {
		r.log(slog.LevelWarn, "this process lost the leader lock; stepping down")
	}
}
