package controlloop

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/kvlayout"
	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/slotplan"
)

// Drains (docs/api.md, "Drain"). The drain document lives in KV; any
// replica changes it for an operator (Drain, Undrain), with check-and-set;
// the leader carries the steps out and records their pace (LastStepAt),
// what stops them (blocked) and the end of a return in the same write as
// the moves it made (its pass's WritePool, also when nothing moved), so a
// new leader keeps the pace and every replica answers the same blocked. A
// drain step moves the zone's highest-numbered slots; a return step takes
// the highest-numbered slot of the undrained zone holding the most. When
// the steps are due is schedule.go's.

// errNoDrainStore is the error of a drain asked of a loop whose store
// keeps no drain document.
var errNoDrainStore = errors.New("controlloop: this store keeps no drain document")

// drainAttempts bounds the check-and-set retries of Drain and Undrain.
const drainAttempts = 5

// drainState is the drains as this process knows them.
type drainState struct {
	// doc is the last drain document read that parsed, or the last this
	// process wrote (nil: none); corrupt is set while the stored one does
	// not parse (the steps then make no progress), err says why; good is
	// set once a read found a drain document that parsed (or none).
	doc     *mcribapi.DrainDoc
	corrupt bool
	good    bool
	err     string
	// blockedAt is when a due drain or return step of each zone last moved
	// nothing: it is not tried again for a probe interval (schedule.go).
	blockedAt map[string]time.Time
}

// takeDrainLocked adopts the drain document of st; a corrupt one keeps the
// last that parsed (its zones stay drained), records why it does not parse
// and stops the steps (and nothing else). l.mu must be held.
func (l *Loop) takeDrainLocked(st Snapshot) {
	l.drains.corrupt = slices.Contains(st.Corrupt, kvlayout.Drain)
	if !l.drains.corrupt {
		l.drains.doc, l.drains.good, l.drains.err = st.Drain, true, ""
		return
	}
	l.drains.err = "it is not a drain document"
	if st.DrainErr != nil {
		l.drains.err = st.DrainErr.Error()
	}
}

// wroteDrainLocked makes doc, the drain document the leader's pass wrote
// with next at now, the one known, and places on this clock the steps it
// records at now. It returns the zones whose return ended with the write,
// in name order, and for each the slots its drain moved that stay where
// they are in next. l.mu must be held.
func (l *Loop) wroteDrainLocked(doc *mcribapi.DrainDoc, next *cachenodes.SlotMap, now time.Time) (over []string, kept map[string][]int) {
	kept = map[string][]int{}
	if l.drains.doc != nil {
		for zone, e := range l.drains.doc.Zones {
			if doc.Zones[zone] == nil {
				over = append(over, zone)
				kept[zone] = movedSlots(e.MovedSlots, nil, next, zone)
			}
		}
	}
	for zone, e := range doc.Zones {
		if e.LastStepAt != nil && e.LastStepAt.Equal(now) {
			l.remote.steppedAt(zone, now)
		}
	}
	l.drains.doc = doc
	slices.Sort(over)
	return over, kept
}

// drainCorruptMessage says, in one sentence, that the stored drain
// document does not parse (why: reason) and how to fix it.
func (l *Loop) drainCorruptMessage(reason string) string {
	return fmt.Sprintf("the drain document in Consul KV does not parse: %s; fix it with mcrib drain/undrain or consul kv delete %s",
		reason, kvlayout.For(l.opts.KVPrefix, l.opts.Pool).Drain())
}

// drainedLocked returns the drained zones. l.mu must be held.
func (l *Loop) drainedLocked() map[string]bool {
	if l.drains.doc == nil || len(l.drains.doc.Zones) == 0 {
		return nil
	}
	out := make(map[string]bool, len(l.drains.doc.Zones))
	for zone := range l.drains.doc.Zones {
		out[zone] = true
	}
	return out
}

