package slotplan

import (
	"slices"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
)

// Warm moves (section 7). A planned move off a holder that answers and owes
// no flush, with Input.WarmFor above 0, is warm: the old holder stays the
// slot's warm source until Now + WarmFor, and the map carries the warming
// so that clients read through it. A warming ends when its until passes or
// its warm source stops answering; until then no planned move takes its
// slot (a drain or return step, a replace or a maintenance waits for it)
// and its warm source is no spare.

// WarmEnd returns when slot i's warming in Prev ends on the clock of Now:
// WarmEnds[i], or its until + PrevShift.
func (in *Input) WarmEnd(i int) time.Time {
	if i < len(in.WarmEnds) && !in.WarmEnds[i].IsZero() {
		return in.WarmEnds[i]
	}
	if ws := in.Prev.Warming(i); ws != nil {
		return ws.Until.Add(in.PrevShift)
	}
	return time.Time{}
}

// warmState is what Decide found of the previous map's warmings.
type warmState struct {
	ended   []int           // slots whose warming ends now
	sources map[string]bool // every warm source of the previous map
	keep    map[int]bool    // slots that keep warming
	// lending marks each slot s whose holder keeps warming the node its
	// twin was split to: slot s does not move until that warming ends.
	lending map[int]bool
}

// endWarmings finds the warmings of in.Prev that end at in.Now: until has
// passed, or the warm source does not answer (by the pool's verdict) or is
// no longer known.
func endWarmings(in Input) warmState {
	var w warmState
	if in.Prev == nil || !in.Prev.AnyWarming() {
		return w
	}
	w.sources, w.keep = map[string]bool{}, map[int]bool{}
	bySource := map[string]int{}
	until := map[int]*cachenodes.Warming{}
	for i := range in.Prev.NumSlots() {
		if in.Prev.IsTwin(i) {
			continue // it carries slot s's warming, which decides
		}
		if ws := in.Prev.Warming(i); ws != nil {
			w.sources[ws.NodeID] = true
			bySource[ws.NodeID] = i
			until[i] = ws
		}
	}
	answers := map[int]bool{}
	for _, v := range in.Nodes {
		if i, ok := bySource[v.ID]; ok {
			answers[i] = v.Reachable
		}
	}
	for i := range in.Prev.NumSlots() {
		ws := until[i]
		if ws == nil {
			continue
		}
		if answers[i] && in.Now.Before(in.WarmEnd(i)) {
			w.keep[i] = true
			if s := i - in.Prev.ResizedFrom(); s >= 0 && in.Prev.ResizedFrom() > 0 && in.Prev.SlotOf(ws.NodeID) == s {
				if w.lending == nil {
					w.lending = map[int]bool{}
				}
				w.lending[s] = true
			}
			continue
		}
		w.ended = append(w.ended, i)
	}
	return w
}

// nextWarming returns the warmings of the next map (nil when no slot
// warms) and their warm sources: the previous map's, less those that end
// now and those of slots whose node changes, plus the warm moves carried
// out (warmed); each twin left carries slot s's.
func nextWarming(in Input, plan Plan, changed map[int]cachenodes.Node, warmed map[int]*cachenodes.Warming, twins []int) ([]*cachenodes.Warming, map[string]bool) {
	if warmed == nil && (in.Prev == nil || !in.Prev.AnyWarming()) {
		return nil, nil
	}
	out := make([]*cachenodes.Warming, in.NumSlots)
	sources := make(map[string]bool)
	any := false
	if in.Prev != nil && in.Prev.AnyWarming() {
		for i := 0; i < in.NumSlots && i < in.Prev.NumSlots(); i++ {
			w := in.Prev.Warming(i)
			if w == nil || in.Prev.IsTwin(i) || slices.Contains(plan.EndWarming, i) {
				continue
			}
			if _, ch := changed[i]; ch {
				continue
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
