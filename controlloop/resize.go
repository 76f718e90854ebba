package controlloop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/kvlayout"
	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/slotplan"
)

// Resizes (docs/api.md, "Growing the pool"). The resize document lives in
// KV and is written by the leader only, in the same check-and-set
// transaction as the slot map (PoolWrite.Resize). An operator's start,
// resume or stop is carried out by the leader in a pass of its own, as a
// replace is: the pass checks it against what it read, and a start makes
// the first write there and then (the slot map doubled, every slot s + N
// a twin of slot s, with the entry and its last_step_at). Each later pass
// takes the split step when it is due: one step interval after the last
// (placed on this clock at its first read, remoteclock.go, so a new
// leader keeps the stored pace), and a probe interval after a step that
// moved nothing. A drain pauses the splits, an operator freeze too
// (slotplan holds the step back); a done entry is removed one step
// interval after the last split or when the last split's warming ends,
// whichever is later.

// ResizeStore is a Store that also keeps the resize document, written
// with PoolWrite.Resize; *ConsulStore implements it. With a Store that
// does not, a resize is refused.
type ResizeStore interface {
	Store
	// KeepsResize reports that the store reads and writes the resize
	// document.
	KeepsResize() bool
}

// keepsResize reports whether s (or the store it traces) keeps the resize
// document.
func keepsResize(s Store) bool {
	if t, ok := s.(tracedStore); ok {
		s = t.Store
	}
	rs, ok := s.(ResizeStore)
	return ok && rs.KeepsResize()
}

// resizeState is the resize as this process knows it.
type resizeState struct {
	// entry is the stored entry (nil: none); corrupt is set while the
	// stored document does not parse (no split is made), err says why.
	entry   *mcribapi.ResizeEntry
	corrupt bool
	err     string
	// blockedAt is when a due split step last moved nothing: it is not
	// tried again for a probe interval.
	blockedAt time.Time
	// req is the operator's request the pass under way carries out (nil:
	// none), out what the pass did of it.
	req *resizeRequest
	out resizeOutcome
}

// resizeRequest is an operator's start, resume or stop.
type resizeRequest struct {
	stop   bool
	resize mcribapi.Resize
	by     string
}

// resizeOutcome is what a pass did of a resizeRequest: refused says why
// it was refused; done is set once it was written.
type resizeOutcome struct {
	refused error
	done    bool
}

// resizeDecision is what the leader's pass decided of the resize.
type resizeDecision struct {
	// entry is the entry the pass starts from (the request applied), nil
	// when there is none; changed is set when the request changed it.
	entry   *mcribapi.ResizeEntry
	changed bool
	// doubled is set when the pass makes the first write of a resize.
	doubled bool
	// events are the operator's start or stop, told once written.
	events []mcribapi.Event
}

// takeResizeLocked adopts the resize document of st; a corrupt one keeps
// the last entry that parsed and stops the splits. l.mu must be held.
func (l *Loop) takeResizeLocked(st Snapshot) {
	l.resizes.corrupt = slices.Contains(st.Corrupt, kvlayout.Resize)
	if l.resizes.corrupt {
		l.resizes.err = "it is not a resize document"
		if st.ResizeErr != nil {
			l.resizes.err = st.ResizeErr.Error()
		}
		return
	}
	l.resizes.entry, l.resizes.err = nil, ""
	if st.Resize != nil {
		l.resizes.entry = st.Resize.Resize
	}
}

// placeResizeStepLocked places the entry's last step on this clock at its
// first read (remoteclock.go), so that a follower that takes over keeps the
// stored pace from when it first saw it. l.mu must be held.
func (l *Loop) placeResizeStepLocked(now time.Time) {
	if e := l.resizes.entry; e != nil {
		l.remote.placeResizeStep(e.LastStepAt, now)
	}
}

