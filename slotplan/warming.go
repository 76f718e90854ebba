package slotplan

import (
	"fmt"
	"slices"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/revert"
)

// Warm moves (section 7) and their end (docs/api.md, "An ended warming
// still protects lagging readers"). A served announce whose old holder
// answers and owes no flush, with Input.WarmFor above 0, is warm: the old
// holder stays the slot's warm source until the announce's until, and the
// map carries the warming so that clients read through it. Clients stop
// reading the warm source at until, or at once on seeing ended_at, and
// write it WarmWriteGrace (12 s) longer; the warming object stays in the
// map until then, whatever ended it, and is removed at its ReadsUntil +
// 12 s on the clock of Now, never sooner.
//
// A warming ends before its until, written as ended_at (same generation),
// when its new holder converged (converge.go: it no longer needs the warm
// source, judged from the loop's stats reads), when its warm source is in
// a drained zone and DrainedCap has passed, when its warm source stops
// answering or owes a flush (at once, in the pass that decides the
// flush), when its new holder stops answering or restarted, and when a
// replace or a maintenance move of the slot needs it out of the way. While the object is in the map no planned move
// takes the slot (nor, for a split, its slot s), no slot is announced
// there, and its warm source is no spare.

// WarmEnd returns when clients stop reading slot i's warm source in Prev,
// on the clock of Now: WarmEnds[i], or its ended_at (when earlier) or
// until, moved by PrevShift.
func (in *Input) WarmEnd(i int) time.Time {
	if i < len(in.WarmEnds) && !in.WarmEnds[i].IsZero() {
		return in.WarmEnds[i]
	}
	if ws := in.Prev.Warming(i); ws != nil {
		return ws.ReadsUntil().Add(in.PrevShift)
	}
	return time.Time{}
}

// WarmGone returns when slot i's warming object in Prev is removed, on the
// clock of Now: WarmWriteGrace after its reads end.
func (in *Input) WarmGone(i int) time.Time {
	if in.NoWriteGrace {
		return in.WarmEnd(i)
	}
	return in.WarmEnd(i).Add(cachenodes.WarmWriteGrace)
}

// WarmingEnd is a warming whose reads end in this pass, before its until:
// the next map writes its ended_at.
type WarmingEnd struct {
	Slot int
	// Node is the warm source; Why says, in a few words, what ended it.
	Node cachenodes.Node
	Why  string
}

// warmState is what Decide found of the previous map's warmings.
type warmState struct {
	// ended are the warmings that end now (ended_at written); removed the
	// slots whose warming object goes now.
	ended   []WarmingEnd
	removed []int
	// sources are every warm source of the previous map, by ID.
	sources map[string]bool
	// keep marks the slots that keep warming (their reads go on); busy
	// the slots whose warming object stays in the next map (warming, or
	// ended and kept for the writes).
	keep, busy map[int]bool
	// lending marks each slot s whose holder is the warm source of the
	// node its twin was split to while that object stays: slot s does not
	// move, and is not announced, until it is removed.
	lending map[int]bool
}

// end makes slot i's warming, which keeps warming until now, end in this
// pass (ended_at): what ends it is why.
func (w *warmState) end(in *Input, i int, why string) {
	if !w.keep[i] {
		return
	}
	delete(w.keep, i)
	ws := in.Prev.Warming(i)
	w.ended = append(w.ended, WarmingEnd{Slot: i, Node: ws.Node(), Why: why})
}

