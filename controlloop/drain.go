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

// Drains (docs/api.md, "Drain"). The drain document lives in KV; any
// replica changes it for an operator (Drain, Undrain), with check-and-set;
// the leader carries the steps out and records their pace (LastStepAt),
// what stops them (blocked) and the end of a return in the same write as
// the moves it made (its pass's WritePool, also when nothing moved), so a
// new leader keeps the pace and every replica answers the same blocked. A
// drain step moves the zone's highest-numbered slots; a return step takes
// the highest-numbered slot of the undrained zone holding the most. When
// the steps are due is schedule.go's, the operator's side drainops.go's.

// drainState is the drains as this process knows them, and their steps'
// pace (schedule.go). Its zero value knows no drain; it is not safe for
// concurrent use (the Loop's mutex guards it).
type drainState struct {
	// probe is the probe interval: a step that moved nothing waits that
	// long before it is tried again.
	probe time.Duration
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

// take adopts the drain document of st; a corrupt one keeps the last that
// parsed (its zones stay drained), records why it does not parse and stops
// the steps (and nothing else).
func (d *drainState) take(st Snapshot) {
	d.corrupt = slices.Contains(st.Corrupt, kvlayout.Drain)
	if !d.corrupt {
		d.doc, d.good, d.err = st.Drain, true, ""
		return
	}
	d.err = "it is not a drain document"
	if st.DrainErr != nil {
		d.err = st.DrainErr.Error()
	}
}

// wrote makes doc, the drain document the leader's pass wrote with next
// at now, the one known, and places on this clock (remote) the steps it
// records at now. It returns the zones whose return ended with the write,
// in name order, and for each the slots its drain moved that stay where
// they are in next.
func (d *drainState) wrote(doc *mcribapi.DrainDoc, next *cachenodes.SlotMap, remote *remoteClock, now time.Time) (over []string, kept map[string][]int) {
	kept = map[string][]int{}
	if d.doc != nil {
		for zone, e := range d.doc.Zones {
			if doc.Zones[zone] == nil {
				over = append(over, zone)
				kept[zone] = movedSlots(e.MovedSlots, nil, next, zone)
			}
		}
	}
	for zone, e := range doc.Zones {
		if e.LastStepAt != nil && e.LastStepAt.Equal(now) {
			remote.steppedAt(zone, now)
		}
	}
	d.doc = doc
	slices.Sort(over)
	return over, kept
}

// drainCorruptMessage says, in one sentence, that the stored drain
// document, at key, does not parse (why: reason) and how to fix it.
func drainCorruptMessage(reason, key string) string {
	return fmt.Sprintf("the drain document in Consul KV does not parse: %s; fix it with mcrib drain/undrain or consul kv delete %s",
		reason, key)
}

// drained returns the drained zones (nil when none).
func (d *drainState) drained() map[string]bool {
	if d.doc == nil || len(d.doc.Zones) == 0 {
		return nil
	}
	out := make(map[string]bool, len(d.doc.Zones))
	for zone := range d.doc.Zones {
		out[zone] = true
	}
	return out
}

// next returns the drain document to store with next, or nil
// when it does not change: the zones whose step announced a move (done)
// get LastStepAt now, each zone's moved_slots gains the slots its drain
// steps moved off it (served) and loses those it holds again, each zone's blocked is what
// stopped its step in this pass (steps; cleared when the step went through
// or the zone is at its target), so every replica answers it, and a
// returning zone that holds its baseline again loses its entry. tr places
// the announced slots in their nodes' zones.
func (d *drainState) next(tr *tracker, next *cachenodes.SlotMap, steps map[string]slotplan.StepOutcome, done, served []slotplan.Placement, now time.Time) *mcribapi.DrainDoc {
	if d.corrupt || d.doc == nil || len(d.doc.Zones) == 0 {
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
	held, actual := tr.zoneSlotsAnnounced(next), zoneSlots(next)
	changed := false
	out := mcribapi.DrainDoc{Zones: make(map[string]*mcribapi.DrainEntry, len(d.doc.Zones))}
	for zone, e := range d.doc.Zones {
		c := *e
		if stepped[zone] {
			t := now.UTC()
			c.LastStepAt, changed = &t, true
		}
		if moved := movedSlots(e.MovedSlots, movedOff[zone], next, zone); !slices.Equal(moved, e.MovedSlots) {
			c.MovedSlots, changed = moved, true
		}
		if c.Returning && min(held[zone], actual[zone]) >= c.BaselineSlots && !tr.announcedIn(next, zone) {
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