// resizeDecideLocked carries out the operator's request of the pass, if
// any, against st and prev (the map the pass decides from), and returns
// the map to decide from (prev doubled by a start), the split step size
// due at now (0: none) and the decision. l.mu must be held.
func (l *Loop) resizeDecideLocked(st Snapshot, prev *cachenodes.SlotMap, now time.Time) (*cachenodes.SlotMap, int, resizeDecision) {
	d := resizeDecision{entry: l.resizes.entry}
	if req := l.resizes.req; req != nil && !l.resizes.out.done {
		e, ev, err := l.applyResizeLocked(st, prev, req, now)
		if err != nil {
			l.resizes.out.refused = err
		} else {
			d.entry, d.changed, d.events = e, true, []mcribapi.Event{ev}
			if !req.stop && e.To != prev.NumSlots() {
				doubled, err := prev.Double(now)
				if err != nil {
					l.resizes.out.refused = fmt.Errorf("%w: %v", mcribapi.ErrRefused, err)
					return prev, 0, resizeDecision{entry: l.resizes.entry}
				}
				prev, d.doubled = doubled, true
			}
		}
	}
	if d.doubled || l.resizes.corrupt {
		return prev, 0, d // the first split comes a step interval later
	}
	return prev, l.splitDueLocked(d.entry, prev, now), d
}

// applyResizeLocked checks the operator's request req against st and prev
// and returns the entry it makes and the event that tells it.
func (l *Loop) applyResizeLocked(st Snapshot, prev *cachenodes.SlotMap, req *resizeRequest, now time.Time) (*mcribapi.ResizeEntry, mcribapi.Event, error) {
	e := l.resizes.entry
	if l.resizes.corrupt {
		return nil, mcribapi.Event{}, fmt.Errorf("%w: the resize document in Consul KV does not parse (%s); fix it or delete it (consul kv delete %s)",
			mcribapi.ErrRefused, l.resizes.err, kvlayout.For(l.opts.KVPrefix, l.opts.Pool).Resize())
	}
	if req.stop {
		switch {
		case e == nil || e.State == mcribapi.ResizeDone:
			return nil, mcribapi.Event{}, fmt.Errorf("%w: no resize runs", mcribapi.ErrNoResize)
		case e.State == mcribapi.ResizeStopped:
			return nil, mcribapi.Event{}, fmt.Errorf("%w: no resize runs: the resize from %d to %d slots is stopped with %s left (PUT /v1/resize with num_slots %d resumes it)",
				mcribapi.ErrNoResize, e.From, e.To, countOf(prev.NumTwins(), "twin"), e.To)
		}
		c := *e
		c.State, c.Blocked = mcribapi.ResizeStopped, ""
		return &c, mcribapi.Event{Kind: mcribapi.EventResizeStopped, Who: req.by,
			Reason: fmt.Sprintf("an operator stops the resize from %d to %d slots: %d twins stay twins, %d stay split, and the pool keeps its %d slots", c.From, c.To, prev.NumTwins(), c.From-prev.NumTwins(), c.To)}, nil
	}
	r, n := req.resize, prev.NumSlots()
	if r.NumSlots == n {
		if (e == nil || e.To != n || e.State == mcribapi.ResizeDone) && prev.NumTwins() > 0 {
			// Twins without an entry (the resize document was deleted):
			// resuming takes them up again.
			t := now.UTC()
			e = &mcribapi.ResizeEntry{From: prev.ResizedFrom(), To: n, LastStepAt: &t, State: mcribapi.ResizeStopped}
		}
		if e == nil || e.To != n || e.State == mcribapi.ResizeDone {
			return nil, mcribapi.Event{}, fmt.Errorf("%w: \"num_slots\" must be exactly twice the pool's %d slots (%d) to start a resize; %d resumes a stopped resize only, and none is stopped",
				mcribapi.ErrBadRequest, n, 2*n, n)
		}
		if err := l.resizeConflictLocked(st, prev, now, false); err != nil {
			return nil, mcribapi.Event{}, err
		}
		c := *e
		c.Reason, c.By, c.At = r.Reason, req.by, now.UTC()
		c.StepPercent, c.StepInterval = r.StepPercent, r.IntervalText()
		c.State, c.Blocked = mcribapi.ResizeSplitting, ""
		return &c, mcribapi.Event{Kind: mcribapi.EventResizeStarted, Who: req.by,
			Reason: fmt.Sprintf("an operator resumes the resize from %d to %d slots, %d twins left, %s a step every %s: %s", c.From, c.To, prev.NumTwins(), countOf(c.StepSize(), "twin"), c.StepInterval, r.Reason)}, nil
	}
	if r.NumSlots != 2*n {
		return nil, mcribapi.Event{}, fmt.Errorf("%w: \"num_slots\" must be exactly twice the pool's %d slots (%d), not %d", mcribapi.ErrBadRequest, n, 2*n, r.NumSlots)
	}
	if 2*n > cachenodes.MaxSlots {
		return nil, mcribapi.Event{}, fmt.Errorf("%w: \"num_slots\" must be at most %d, not %d", mcribapi.ErrBadRequest, cachenodes.MaxSlots, r.NumSlots)
	}
	if err := l.resizeConflictLocked(st, prev, now, true); err != nil {
		return nil, mcribapi.Event{}, err
	}
	t := now.UTC()
	c := &mcribapi.ResizeEntry{From: n, To: 2 * n, Reason: r.Reason, By: req.by, At: t, StepPercent: r.StepPercent, StepInterval: r.IntervalText(),
		LastStepAt: &t, Twins: n, State: mcribapi.ResizeSplitting}
	return c, mcribapi.Event{Kind: mcribapi.EventResizeStarted, Who: req.by,
		Reason: fmt.Sprintf("an operator doubles the pool's slots from %d to %d: each slot s + %d is a twin of slot s on the same node, and from %s on %s split off to spares every %s: %s",
			n, 2*n, n, c.StepInterval, countOf(c.StepSize(), "twin"), c.StepInterval, r.Reason)}, nil
}

