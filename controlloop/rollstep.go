package controlloop

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/slotplan"
)

// apply records what the plan did of the step s (out: the roll's move
// outcome, nil when none was due; done: the placements carried out) and
// returns the roll document to store at now, nil when it does not change,
// with the events to tell once it is written: the node a move went to,
// blocked when no spare could take the slot, and no entry once a stopped
// or done one has been kept mcribapi.RollKeptFor.
func (r *rollState) apply(s rollStep, out *slotplan.StepOutcome, done []slotplan.Placement, now time.Time) (*mcribapi.RollDoc, []mcribapi.Event) {
	c := s.entry
	if c == nil || r.corrupt {
		return nil, nil
	}
	events := s.events
	for _, p := range done {
		if p.Reason != mcribapi.EvictionRoll {
			continue
		}
		for i := range c.Nodes {
			if n := &c.Nodes[i]; n.NodeID == p.From.ID && n.State == mcribapi.RollMoving {
				slot := p.Slot
				n.Slot, n.To = &slot, p.Node.ID
			}
		}
	}
	if out != nil && out.Blocked != "" && c.State == mcribapi.RollRolling {
		c.State, c.Blocked = mcribapi.RollBlocked, out.Blocked
	}
	if c.State == mcribapi.RollBlocked && (r.entry == nil || r.entry.Blocked != c.Blocked) {
		events = append(events, mcribapi.Event{Kind: mcribapi.EventRollBlocked, Reason: "the roll is blocked: " + c.Blocked})
	}
	if (c.State == mcribapi.RollDone || c.State == mcribapi.RollStopped) && c.EndedAt != nil && !s.changed &&
		!now.Before(c.EndedAt.Add(mcribapi.RollKeptFor)) {
		return &mcribapi.RollDoc{}, events
	}
	if !s.changed && sameRollEntry(c, r.entry) {
		return nil, events
	}
	return &mcribapi.RollDoc{Roll: c}, events
}

// wrote makes doc, written by the leader's pass, the roll known.
func (r *rollState) wrote(doc *mcribapi.RollDoc) {
	if doc != nil {
		r.entry = doc.Roll
	}
}

// answer returns the roll document as answered now: the entry known, its
// blocked saying so while the stored document is corrupt.
func (r *rollState) answer() mcribapi.RollDoc {
	c := r.entry.Clone()
	if c != nil && r.corrupt && c.State.Runs() {
		c.Blocked = "the roll document in Consul KV is corrupt: the roll makes no progress until it is fixed"
	}
	return mcribapi.RollDoc{Roll: c}
}

// rollStateOf returns node id's state in e while e runs ("" otherwise).
func rollStateOf(e *mcribapi.RollEntry, id string) mcribapi.RollNodeState {
	if e == nil || !e.State.Runs() {
		return ""
	}
	for _, n := range e.Nodes {
		if n.NodeID == id {
			return n.State
		}
	}
	return ""
}

// sameRollEntry reports whether a and b are the same entry.
func sameRollEntry(a, b *mcribapi.RollEntry) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// startRoll checks the operator's start req against the pool (the
// conflict, answered 409: conflict returns it) and returns the entry it
// makes at now and the event that tells it; known lists the nodes the
// loop knows, with whether each holds a slot.
func startRoll(req *rollRequest, known map[string]rollFacts, holds func(string) bool, conflict func(holders bool) error, now time.Time) (*mcribapi.RollEntry, mcribapi.Event, error) {
	q := req.roll
	var ids []string
	switch {
	case len(q.Nodes) > 0:
		for _, id := range q.Nodes {
			if _, ok := known[id]; !ok && !holds(id) {
				return nil, mcribapi.Event{}, fmt.Errorf("%w: no node %q is known", mcribapi.ErrUnknownNode, id)
			}
		}
		ids = q.Nodes
	default:
		for id, f := range known {
			if !q.HasZone || f.node.AZ == q.Zone {
				ids = append(ids, id)
			}
		}
		if len(ids) == 0 && q.HasZone {
			return nil, mcribapi.Event{}, fmt.Errorf("%w: no node is known in zone %q", mcribapi.ErrUnknownZone, q.Zone)
		}
		if len(ids) == 0 {
			return nil, mcribapi.Event{}, fmt.Errorf("%w: the pool knows no node to roll", mcribapi.ErrRefused)
		}
		ids = slotplan.RollOrder(ids, holds)
	}
	holders := false
	for _, id := range ids {
		holders = holders || holds(id)
	}
	if err := conflict(holders); err != nil {
		return nil, mcribapi.Event{}, err
	}
	t := now.UTC()
	e := &mcribapi.RollEntry{Reason: q.Reason, By: req.by, At: t, RestartTimeout: q.TimeoutText(), State: mcribapi.RollRolling}
	for _, id := range ids {
		f := known[id]
		e.Nodes = append(e.Nodes, mcribapi.RollNode{NodeID: id, Addr: f.node.Addr, AZ: f.node.AZ, State: mcribapi.RollWaiting})
	}
	return e, mcribapi.Event{Kind: mcribapi.EventRollStarted, Who: req.by,
		Reason: fmt.Sprintf("an operator rolls %s (%s), one at a time, each holder's slot moving warm to a spare first, a restart awaited up to %s each: %s",
			q.What(), countOf(len(ids), "node"), e.RestartTimeout, q.Reason)}, nil
}

// stopRoll stops the running entry e at now (mcribapi.ErrNoRoll when
// none runs) and returns the stopped entry and its event.
func stopRoll(e *mcribapi.RollEntry, by string, now time.Time) (*mcribapi.RollEntry, mcribapi.Event, error) {
	if e == nil || !e.State.Runs() {
		return nil, mcribapi.Event{}, fmt.Errorf("%w: no roll runs", mcribapi.ErrNoRoll)
	}
	c := e.Clone()
	t := now.UTC()
	c.State, c.Blocked, c.EndedAt = mcribapi.RollStopped, "", &t
	left := len(c.Nodes) - c.Count(mcribapi.RollRestarted) - c.Count(mcribapi.RollSkipped)
	return c, mcribapi.Event{Kind: mcribapi.EventRollStopped, Who: by,
		Reason: fmt.Sprintf("an operator stops the roll: %s restarted, %s not, staying where they are", countOf(c.Count(mcribapi.RollRestarted), "node"), countOf(left, "node"))}, nil
}
