package controlloop

import (
	"context"
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
// (req nil: none), and what the pass did of it (out).
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
	l.passMu.Lock()
	defer l.passMu.Unlock()
	l.mu.Lock()
	_, known := l.tr.nodes[id]
	if !known && l.current != nil && l.current.SlotOf(id) >= 0 {
		known = true
	}
	if !known {
		l.mu.Unlock()
		return mcribapi.ReplaceAnswer{}, fmt.Errorf("%w: no node %q is known", mcribapi.ErrUnknownNode, id)
	}
	l.replace.req, l.replace.out = &replaceRequest{id: id, reason: reason, by: by}, replaceOutcome{}
	l.mu.Unlock()
	res, err := l.reconcile(ctx)
	l.mu.Lock()
	out := l.replace.out
	l.replace.req, l.replace.out = nil, replaceOutcome{}
	l.mu.Unlock()
	switch {
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

// noteReplaceLocked records the outcome of the replace the pass carried
// out, if any: its announce in next (it serves at serves_at), left ready
// spares after it, tookLast set when it took the last of them. l.mu must
// be held.
func (l *Loop) noteReplaceLocked(plan slotplan.Plan, done []slotplan.Placement, next *cachenodes.SlotMap, left int, tookLast bool) {
	if l.replace.req == nil {
		return
	}
	for _, p := range done {
		if p.Reason == mcribapi.EvictionReplace {
			res := mcribapi.ReplaceAnswer{Slot: p.Slot, From: p.From.ID, To: p.Node.ID, Warm: p.Warm && l.opts.WarmFor > 0, SparesLeft: left}
			if ni := next.Incoming(p.Slot); ni != nil {
				res.ServesAt = ni.ServesAt
			}
			if tookLast {
				res.Warning = "it took the pool's last ready spare: " + lastSpareSentence(l.drains.doc != nil && len(l.drains.doc.Zones) > 0)
			}
			l.replace.out = replaceOutcome{done: true, result: res}
			return
		}
	}
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