// resizeConflictLocked returns the 409 of a start (fresh) or a resume:
// an operator freeze, a drained zone, the twins of another resize, or no
// ready spare. l.mu must be held.
func (l *Loop) resizeConflictLocked(st Snapshot, prev *cachenodes.SlotMap, now time.Time, fresh bool) error {
	var why string
	switch {
	case st.Freeze != nil:
		why = "membership is frozen by an operator (mcrib unfreeze lifts it)"
	case st.Drain != nil && len(st.Drain.Zones) > 0:
		why = fmt.Sprintf("%s drained (mcrib undrain gives it back first)", zoneList(st.Drain.Zones))
	case fresh && prev.NumTwins() > 0:
		why = fmt.Sprintf("the resize from %d slots still has %d twins; resume it (mcrib resize --slots %d --reason …) and let it finish first",
			prev.ResizedFrom(), prev.NumTwins(), prev.NumSlots())
	case fresh && l.splitWarmingLocked(prev) != "":
		why = l.splitWarmingLocked(prev)
	case l.readySparesLocked(now) == 0:
		why = "the pool has no ready spare to split twins to (" + slotplan.SpareHelp(false) + ")"
	default:
		return nil
	}
	return fmt.Errorf("%w: cannot resize the pool now: %s", mcribapi.ErrRefused, why)
}

// splitWarmingLocked says why prev cannot be doubled while a split of
// the last resize still has its warming object (its warm source holds
// slot s, which a doubling would make a twin's too: docs/api.md, "Growing
// the pool"), and when it can; "" when none has. l.mu must be held.
func (l *Loop) splitWarmingLocked(prev *cachenodes.SlotMap) string {
	if !prev.AnyWarming() {
		return ""
	}
	for t := range prev.NumSlots() {
		w := prev.Warming(t)
		if w == nil {
			continue
		}
		if s := prev.SlotOf(w.NodeID); s >= 0 {
			gone := w.WritesUntil()
			if p, ok := l.remote.warms[t]; ok && p.node == w.NodeID {
				gone = p.local.Add(cachenodes.WarmWriteGrace)
			}
			return fmt.Sprintf("slot %d, split from slot %d by the last resize, still has its warming from node %s (until its warming object is removed at %s); resize again once it is",
				t, s, w.NodeID, gone.UTC().Format(time.RFC3339))
		}
	}
	return ""
}