// endWarmings finds what becomes of each warming of in.Prev at in.Now:
// its object goes once WarmWriteGrace has passed since its reads ended
// (ended_at, or until); its reads end now (ended_at) when the warm
// source does not answer (by the pool's verdict), owes a flush or is no
// longer known, or the new holder does not answer or restarted, or it is
// over by what the loop read of it (warmOver: converged, or from a
// drained zone for long enough); otherwise it keeps warming.
func endWarmings(in Input) warmState {
	var w warmState
	if in.Prev == nil || !in.Prev.AnyWarming() {
		return w
	}
	w.sources, w.keep, w.busy = map[string]bool{}, map[int]bool{}, map[int]bool{}
	views := map[string]NodeView{}
	for _, v := range in.Nodes {
		views[v.ID] = v
	}
	for i := range in.Prev.NumSlots() {
		ws := in.Prev.Warming(i)
		if ws == nil || in.Prev.IsTwin(i) {
			continue // a twin carries slot s's warming, which decides
		}
		w.sources[ws.NodeID] = true
		if !in.Now.Before(in.WarmGone(i)) && !in.RewriteEnded[i] {
			w.removed = append(w.removed, i)
			continue
		}
		w.busy[i] = true
		if rf := in.Prev.ResizedFrom(); rf > 0 && i >= rf && in.Prev.SlotOf(ws.NodeID) == i-rf {
			if w.lending == nil {
				w.lending = map[int]bool{}
			}
			w.lending[i-rf] = true
		}
		if ws.Ended() || !in.Now.Before(in.WarmEnd(i)) {
			continue // its reads ended: the object stays for the writes
		}
		src, known := views[ws.NodeID]
		holder := views[in.Prev.Slot(i).ID]
		why := ""
		switch {
		case !known:
			why = fmt.Sprintf("its warm source %s is no longer known", ws.NodeID)
		case !src.Reachable:
			why = fmt.Sprintf("its warm source %s stopped answering", ws.NodeID)
		case src.OwesFlush:
			why = fmt.Sprintf("its warm source %s owes a flush", ws.NodeID)
		case !holder.Reachable:
			why = fmt.Sprintf("its new holder %s stopped answering", holder.ID)
		case holder.Restarted:
			why = fmt.Sprintf("its new holder %s restarted", holder.ID)
		default:
			why = warmOver(in, i, src)
		}
		if why != "" {
			w.ended = append(w.ended, WarmingEnd{Slot: i, Node: ws.Node(), Why: why})
			continue
		}
		w.keep[i] = true
	}
	return w
}

// warmOver returns why slot i's warming, whose warm source src answers,
// is over now by what the loop read of it (in.Warmth): its warm source's
// zone is drained and DrainedCap has passed since it began, or its new
// holder converged (WarmRule.Judge); "" when it goes on.
func warmOver(in Input, i int, src NodeView) string {
	h := in.Warmth[i]
	if h == nil {
		return ""
	}
	if in.Drained[src.AZ] && src.AZ != "" {
		limit := DrainedWarmFor
		if in.WarmFor > 0 {
			limit = DrainedCap(in.WarmFor)
		}
		if !in.Now.Before(h.Start.Add(limit)) {
			return fmt.Sprintf("its warm source's zone %s is drained, and a warming from a drained zone lasts at most %s", src.AZ, limit)
		}
	}
	if v := in.WarmRule.Judge(h); v.Converged {
		return v.Why(in.WarmRule, h.Split)
	}
	return ""
}

// nextWarming returns the warmings of the next map (nil when no slot
// warms) and their warm sources: the previous map's, less those removed
// now and those of slots whose node changes, with ended_at set on those
// that end now (and those to rewrite), plus the warm moves served
// (warmed); each twin left carries slot s's.
func nextWarming(in Input, plan Plan, changed map[int]cachenodes.Node, warmed map[int]*cachenodes.Warming, twins []int, now time.Time) ([]*cachenodes.Warming, map[string]bool) {
	if warmed == nil && (in.Prev == nil || !in.Prev.AnyWarming()) {
		return nil, nil
	}
	out := make([]*cachenodes.Warming, in.NumSlots)
	sources := make(map[string]bool)
	any := false
	if in.Prev != nil && in.Prev.AnyWarming() {
		for i := 0; i < in.NumSlots && i < in.Prev.NumSlots(); i++ {
			w := in.Prev.Warming(i)
			if w == nil || in.Prev.IsTwin(i) || slices.Contains(plan.RemovedWarming, i) {
				continue
			}
			if _, ch := changed[i]; ch {
				continue
			}
			if in.RewriteEnded[i] || slices.ContainsFunc(plan.EndWarming, func(e WarmingEnd) bool { return e.Slot == i }) {
				w.EndedAt = now
				if !w.Until.After(now) {
					w.EndedAt = time.Time{} // its until came first: nothing ends early
				}
			}
			if in.reverted.Reverted(revert.WarmingUntilKept) {
				w.Until = w.Until.Add(in.PrevShift) // the old way: onto this clock
			}
			out[i], sources[w.NodeID], any = w, true, true
		}
	}
	for i, w := range warmed {
		out[i], sources[w.NodeID], any = w, true, true
	}
	if any {
		rf := in.Prev.ResizedFrom()
		for _, t := range twins {
			out[t] = out[t-rf]
		}
	}
	if !any {
		return nil, sources
	}
	return out, sources
}
