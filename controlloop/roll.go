package controlloop

import (
	"fmt"
	"slices"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/kvlayout"
	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/slotplan"
)

// Rolls (docs/api.md, "Rolling restarts"). A roll restarts a list of nodes
// one at a time without a cold key: a node that holds a slot first gives
// it, warm, to a ready spare (a planned move by the spread rule, announced,
// slotplan/roll.go), and waits until that warming ends and its warming
// object is removed; then it is released, and the roll waits until its
// memcached restarts (a new pid or a reset uptime, read by the probes).
// The roll document lives in KV and is written by the leader only, in the
// same check-and-set transaction as the slot map (PoolWrite.Roll), so a
// new leader carries it on from what was stored: no node moves twice.
//
// rollState owns the roll and its lifecycle; the loop calls it at fixed
// points of a pass: take (the stored document), due (what the roll asks of
// this pass, from the pass's world), apply (what the plan did of it, the
// entry to store), wrote (the entry written), and answer (the operator's
// view). Operator calls are carried out in a pass of their own
// (rollops.go).

// RollStore is a Store that also keeps the roll document, written with
// PoolWrite.Roll; *ConsulStore implements it. With a Store that does not,
// a roll is refused.
type RollStore interface {
	Store
	// KeepsRoll reports that the store reads and writes the roll document.
	KeepsRoll() bool
}

// keepsRoll reports whether s (or the store it traces) keeps the roll
// document.
func keepsRoll(s Store) bool {
	if t, ok := s.(tracedStore); ok {
		s = t.Store
	}
	rs, ok := s.(RollStore)
	return ok && rs.KeepsRoll()
}

// rollState is the roll as this process knows it. Its zero value knows no
// roll. It is guarded by the loop's mutex.
type rollState struct {
	// entry is the stored entry (nil: none); corrupt is set while the
	// stored document does not parse (the roll makes no progress), err
	// says why.
	entry   *mcribapi.RollEntry
	corrupt bool
	err     string
	// req is the operator's request the pass under way carries out (nil:
	// none), out what the pass did of it.
	req *rollRequest
	out rollOutcome
}

// rollRequest is an operator's start or stop.
type rollRequest struct {
	stop bool
	roll mcribapi.Roll
	by   string
}

// rollOutcome is what a pass did of a rollRequest: refused says why it
// was refused; done is set once it was written.
type rollOutcome struct {
	refused error
	done    bool
}

// rollFacts is what the loop knows of one node for the roll.
type rollFacts struct {
	node    cachenodes.Node
	present bool
	// pid and started are its memcached as the last reading showed it
	// (started: the reading's time less its uptime), read at readAt; pid
	// 0 when none was read.
	pid     int
	started time.Time
	readAt  time.Time
}

// rollWorld is what the roll's step of a pass sees: the map the pass
// decides from, the nodes by ID, and why the roll is paused ("": it is
// not: a freeze, a fault of discovery, a drain).
type rollWorld struct {
	m     *cachenodes.SlotMap
	nodes map[string]rollFacts
	pause string
}

// rollStep is what the roll asks of a pass and what it changed so far:
// entry is the entry after the step (nil: none), changed set when it
// differs from the stored one, in the input of the plan, and events what
// it tells once written.
type rollStep struct {
	entry   *mcribapi.RollEntry
	changed bool
	in      slotplan.RollInput
	events  []mcribapi.Event
}

// take adopts the roll document of st; a corrupt one keeps the last entry
// that parsed and holds the roll.
func (r *rollState) take(st Snapshot) {
	r.corrupt = slices.Contains(st.Corrupt, kvlayout.Roll)
	if r.corrupt {
		r.err = "it is not a roll document"
		if st.RollErr != nil {
			r.err = st.RollErr.Error()
		}
		return
	}
	r.entry, r.err = nil, ""
	if st.Roll != nil {
		r.entry = st.Roll.Roll
	}
}

// runs reports whether a roll runs (rolling, paused or blocked).
func (r *rollState) runs() bool { return r.entry != nil && r.entry.State.Runs() }

// released reports whether the roll has released node id and awaits its
// restart: it is no ready spare.
func (r *rollState) released(id string) bool { return releasedIn(r.entry, id) }

// releasedIn reports whether e runs and has released node id, awaiting
// its restart.
func releasedIn(e *mcribapi.RollEntry, id string) bool {
	if e == nil || !e.State.Runs() {
		return false
	}
	i := slices.IndexFunc(e.Nodes, func(n mcribapi.RollNode) bool { return n.NodeID == id })
	return i >= 0 && e.Nodes[i].State == mcribapi.RollReleased
}

