package controlloop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/slotplan"
)

// An operator's replace (POST /v1/nodes/{id}/replace; docs/api.md, "Zones,
// drains and warm moves") is carried out by the leader only, in a pass of
// its own: Replace
// takes the pass lock, so it never races with Reconcile, and the pass
// decides, flushes and writes the move as any other.

// replaceState is the operator's replace the pass under way carries out
// (req nil: none), and what the pass did of it (out). Its zero value
// carries out none; it is not safe for concurrent use (the Loop's mutex
// guards it).
type replaceState struct {
	req *replaceRequest
	out replaceOutcome
}

// replaceRequest is the replace the pass under way carries out.
type replaceRequest struct {
	id, reason, by string
}

// replaceOutcome is what the pass did of a replaceRequest.
type replaceOutcome struct {
	done    bool
	result  mcribapi.ReplaceAnswer
	refused string
}

// Replace moves node id's slot to a spare now, warm when the node answers
// (POST /v1/nodes/{id}/replace). Only the leader carries it out: a follower
// gets mcribapi.ErrNotLeader. mcribapi.ErrUnknownNode for a node the loop does not know;
// mcribapi.ErrRefused (with the reason) when it holds no slot, no spare can take it,
// membership is frozen or the replacement ceiling is reached. It counts
// against --max-replacements-per-minute.
func (l *Loop) Replace(ctx context.Context, id, reason, by string) (mcribapi.ReplaceAnswer, error) {
	if _, leading := l.lead.Lease(); !leading {
		return mcribapi.ReplaceAnswer{}, mcribapi.ErrNotLeader
	}
	var out replaceOutcome
	res, err := l.operatorPass(ctx, func() error {
		_, known := l.tr.nodes[id]
		if !known && l.current != nil && l.current.SlotOf(id) >= 0 {
			known = true
		}
		if !known {
			return fmt.Errorf("%w: no node %q is known", mcribapi.ErrUnknownNode, id)
		}
		l.replace.begin(&replaceRequest{id: id, reason: reason, by: by})
		return nil
	}, func() { out = l.replace.end() })
	var refused *refusedRequest
	switch {
	case errors.As(err, &refused):
		return mcribapi.ReplaceAnswer{}, refused.err
	case out.done:
		return out.result, nil
	case out.refused != "":
		return mcribapi.ReplaceAnswer{}, fmt.Errorf("%w: cannot replace node %s: %s", mcribapi.ErrRefused, id, out.refused)
	case res.Outcome == mcribapi.OutcomeFollower:
		return mcribapi.ReplaceAnswer{}, mcribapi.ErrNotLeader
	case err != nil:
		return mcribapi.ReplaceAnswer{}, fmt.Errorf("replacing node %s: %w", id, err)
	}
	return mcribapi.ReplaceAnswer{}, fmt.Errorf("node %s was not replaced: flushing the spare chosen for its slot failed; try again", id)
}

// begin makes req the replace the next pass carries out.
func (s *replaceState) begin(req *replaceRequest) { s.req, s.out = req, replaceOutcome{} }

// end returns what the pass did of the replace, and forgets it.
func (s *replaceState) end() replaceOutcome {
	out := s.out
	s.req, s.out = nil, replaceOutcome{}
	return out
}

// node returns the node the pass is asked to replace ("": none).
func (s *replaceState) node() string {
	if s.req == nil {
		return ""
	}
	return s.req.id
}

// refused records why the pass's plan refused the replace (refused ""
// when it did not), when one is asked.
func (s *replaceState) refused(refused string) {
	if s.req != nil && refused != "" {
		s.out.refused = refused
	}
}

// wrote records the outcome of the replace the pass carried out, if any:
// its announce in next (it serves at serves_at), warm when it warms the
// spare (warm: --warm-for is set), left ready spares after it, tookLast
// set when it took the last of them (drained: while a zone is drained).
func (s *replaceState) wrote(done []slotplan.Placement, next *cachenodes.SlotMap, warm bool, left int, tookLast, drained bool) {
	if s.req == nil {
		return
	}
	for _, p := range done {
		if p.Reason == mcribapi.EvictionReplace {
			res := mcribapi.ReplaceAnswer{Slot: p.Slot, From: p.From.ID, To: p.Node.ID, Warm: p.Warm && warm, SparesLeft: left}
			if ni := next.Incoming(p.Slot); ni != nil {
				res.ServesAt = ni.ServesAt
			}
			if tookLast {
				res.Warning = "it took the pool's last ready spare: " + lastSpareSentence(drained)
			}
			s.out = replaceOutcome{done: true, result: res}
			return
		}
	}
}

// refusedRequest is the error of an operator's request that its concept
// refused before any pass (operatorPass).
type refusedRequest struct{ err error }

func (e *refusedRequest) Error() string { return e.err.Error() }

// operatorPass runs a pass of its own for an operator's request, the one
// path of every request into the pass: begin hands the request to its
// concept (an error refuses it: no pass runs, and operatorPass returns a
// *refusedRequest holding it) and end takes the outcome back, each with
// l.mu held; the pass lock keeps the request from racing with Reconcile.
func (l *Loop) operatorPass(ctx context.Context, begin func() error, end func()) (Result, error) {
	l.passMu.Lock()
	defer l.passMu.Unlock()
	l.mu.Lock()
	err := begin()
	l.mu.Unlock()
	if err != nil {
		return Result{}, &refusedRequest{err: err}
	}
	res, err := l.reconcile(ctx)
	l.mu.Lock()
	end()
	l.mu.Unlock()
	return res, err
}

// carriedOutReplacements returns the evictions of plan that count against
// the replacement ceiling and were carried out: every slot vacated, and
// the moves whose successor was placed.
func carriedOutReplacements(plan slotplan.Plan, done []slotplan.Placement) []slotplan.Eviction {
	var placed map[int]bool
	var out []slotplan.Eviction
	for _, ev := range plan.Evictions {
		if !ev.CountsAgainstCeiling() {
			continue
		}
		if ev.Move {
			if placed == nil {
				placed = make(map[int]bool, len(done))
				for _, p := range done {
					placed[p.Slot] = true
				}
			}
			if !placed[ev.Slot] {
				continue
			}
		}
		out = append(out, ev)
	}
	return out
}

// servedReplacements returns the reasons of the replacements plan makes:
// the slots it vacates and the replacements whose announce it serves
// (mcrib_slot_replacements_total).
func servedReplacements(plan slotplan.Plan) []mcribapi.EvictionReason {
	var out []mcribapi.EvictionReason
	for _, ev := range plan.Evictions {
		if !ev.Move && ev.CountsAgainstCeiling() {
			out = append(out, ev.Reason)
		}
	}
	for _, p := range plan.Serves {
		if p.Reason != "" && p.Reason.IsReplacement() {
			out = append(out, p.Reason)
		}
	}
	return out
}

// withoutTimes returns times less one of each of drop.
func withoutTimes(times, drop []time.Time) []time.Time {
	for _, d := range drop {
		if i := slices.IndexFunc(times, func(t time.Time) bool { return t.Equal(d) }); i >= 0 {
			times = slices.Delete(times, i, i+1)
		}
	}
	return times
}

// moveKind is the mcrib_slot_moves_total label of a move.
func moveKind(warm bool) mcribapi.MoveKind {
	if warm {
		return mcribapi.MoveWarm
	}
	return mcribapi.MoveCold
}