// twinsLeft counts the twins of m not split yet, for a resize whose step
// interval is every: a twin announced to split counts as split when the
// interval is under AnnounceLead (docs/api.md, "Announce, then serve").
func twinsLeft(m *cachenodes.SlotMap, every time.Duration) int {
	n := m.NumTwins()
	if every >= cachenodes.AnnounceLead || !m.AnyIncoming() {
		return n
	}
	rf := m.ResizedFrom()
	for t := rf; rf > 0 && t < m.NumSlots(); t++ {
		if m.IsTwin(t) && m.Incoming(t) != nil && !m.Incoming(t).Equal(m.Incoming(t-rf)) {
			n--
		}
	}
	return n
}

// zoneList names the drained zones: "zone b is" or "zones a and b are".
func zoneList(zones map[string]*mcribapi.DrainEntry) string {
	names := make([]string, 0, len(zones))
	for z := range zones {
		names = append(names, fmt.Sprintf("%q", z))
	}
	slices.Sort(names)
	if len(names) == 1 {
		return "zone " + names[0] + " is"
	}
	return "zones " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1] + " are"
}

// splitDueLocked returns the size of the split step due at now over prev
// for entry e (0: none): twins remain, the entry splits (not stopped), no
// zone is drained, its step interval has passed since its last step, and
// a probe interval since a due step that moved nothing. l.mu must be held.
func (l *Loop) splitDueLocked(e *mcribapi.ResizeEntry, prev *cachenodes.SlotMap, now time.Time) int {
	if l.untilSplitLocked(e, prev, now) != 0 {
		return 0
	}
	return e.StepSize()
}

// untilSplitLocked returns how long until the next split step is due (0:
// now), or a negative duration when none is pending. l.mu must be held.
func (l *Loop) untilSplitLocked(e *mcribapi.ResizeEntry, prev *cachenodes.SlotMap, now time.Time) time.Duration {
	if e == nil || l.resizes.corrupt || prev == nil || prev.NumSlots() != e.To || prev.NumTwins() == 0 ||
		e.State == mcribapi.ResizeStopped || e.State == mcribapi.ResizeDone || len(l.drains.drained()) > 0 {
		return -1
	}
	d := time.Duration(0)
	if last := l.remote.placeResizeStep(e.LastStepAt, now); last != nil {
		d = max(d, last.Add(e.Interval()).Sub(now))
	}
	if !l.resizes.blockedAt.IsZero() {
		d = max(d, l.resizes.blockedAt.Add(l.opts.ProbeInterval).Sub(now))
	}
	return d
}

// nextResizeLocked returns the resize document to store with next, built
// from d with the placements done, or nil when it does not change: the
// first write's or a split's time as last_step_at, the twins left and
// split, what stopped the step in this pass as blocked, done when no twin
// is left, and no entry once a done one has waited a step interval and
// its last split's warming ended. It adds the events of the written
// entry to events. l.mu must be held.
func (l *Loop) nextResizeLocked(d resizeDecision, plan slotplan.Plan, next *cachenodes.SlotMap, done []slotplan.Placement, now time.Time) (*mcribapi.ResizeDoc, []mcribapi.Event) {
	e := d.entry
	if e == nil || l.resizes.corrupt {
		return nil, nil
	}
	c := *e
	events := slices.Clone(d.events)
	if slices.ContainsFunc(done, func(p slotplan.Placement) bool { return p.Reason == mcribapi.EvictionSplit }) {
		t := now.UTC()
		c.LastStepAt = &t
	}
	c.Twins = c.From
	if next.NumSlots() == c.To {
		c.Twins = twinsLeft(next, c.Interval())
	}
	c.Split = c.From - c.Twins
	// Done once no twin is left in the map: a twin announced to split may
	// still be dropped (and split again later).
	if next.NumSlots() == c.To && next.NumTwins() == 0 && c.State != mcribapi.ResizeDone {
		c.State = mcribapi.ResizeDone
		events = append(events, mcribapi.Event{Kind: mcribapi.EventResizeOver,
			Reason: fmt.Sprintf("every twin of the resize from %d to %d slots is split: the pool has %d slots on their own nodes", c.From, c.To, c.To)})
	}
	switch {
	case c.State == mcribapi.ResizeDone || c.State == mcribapi.ResizeStopped:
		c.Blocked = ""
	case l.drains.doc != nil && len(l.drains.doc.Zones) > 0:
		c.Blocked = fmt.Sprintf("%s drained: the splits wait until it is undrained", zoneList(l.drains.doc.Zones))
	case l.tr.fault != "":
		c.Blocked = discoveryFaultSplits
	case plan.Split != nil:
		c.Blocked = plan.Split.Blocked
	}
	if c.State == mcribapi.ResizeDone && !d.changed && c.LastStepAt != nil {
		last := l.remote.placeResizeStep(c.LastStepAt, now)
		if !now.Before(last.Add(c.Interval())) && !splitWarming(next, c.From) {
			return &mcribapi.ResizeDoc{}, events
		}
	}
	if !d.changed && sameResizeEntry(&c, e) {
		return nil, events
	}
	return &mcribapi.ResizeDoc{Resize: &c}, events
}

