package controlloop

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/slotplan"
)

// The operator's side of the resize (resize.go): a start, resume or stop
// goes into a pass of its own (operatorPass), which checks it (apply);
// ResizeDoc answers the document.

// apply checks the operator's request req against prev (conflict says
// why a start, fresh, or a resume is refused now; key is the resize
// document's) and returns the entry it makes and the event that tells it.
func (rs *resizeState) apply(prev *cachenodes.SlotMap, req *resizeRequest, conflict func(fresh bool) error, key string, now time.Time) (*mcribapi.ResizeEntry, mcribapi.Event, error) {
	e := rs.entry
	if rs.corrupt {
		return nil, mcribapi.Event{}, fmt.Errorf("%w: the resize document in Consul KV does not parse (%s); fix it or delete it (consul kv delete %s)",
			mcribapi.ErrRefused, rs.err, key)
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
		if err := conflict(false); err != nil {
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
	if err := conflict(true); err != nil {
		return nil, mcribapi.Event{}, err
	}
	t := now.UTC()
	c := &mcribapi.ResizeEntry{From: n, To: 2 * n, Reason: r.Reason, By: req.by, At: t, StepPercent: r.StepPercent, StepInterval: r.IntervalText(),
		LastStepAt: &t, Twins: n, State: mcribapi.ResizeSplitting}
	return c, mcribapi.Event{Kind: mcribapi.EventResizeStarted, Who: req.by,
		Reason: fmt.Sprintf("an operator doubles the pool's slots from %d to %d: each slot s + %d is a twin of slot s on the same node, and from %s on %s split off to spares every %s: %s",
			n, 2*n, n, c.StepInterval, countOf(c.StepSize(), "twin"), c.StepInterval, r.Reason)}, nil
}

// answer returns the resize document as answered: the entry with its
// twins and split counted on m, the map known, its state (paused under an
// operator freeze: frozen) and its blocked (fault: the fault of
// discovery, "" when none), warning when spares, counting the ready
// spares, says the splits take the last of them.
func (rs *resizeState) answer(m *cachenodes.SlotMap, frozen bool, fault string, spares func() int) mcribapi.ResizeDoc {
	e := rs.entry
	if e == nil {
		return mcribapi.ResizeDoc{}
	}
	c := *e
	if m != nil && m.NumSlots() == c.To {
		c.Twins = twinsLeft(m, c.Interval())
		c.Split = c.From - c.Twins
	}
	switch {
	case c.State == mcribapi.ResizeDone || c.State == mcribapi.ResizeStopped:
	case frozen:
		c.State, c.Blocked = mcribapi.ResizePaused, "an operator freeze pauses it (mcrib unfreeze lifts it)"
	case rs.corrupt:
		c.Blocked = "the resize document in Consul KV is corrupt: no split is made until it is fixed"
	case fault != "" && c.Twins > 0:
		c.Blocked = discoveryFaultSplits
	}
	if c.State == mcribapi.ResizeSplitting && c.Twins > 0 {
		if spares := spares(); spares <= c.Twins && spares > 0 {
			c.Warning = fmt.Sprintf("the splits take the pool's last ready spare: %s left and only %s; afterwards a node that fails leaves its slot vacant (%s)",
				countOf(c.Twins, "twin"), countOf(spares, "ready spare"), slotplan.SpareHelp(false))
		}
	}
	return mcribapi.ResizeDoc{Resize: &c}
}

// resizeAnswerLocked returns the resize document as answered now. l.mu
// must be held.
func (l *Loop) resizeAnswerLocked(now time.Time) mcribapi.ResizeDoc {
	return l.resizes.answer(l.current, l.freeze.doc != nil, l.tr.fault, func() int { return l.readySparesLocked(now) })
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
		l.resizes.begin(req)
		return nil
	}, func() { out = l.resizes.end() })
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
