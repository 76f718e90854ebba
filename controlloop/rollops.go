package controlloop

import (
	"context"
	"errors"
	"fmt"

	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/kvlayout"
	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/slotplan"
)

// The loop's hooks for the roll (roll.go): the step of a leader's pass,
// and the operator's calls, each carried out in a pass of its own.

// rollDecideLocked carries out the operator's request of the pass, if
// any, and takes the roll's step at now over prev (the map the pass
// decides from; tripped: the automatic freeze holds). l.mu must be held.
func (l *Loop) rollDecideLocked(st Snapshot, prev *cachenodes.SlotMap, tripped bool, now time.Time) rollStep {
	facts := l.rollFactsLocked()
	e, changed := l.rolls.entry, false
	var told []mcribapi.Event
	if req := l.rolls.req; req != nil && !l.rolls.out.done {
		var ev mcribapi.Event
		var err error
		switch {
		case l.rolls.corrupt:
			err = fmt.Errorf("%w: the roll document in Consul KV does not parse (%s); fix it or delete it (consul kv delete %s)",
				mcribapi.ErrRefused, l.rolls.err, kvlayout.For(l.opts.KVPrefix, l.opts.Pool).Roll())
		case req.stop:
			e, ev, err = stopRoll(e, req.by, now)
		default:
			holds := func(id string) bool { return prev != nil && prev.SlotOf(id) >= 0 }
			e, ev, err = startRoll(req, facts, holds, func(holders bool) error { return l.rollConflictLocked(st, tripped, holders, now) }, now)
		}
		if err != nil {
			l.rolls.out.refused = err
			e = l.rolls.entry
		} else {
			changed, told = true, []mcribapi.Event{ev}
		}
	}
	w := rollWorld{m: prev, nodes: facts, pause: l.rollPauseLocked(st, tripped)}
	s := l.rolls.due(e, changed, w, now)
	s.events = append(told, s.events...)
	return s
}

// rollFactsLocked returns what the loop knows of each node for the roll.
// l.mu must be held.
func (l *Loop) rollFactsLocked() map[string]rollFacts {
	out := make(map[string]rollFacts, len(l.tr.nodes))
	for id, s := range l.tr.nodes {
		f := rollFacts{node: s.node, present: s.listed && s.present}
		if s.haveStats {
			f.pid, f.started, f.readAt = int(s.stats.PID), s.statsAt.Add(-s.stats.Uptime), s.statsAt
		}
		out[id] = f
	}
	return out
}

// rollPauseLocked says what pauses a roll now ("": nothing): any freeze,
// a fault of discovery, a drained zone. l.mu must be held.
func (l *Loop) rollPauseLocked(st Snapshot, tripped bool) string {
	switch {
	case st.Freeze != nil:
		return "an operator freeze pauses it (mcrib unfreeze lifts it)"
	case l.tr.fault != "":
		return "Consul's last answer is taken as a fault of discovery: the roll waits until it answers in full"
	case tripped:
		return "an automatic freeze pauses it: " + l.freeze.auto
	case len(l.drains.drained()) > 0:
		return fmt.Sprintf("%s drained: the roll waits until it is undrained (mcrib undrain)", zoneList(l.drains.doc.Zones))
	}
	return ""
}

// rollConflictLocked returns the 409 of a start: a freeze, a drained
// zone, a resize that splits, another roll, or (holders: a listed node
// holds a slot) no ready spare. l.mu must be held.
func (l *Loop) rollConflictLocked(st Snapshot, tripped, holders bool, now time.Time) error {
	var why string
	switch {
	case st.Freeze != nil:
		why = "membership is frozen by an operator (mcrib unfreeze lifts it)"
	case tripped || l.tr.fault != "":
		why = "membership is frozen automatically (see auto_freeze_reason in the status)"
	case st.Drain != nil && len(st.Drain.Zones) > 0:
		why = fmt.Sprintf("%s drained (mcrib undrain gives it back first)", zoneList(st.Drain.Zones))
	case l.resizes.entry != nil && (l.resizes.entry.State == mcribapi.ResizeSplitting || l.resizes.entry.State == mcribapi.ResizePaused):
		why = fmt.Sprintf("the resize from %d to %d slots is splitting (mcrib resize stop stops it)", l.resizes.entry.From, l.resizes.entry.To)
	case l.rolls.runs():
		why = fmt.Sprintf("another roll runs (%s, started by %s at %s; mcrib roll stop stops it)", l.rolls.entry.State, l.rolls.entry.By, l.rolls.entry.At.Format(time.RFC3339))
	case holders && l.readySparesLocked(now) == 0:
		why = "a node it restarts holds a slot and the pool has no ready spare to move it to (" + slotplan.SpareHelp(false) + ")"
	default:
		return nil
	}
	return fmt.Errorf("%w: cannot start a roll now: %s", mcribapi.ErrRefused, why)
}

// RollDoc returns the roll document as this process knows it (GET
// /v1/roll); {"roll": null} when there is none.
func (l *Loop) RollDoc() mcribapi.RollDoc {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rolls.answer()
}

// StartRoll starts a roll (PUT /v1/roll); by names who asked. Only the
// leader carries it out, in a pass of its own: a follower gets
// mcribapi.ErrNotLeader. mcribapi.ErrUnknownNode or ErrUnknownZone for a
// node or zone the loop does not know; mcribapi.ErrRefused while a
// freeze holds, a zone is drained, a resize splits, another roll runs, or
// a listed node holds a slot and the pool has no ready spare.
func (l *Loop) StartRoll(ctx context.Context, req mcribapi.Roll, by string) (mcribapi.RollDoc, error) {
	return l.rollOp(ctx, &rollRequest{roll: req, by: by})
}

// StopRoll stops the roll (DELETE /v1/roll): the nodes not yet released
// stay where they are. mcribapi.ErrNoRoll when none runs.
func (l *Loop) StopRoll(ctx context.Context, by string) (mcribapi.RollDoc, error) {
	return l.rollOp(ctx, &rollRequest{stop: true, by: by})
}

// rollOp carries out req in a pass of its own and answers the roll
// document after it.
func (l *Loop) rollOp(ctx context.Context, req *rollRequest) (mcribapi.RollDoc, error) {
	if _, leading := l.lead.Lease(); !leading {
		return mcribapi.RollDoc{}, mcribapi.ErrNotLeader
	}
	if !keepsRoll(l.store) {
		return mcribapi.RollDoc{}, errors.New("controlloop: this store keeps no roll document")
	}
	l.passMu.Lock()
	defer l.passMu.Unlock()
	l.mu.Lock()
	l.rolls.req, l.rolls.out = req, rollOutcome{}
	l.mu.Unlock()
	res, err := l.reconcile(ctx)
	l.mu.Lock()
	out := l.rolls.out
	l.rolls.req, l.rolls.out = nil, rollOutcome{}
	l.mu.Unlock()
	switch {
	case out.refused != nil:
		return mcribapi.RollDoc{}, out.refused
	case out.done:
		l.Kick()
		return l.RollDoc(), nil
	case res.Outcome == mcribapi.OutcomeFollower:
		return mcribapi.RollDoc{}, mcribapi.ErrNotLeader
	case res.Outcome == mcribapi.OutcomeWaiting:
		return mcribapi.RollDoc{}, fmt.Errorf("%w: the pool has no slot map yet", mcribapi.ErrRefused)
	case err != nil:
		return mcribapi.RollDoc{}, fmt.Errorf("the roll was not written: %w", err)
	}
	return mcribapi.RollDoc{}, errors.New("the roll was not written; try again")
}