// splitWarming reports whether a split slot of m still has its warming
// object from the holder of the slot it was a twin of, or a twin is still
// announced to split (from: the slot count before).
func splitWarming(m *cachenodes.SlotMap, from int) bool {
	if (!m.AnyWarming() && !m.AnyIncoming()) || m.ResizedFrom() != from {
		return false
	}
	for t := from; t < m.NumSlots(); t++ {
		if w := m.Warming(t); w != nil && m.SlotOf(w.NodeID) == t-from {
			return true
		}
		if ni := m.Incoming(t); ni != nil && m.IsTwin(t) && !ni.Equal(m.Incoming(t-from)) {
			return true
		}
	}
	return false
}

// sameResizeEntry reports whether a and b are the same entry.
func sameResizeEntry(a, b *mcribapi.ResizeEntry) bool {
	x, y := *a, *b
	sameStep := (x.LastStepAt == nil) == (y.LastStepAt == nil) && (x.LastStepAt == nil || x.LastStepAt.Equal(*y.LastStepAt))
	if !sameStep || !x.At.Equal(y.At) {
		return false
	}
	x.LastStepAt, y.LastStepAt, x.At, y.At = nil, nil, time.Time{}, time.Time{}
	return x == y
}

// wroteResizeLocked makes doc, written by the leader's pass at now, the
// resize known, and notes whether the split step due (tried: the plan's
// outcome, nil when none was due) moved nothing. l.mu must be held.
func (l *Loop) wroteResizeLocked(doc *mcribapi.ResizeDoc, tried *slotplan.StepOutcome, now time.Time) {
	if doc != nil {
		old := l.resizes.entry
		l.resizes.entry = doc.Resize
		if e := doc.Resize; e != nil && e.LastStepAt != nil && e.LastStepAt.Equal(now.UTC()) && (old == nil || old.LastStepAt == nil || !old.LastStepAt.Equal(*e.LastStepAt)) {
			l.remote.resizeSteppedAt(now)
		}
	}
	switch {
	case tried == nil:
	case tried.Moved > 0:
		l.resizes.blockedAt = time.Time{}
	default:
		l.resizes.blockedAt = now
	}
}