// due takes the roll's step at now over w, starting from entry e (the
// stored one, or the operator's request applied): the restarts seen of
// the released nodes, the pause, the timeout of a released node, and
// the progress of the node whose turn it is (skipped when absent,
// moving when it holds a slot, released once free). It returns the step,
// whose in asks the plan for the move.
func (r *rollState) due(e *mcribapi.RollEntry, changed bool, w rollWorld, now time.Time) rollStep {
	s := rollStep{entry: e.Clone(), changed: changed}
	if e == nil || !e.State.Runs() || r.corrupt {
		return s
	}
	c := s.entry
	for i := range c.Nodes {
		n := &c.Nodes[i]
		f := w.nodes[n.NodeID]
		if n.State == mcribapi.RollReleased && n.ReleasedAt != nil && f.readAt.After(*n.ReleasedAt) && slotplan.RollRestarted(*n, f.pid, f.started) {
			n.State = mcribapi.RollRestarted
			s.tell(mcribapi.EventRollRestarted, n.NodeID, fmt.Sprintf("roll: %s restarted (its memcached runs as pid %d): it is a spare again", n.NodeID, f.pid))
		}
	}
	c.State, c.Blocked = mcribapi.RollRolling, ""
	if w.pause != "" {
		c.State, c.Blocked = mcribapi.RollPaused, w.pause
		if i := slotplan.RollTurn(c.Nodes); i >= 0 && c.Nodes[i].State == mcribapi.RollMoving {
			s.in = slotplan.RollInput{Node: c.Nodes[i].NodeID, Paused: true}
		}
		return s.settle(e)
	}
	for {
		i := slotplan.RollTurn(c.Nodes)
		if i < 0 {
			t := now.UTC()
			c.State, c.EndedAt = mcribapi.RollDone, &t
			s.tell(mcribapi.EventRollOver, "", fmt.Sprintf("every node of the roll is restarted or skipped (%d restarted, %d skipped): %s", c.Count(mcribapi.RollRestarted), c.Count(mcribapi.RollSkipped), c.Reason))
			return s.settle(e)
		}
		n := &c.Nodes[i]
		f, known := w.nodes[n.NodeID]
		place := slotplan.RollPlaceOf(w.m, n.NodeID)
		switch n.State {
		case mcribapi.RollWaiting:
			switch {
			case !known || !f.present:
				n.State = mcribapi.RollSkipped
				continue // the next node begins
			case place.Slot >= 0:
				n.State, n.Slot = mcribapi.RollMoving, &place.Slot
				s.in.Node = n.NodeID
			case place.Free():
				s.release(n, f, now)
			}
		case mcribapi.RollMoving:
			if place.Free() {
				s.release(n, f, now)
				break
			}
			s.in.Node = n.NodeID
		case mcribapi.RollReleased:
			if n.ReleasedAt != nil && !now.Before(n.ReleasedAt.Add(c.Timeout())) {
				c.State = mcribapi.RollBlocked
				c.Blocked = fmt.Sprintf("node %s did not restart within %s of its release at %s (its memcached still runs as pid %d, or does not answer); restart it, or stop the roll (mcrib roll stop)",
					n.NodeID, c.RestartTimeout, n.ReleasedAt.UTC().Format(time.RFC3339), f.pid)
			}
		}
		return s.settle(e)
	}
}

// released reports whether the step leaves node id released, awaiting
// its restart: no ready spare for the plan.
func (s rollStep) released(id string) bool { return releasedIn(s.entry, id) }

// release marks n released at now, with its memcached as f last showed
// it, and tells the operator to restart it.
func (s *rollStep) release(n *mcribapi.RollNode, f rollFacts, now time.Time) {
	t := now.UTC()
	n.State, n.ReleasedAt, n.PID, n.StartedAt = mcribapi.RollReleased, &t, f.pid, nil
	if f.pid != 0 {
		st := f.started.UTC()
		n.StartedAt = &st
	}
	reason := fmt.Sprintf("roll: restart %s now (%s): it holds no slot and warms none; the roll waits for its memcached to restart", n.NodeID, f.node.Addr)
	if n.Slot != nil {
		reason = fmt.Sprintf("roll: restart %s now (%s): its slot %d moved to %s and warmed; the roll waits for its memcached to restart", n.NodeID, f.node.Addr, *n.Slot, n.To)
	}
	s.tell(mcribapi.EventRollRelease, n.NodeID, reason)
}

// tell adds the event of kind about node to the step's events.
func (s *rollStep) tell(kind mcribapi.EventKind, node, reason string) {
	s.events = append(s.events, mcribapi.Event{Kind: kind, Node: node, Reason: reason})
}

// settle marks the step changed when its entry differs from was, and
// returns it.
func (s *rollStep) settle(was *mcribapi.RollEntry) rollStep {
	if !s.changed && !sameRollEntry(s.entry, was) {
		s.changed = true
	}
	return *s
}
