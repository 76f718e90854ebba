package controlloop

import (
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
// whichever is later. The split steps are resizestep.go's, the operator's
// side resizeops.go's.

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

// resizeState is the resize as this process knows it. Its zero value
// knows none; it is not safe for concurrent use (the Loop's mutex guards
// it).
type resizeState struct {
	// probe is the probe interval: a split step that moved nothing waits
	// that long before it is tried again.
	probe time.Duration
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

// begin makes req the operator's request the next pass carries out.
func (rs *resizeState) begin(req *resizeRequest) { rs.req, rs.out = req, resizeOutcome{} }

// end returns what the pass did of the request, and forgets it.
func (rs *resizeState) end() resizeOutcome {
	out := rs.out
	rs.req, rs.out = nil, resizeOutcome{}
	return out
}

// written records that the pass's write carried out the request, unless
// it was refused.
func (rs *resizeState) written() {
	if rs.req != nil && rs.out.refused == nil {
		rs.out.done = true
	}
}

// take adopts the resize document of st; a corrupt one keeps the last
// entry that parsed and stops the splits.
func (rs *resizeState) take(st Snapshot) {
	rs.corrupt = slices.Contains(st.Corrupt, kvlayout.Resize)
	if rs.corrupt {
		rs.err = "it is not a resize document"
		if st.ResizeErr != nil {
			rs.err = st.ResizeErr.Error()
		}
		return
	}
	rs.entry, rs.err = nil, ""
	if st.Resize != nil {
		rs.entry = st.Resize.Resize
	}
}

// placeStep places the entry's last step on this clock (remote) at its
// first read (remoteclock.go), so that a follower that takes over keeps
// the stored pace from when it first saw it.
func (rs *resizeState) placeStep(remote *remoteClock, now time.Time) {
	if e := rs.entry; e != nil {
		remote.placeResizeStep(e.LastStepAt, now)
	}
}

// decide carries out the operator's request of the pass, if any, against
// prev (the map the pass decides from; conflict says why a start, fresh,
// or a resume is refused now, and key is the resize document's, for a
// corrupt one), and returns the map to decide from (prev doubled by a
// start), the split step size due at now (0: none; none while drained,
// remote placing the last step) and the decision.
func (rs *resizeState) decide(prev *cachenodes.SlotMap, conflict func(fresh bool) error, key string, drained bool, remote *remoteClock, now time.Time) (*cachenodes.SlotMap, int, resizeDecision) {
	d := resizeDecision{entry: rs.entry}
	if req := rs.req; req != nil && !rs.out.done {
		e, ev, err := rs.apply(prev, req, conflict, key, now)
		if err != nil {
			rs.out.refused = err
		} else {
			d.entry, d.changed, d.events = e, true, []mcribapi.Event{ev}
			if !req.stop && e.To != prev.NumSlots() {
				doubled, err := prev.Double(now)
				if err != nil {
					rs.out.refused = fmt.Errorf("%w: %v", mcribapi.ErrRefused, err)
					return prev, 0, resizeDecision{entry: rs.entry}
				}
				prev, d.doubled = doubled, true
			}
		}
	}
	if d.doubled || rs.corrupt {
		return prev, 0, d // the first split comes a step interval later
	}
	return prev, rs.splitDue(d.entry, prev, drained, remote, now), d
}

// resizeConflictLocked returns the 409 of a start (fresh) or a resume:
// an operator freeze, a drained zone, a roll that runs, the twins of
// another resize, or no ready spare. l.mu must be held.
func (l *Loop) resizeConflictLocked(st Snapshot, prev *cachenodes.SlotMap, now time.Time, fresh bool) error {
	var why string
	switch {
	case st.Freeze != nil:
		why = "membership is frozen by an operator (mcrib unfreeze lifts it)"
	case st.Drain != nil && len(st.Drain.Zones) > 0:
		why = fmt.Sprintf("%s drained (mcrib undrain gives it back first)", zoneList(st.Drain.Zones))
	case l.rolls.runs():
		why = fmt.Sprintf("a roll runs (%s; mcrib roll stop stops it, or let it finish first)", l.rolls.entry.State)
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