// nextDrainLocked returns the drain document to store with next, or nil
// when it does not change: the zones whose step announced a move (done)
// get LastStepAt now, each zone's moved_slots gains the slots its drain
// steps moved off it (served) and loses those it holds again, each zone's blocked is what
// stopped its step in this pass (steps; cleared when the step went through
// or the zone is at its target), so every replica answers it, and a
// returning zone that holds its baseline again loses its entry. l.mu must
// be held.
func (l *Loop) nextDrainLocked(next *cachenodes.SlotMap, steps map[string]slotplan.StepOutcome, done, served []slotplan.Placement, now time.Time) *mcribapi.DrainDoc {
	if l.drains.corrupt || l.drains.doc == nil || len(l.drains.doc.Zones) == 0 {
		return nil
	}
	stepped := map[string]bool{}
	movedOff := map[string][]int{}
	for _, p := range done {
		// A step starts at its announce.
		switch p.Reason {
		case mcribapi.EvictionDrain:
			stepped[p.From.AZ] = true
		case mcribapi.EvictionReturn:
			stepped[p.Node.AZ] = true
		}
	}
	for _, p := range served {
		if p.Reason == mcribapi.EvictionDrain {
			movedOff[p.From.AZ] = append(movedOff[p.From.AZ], p.Slot)
		}
	}
	// A slot announced to another zone counts there already (for
	// blocked); a return is over once the zone holds its baseline with no
	// slot announced to it or away from it still to serve.
	held, actual := l.zoneSlotsAnnouncedLocked(next), zoneSlots(next)
	changed := false
	out := mcribapi.DrainDoc{Zones: make(map[string]*mcribapi.DrainEntry, len(l.drains.doc.Zones))}
	for zone, e := range l.drains.doc.Zones {
		c := *e
		if stepped[zone] {
			t := now.UTC()
			c.LastStepAt, changed = &t, true
		}
		if moved := movedSlots(e.MovedSlots, movedOff[zone], next, zone); !slices.Equal(moved, e.MovedSlots) {
			c.MovedSlots, changed = moved, true
		}
		if c.Returning && min(held[zone], actual[zone]) >= c.BaselineSlots && !l.announcedInLocked(next, zone) {
			changed = true
			continue
		}
		blocked := c.Blocked
		if o, ok := steps[zone]; ok {
			blocked = o.Blocked
		}
		if held[zone] == c.Target() {
			blocked = ""
		}
		if blocked != c.Blocked {
			c.Blocked, changed = blocked, true
		}
		out.Zones[zone] = &c
	}
	if !changed {
		return nil
	}
	return &out
}