// resizeAnswerLocked returns the resize document as answered: the entry
// with its twins and split counted on the map known, its state (paused
// under an operator freeze) and its blocked. l.mu must be held.
func (l *Loop) resizeAnswerLocked(now time.Time) mcribapi.ResizeDoc {
	e := l.resizes.entry
	if e == nil {
		return mcribapi.ResizeDoc{}
	}
	c := *e
	if m := l.current; m != nil && m.NumSlots() == c.To {
		c.Twins = twinsLeft(m, c.Interval())
		c.Split = c.From - c.Twins
	}
	switch {
	case c.State == mcribapi.ResizeDone || c.State == mcribapi.ResizeStopped:
	case l.freeze.doc != nil:
		c.State, c.Blocked = mcribapi.ResizePaused, "an operator freeze pauses it (mcrib unfreeze lifts it)"
	case l.resizes.corrupt:
		c.Blocked = "the resize document in Consul KV is corrupt: no split is made until it is fixed"
	case l.tr.fault != "" && c.Twins > 0:
		c.Blocked = discoveryFaultSplits
	}
	if c.State == mcribapi.ResizeSplitting && c.Twins > 0 {
		if spares := l.readySparesLocked(now); spares <= c.Twins && spares > 0 {
			c.Warning = fmt.Sprintf("the splits take the pool's last ready spare: %s left and only %s; afterwards a node that fails leaves its slot vacant (%s)",
				countOf(c.Twins, "twin"), countOf(spares, "ready spare"), slotplan.SpareHelp(false))
		}
	}
	return mcribapi.ResizeDoc{Resize: &c}
}

// ResizeDoc returns the resize document as this process knows it
// (GET /v1/resize); {"resize": null} when there is no entry.
func (l *Loop) ResizeDoc() mcribapi.ResizeDoc {
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.resizeAnswerLocked(now)
}

// StartResize starts doubling the pool's slots (PUT /v1/resize), or with
// req.NumSlots equal to the stored count resumes a stopped resize; by
// names who asked. Only the leader carries it out, in a pass of its own
// that makes the first write: a follower gets mcribapi.ErrNotLeader.
// mcribapi.ErrBadRequest when num_slots is not twice the stored count
// (nor the stored count of a stopped resize); mcribapi.ErrRefused while an
// operator freeze holds, a zone is drained, another resize has twins
// left, or the pool has no ready spare.
func (l *Loop) StartResize(ctx context.Context, req mcribapi.Resize, by string) (mcribapi.ResizeDoc, error) {
	return l.resizeOp(ctx, &resizeRequest{resize: req, by: by})
}

// StopResize stops further splits (DELETE /v1/resize): twins already split
// stay split, the others stay twins, and the pool keeps its slots.
// mcribapi.ErrNoResize when no resize runs.
func (l *Loop) StopResize(ctx context.Context, by string) (mcribapi.ResizeDoc, error) {
	return l.resizeOp(ctx, &resizeRequest{stop: true, by: by})
}

// resizeOp carries out req in a pass of its own and answers the resize
// document after it.
func (l *Loop) resizeOp(ctx context.Context, req *resizeRequest) (mcribapi.ResizeDoc, error) {
	if _, leading := l.lead.Lease(); !leading {
		return mcribapi.ResizeDoc{}, mcribapi.ErrNotLeader
	}
	if !keepsResize(l.store) {
		return mcribapi.ResizeDoc{}, errors.New("controlloop: this store keeps no resize document")
	}
	var out resizeOutcome
	res, err := l.operatorPass(ctx, func() error {
		l.resizes.req, l.resizes.out = req, resizeOutcome{}
		return nil
	}, func() {
		out = l.resizes.out
		l.resizes.req, l.resizes.out = nil, resizeOutcome{}
	})
	switch {
	case out.refused != nil:
		return mcribapi.ResizeDoc{}, out.refused
	case out.done:
		l.Kick()
		return l.ResizeDoc(), nil
	case res.Outcome == mcribapi.OutcomeFollower:
		return mcribapi.ResizeDoc{}, mcribapi.ErrNotLeader
	case res.Outcome == mcribapi.OutcomeWaiting:
		return mcribapi.ResizeDoc{}, fmt.Errorf("%w: the pool has no slot map yet", mcribapi.ErrRefused)
	case err != nil:
		return mcribapi.ResizeDoc{}, fmt.Errorf("the resize was not written: %w", err)
	}
	return mcribapi.ResizeDoc{}, errors.New("the resize was not written; try again")
}

// discoveryFaultSplits is the resize's blocked during a fault of
// discovery (invariant 5: splits wait).
const discoveryFaultSplits = "Consul's last answer is taken as a fault of discovery (nothing is replaced): the splits wait until it answers in full"