// movedSlots returns a zone's moved_slots after a pass: was, with the
// slots its drain steps moved off it in the pass (off), less the slots it
// holds in next (given back) and those next does not have; ascending,
// without repeats, nil when none.
func movedSlots(was, off []int, next *cachenodes.SlotMap, zone string) []int {
	var out []int
	for _, i := range slices.Concat(was, off) {
		if next != nil && i < next.NumSlots() && next.Slot(i).AZ != zone {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// slotList writes slots as "slot 3" or "slots 3, 5 and 9".
func slotList(slots []int) string {
	parts := make([]string, len(slots))
	for i, s := range slots {
		parts[i] = strconv.Itoa(s)
	}
	if len(parts) == 1 {
		return "slot " + parts[0]
	}
	return "slots " + strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// spareWarning says, for a drain entry that still moves toMove slots off
// its zone (draining) or back to it (returning) with spares ready spares
// outside the drained zones, that the drain takes the last of them or
// that none is left; "" when neither. A return takes no spare outside
// the zone (it frees one with each step), so it is told so, without the
// advice to undrain a zone.
func spareWarning(draining, returning bool, toMove, spares int) string {
	switch {
	case spares == 0 && returning:
		return "the pool has no ready spare outside the drained zones until the return frees one: each return step leaves the node that gives its slot back a spare once its warming ends; meanwhile a node that fails leaves its slot vacant (" + slotplan.SpareHelp(false) + ")"
	case spares == 0:
		return lastSpareSentence(true)
	case !draining || toMove < spares:
		return ""
	case toMove == spares:
		return fmt.Sprintf("the drain takes the pool's last ready spare: %s to move onto the %s outside the drained zones; afterwards a node that fails leaves its slot vacant (%s)",
			countOf(toMove, "slot"), countOf(spares, "ready spare"), slotplan.SpareHelp(true))
	}
	return fmt.Sprintf("the drain takes the pool's last ready spare: %s to move and only %s outside the drained zones; the rest wait for a spare, and a node that fails leaves its slot vacant (%s)",
		countOf(toMove, "slot"), countOf(spares, "ready spare"), slotplan.SpareHelp(true))
}

// countOf is n things in words: "1 slot", "3 slots".
func countOf(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// zoneSlots counts the slots each zone holds in m; a slot and its twin
// count once.
func zoneSlots(m *cachenodes.SlotMap) map[string]int {
	out := map[string]int{}
	if m == nil {
		return out
	}
	for i := range m.NumSlots() {
		if n := m.Slot(i); !n.IsZero() && !m.IsTwin(i) {
			out[n.AZ]++
		}
	}
	return out
}

// zoneSlotsAnnouncedLocked counts the slots each zone holds in m as
// zoneSlots does, a slot announced to another node counting for that
// node's zone (as this process knows it). l.mu must be held.
func (l *Loop) zoneSlotsAnnouncedLocked(m *cachenodes.SlotMap) map[string]int {
	out := zoneSlots(m)
	if m == nil || !m.AnyIncoming() {
		return out
	}
	for i := range m.NumSlots() {
		ni := m.Incoming(i)
		if ni == nil || m.IsTwin(i) {
			continue
		}
		s := l.tr.nodes[ni.NodeID]
		if s == nil {
			continue
		}
		if n := m.Slot(i); !n.IsZero() {
			out[n.AZ]--
		}
		out[s.node.AZ]++
	}
	return out
}

// announcedInLocked reports whether a slot of m is announced to a node of
// zone, or away from a holder of it: a step of its drain or return is
// still to serve. l.mu must be held.
func (l *Loop) announcedInLocked(m *cachenodes.SlotMap, zone string) bool {
	if m == nil || !m.AnyIncoming() {
		return false
	}
	for i := range m.NumSlots() {
		ni := m.Incoming(i)
		if ni == nil || m.IsTwin(i) {
			continue
		}
		if m.Slot(i).AZ == zone {
			return true
		}
		if s := l.tr.nodes[ni.NodeID]; s != nil && s.node.AZ == zone {
			return true
		}
	}
	return false
}

// knownZonesLocked returns the zones of the nodes the loop knows (those
// Consul lists and the slot holders). l.mu must be held.
func (l *Loop) knownZonesLocked() map[string]bool {
	out := map[string]bool{}
	for _, s := range l.tr.nodes {
		out[s.node.AZ] = true
	}
	if l.current != nil {
		for i := range l.current.NumSlots() {
			if n := l.current.Slot(i); !n.IsZero() {
				out[n.AZ] = true
			}
		}
	}
	return out
}

// Drain sets or updates zone's drain entry in KV (PUT /v1/drain/{zone}); by
// names who asked. It answers the drain document after the change.
// mcribapi.ErrUnknownZone when no node is known in zone (or zone is ""), mcribapi.ErrRefused
// when it would leave no undrained zone. A PUT on a drained zone replaces
// its percent, step, interval and reason and keeps its baseline and pace.
func (l *Loop) Drain(ctx context.Context, zone string, req mcribapi.Drain, by string) (mcribapi.DrainDoc, error) {
	if zone == "" {
		return mcribapi.DrainDoc{}, fmt.Errorf("%w: the nodes without a zone form the zone \"\", which cannot be drained", mcribapi.ErrUnknownZone)
	}
	return l.changeDrain(ctx, func(doc *mcribapi.DrainDoc) error {
		if err := l.drainRefusalLocked(doc, zone); err != nil {
			return err
		}
		e := &mcribapi.DrainEntry{BaselineSlots: zoneSlots(l.current)[zone]}
		if old := doc.Zones[zone]; old != nil {
			c := *old
			e = &c
		}
		e.Percent, e.StepPercent = req.Percent, req.StepPercent
		e.StepInterval = req.IntervalText() // the form the operator gave ("1m", not "1m0s")
		e.Reason, e.By, e.At, e.Returning = req.Reason, by, l.clock.Now().UTC(), false
		e.Blocked = "" // the leader's next step says anew what stops it
		doc.Zones[zone] = e
		return nil
	})
}

// drainRefusalLocked returns why a drain of zone is refused with the
// drain document doc: mcribapi.ErrUnknownZone when no node is known in
// it, mcribapi.ErrRefused when it would leave no undrained zone; nil when
// it is not. l.mu must be held.
func (l *Loop) drainRefusalLocked(doc *mcribapi.DrainDoc, zone string) error {
	known := l.knownZonesLocked()
	if !known[zone] {
		return fmt.Errorf("%w: no node is known in zone %q", mcribapi.ErrUnknownZone, zone)
	}
	left := 0
	for z := range known {
		if _, drained := doc.Zones[z]; !drained && z != zone {
			left++
		}
	}
	if left == 0 {
		return fmt.Errorf("%w: draining zone %q would leave no undrained zone to hold the slots", mcribapi.ErrRefused, zone)
	}
	return nil
}

// Undrain starts giving zone its slots back (DELETE /v1/drain/{zone}).
// mcribapi.ErrNotDrained when zone has no entry.
func (l *Loop) Undrain(ctx context.Context, zone string) (mcribapi.DrainDoc, error) {
	return l.changeDrain(ctx, func(doc *mcribapi.DrainDoc) error {
		old := doc.Zones[zone]
		if old == nil {
			return fmt.Errorf("%w: zone %q is not drained", mcribapi.ErrNotDrained, zone)
		}
		c := *old
		c.Returning, c.Blocked = true, ""
		doc.Zones[zone] = &c
		return nil
	})
}

// changeDrain reads the stored drain document, applies change to a copy
// (called with l.mu held) and stores it with check-and-set, retrying when
// it changed meanwhile; then it asks for a pass.
func (l *Loop) changeDrain(ctx context.Context, change func(doc *mcribapi.DrainDoc) error) (mcribapi.DrainDoc, error) {
	ds, ok := asDrainStore(l.store)
	if !ok {
		return mcribapi.DrainDoc{}, errNoDrainStore
	}
	for range drainAttempts {
		st, err := l.store.Read(ctx)
		var ce *CorruptError
		if err != nil && !errors.As(err, &ce) {
			return mcribapi.DrainDoc{}, err
		}
		doc := mcribapi.DrainDoc{Zones: map[string]*mcribapi.DrainEntry{}}
		if st.Drain != nil {
			doc.Zones = maps.Clone(st.Drain.Zones)
		}
		l.mu.Lock()
		if slices.Contains(st.Corrupt, kvlayout.Drain) {
			// A corrupt document is replaced by the operator's change,
			// made to the last one that parsed (the one GET /v1/drain
			// answers), so no zone drained there is dropped unseen. A
			// process that read none cannot know which zones the corrupt
			// one drains: it refuses.
			if !l.drains.good {
				reason := "it is not a drain document"
				if st.DrainErr != nil {
					reason = st.DrainErr.Error()
				}
				l.mu.Unlock()
				return mcribapi.DrainDoc{}, fmt.Errorf("%w: the drain document in Consul KV does not parse (%s) and this process never read one that did, so a change now could drop the zones it drains; fix it by hand or delete it (consul kv delete %s) and drain again",
					mcribapi.ErrRefused, reason, kvlayout.For(l.opts.KVPrefix, l.opts.Pool).Drain())
			}
			if l.drains.doc != nil {
				doc.Zones = maps.Clone(l.drains.doc.Zones)
			}
		}
		err = change(&doc)
		l.mu.Unlock()
		if err != nil {
			return mcribapi.DrainDoc{}, err
		}
		ok, err := ds.PutDrain(ctx, storedDrain(doc), st.DrainIndex)
		if err != nil {
			return mcribapi.DrainDoc{}, err
		}
		if ok {
			l.mu.Lock()
			l.drains.doc, l.drains.corrupt, l.drains.good, l.drains.err = &doc, false, true, ""
			l.drains.blockedAt = nil // an operator's change is tried at once
			l.mu.Unlock()
			l.Kick()
			return l.Drains(), nil
		}
	}
	return mcribapi.DrainDoc{}, fmt.Errorf("the drain document kept changing under this request (%d check-and-set attempts); try again", drainAttempts)
}

// Drains returns the drain document as this process knows it, each entry
// with its slots, target, slots to move, state, blocked, moved slots and
// the ready spares left (with a warning when the drain takes the last of
// them) filled in ({"zones": {}} when no zone is drained).
func (l *Loop) Drains() mcribapi.DrainDoc {
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drainsLocked(now)
}

func (l *Loop) drainsLocked(now time.Time) mcribapi.DrainDoc {
	out := mcribapi.DrainDoc{Zones: map[string]*mcribapi.DrainEntry{}}
	if l.drains.corrupt {
		out.Corrupt = l.drainCorruptMessage(l.drains.err)
	}
	if l.drains.doc == nil {
		return out
	}
	held, announced := zoneSlots(l.current), l.zoneSlotsAnnouncedLocked(l.current)
	spares := 0
	if len(l.drains.doc.Zones) > 0 {
		spares = l.readySparesLocked(now)
	}
	for zone, e := range l.drains.doc.Zones {
		c := *e
		c.Slots, c.TargetSlots = held[zone], e.Target()
		if e.Interval() < cachenodes.AnnounceLead {
			// The next step may come before an announced move serves:
			// the slot counts as moved already.
			c.Slots = announced[zone]
		}
		c.SlotsToMove = max(c.Slots-c.TargetSlots, c.TargetSlots-c.Slots)
		c.SparesLeft = spares
		c.Warning = spareWarning(c.Slots > c.TargetSlots, c.Slots < c.TargetSlots, c.SlotsToMove, spares)
		if c.MovedSlots == nil {
			c.MovedSlots = []int{}
		}
		switch {
		case l.freeze.doc != nil:
			c.State = mcribapi.DrainPaused
		case c.Slots > c.TargetSlots:
			c.State = mcribapi.DrainDraining
		case c.Slots < c.TargetSlots:
			c.State = mcribapi.DrainReturning
		default:
			c.State = mcribapi.DrainDrained
		}
		switch {
		case c.State == mcribapi.DrainPaused:
			c.Blocked = "an operator freeze pauses it (mcrib unfreeze lifts it)"
		case l.drains.corrupt:
			c.Blocked = "the drain document in Consul KV is corrupt: no step is taken until it is fixed or set again"
		case c.State == mcribapi.DrainDrained:
			c.Blocked = ""
		}
		out.Zones[zone] = &c
	}
	return out
}
