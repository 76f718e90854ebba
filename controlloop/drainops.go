package controlloop

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/kvlayout"
	"github.com/mcrib/mcrib/mcribapi"
)

// The operator's side of the drains (drain.go): Drain and Undrain change
// the stored document with check-and-set, Drains answers it.

// errNoDrainStore is the error of a drain asked of a loop whose store
// keeps no drain document.
var errNoDrainStore = errors.New("controlloop: this store keeps no drain document")

// drainAttempts bounds the check-and-set retries of Drain and Undrain.
const drainAttempts = 5

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
// it is not (Drain, and the what-if's CheckDrain). l.mu must be held.
func (l *Loop) drainRefusalLocked(doc *mcribapi.DrainDoc, zone string) error {
	known := l.tr.knownZones(l.current)
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

// base makes doc, read from st, the one an operator's change is made to:
// a corrupt stored document (at key) is replaced by the operator's change,
// made to the last one that parsed (the one GET /v1/drain answers), so no
// zone drained there is dropped unseen. A process that read none cannot
// know which zones the corrupt one drains: it refuses.
func (d *drainState) base(st Snapshot, doc *mcribapi.DrainDoc, key string) error {
	if !slices.Contains(st.Corrupt, kvlayout.Drain) {
		return nil
	}
	if !d.good {
		reason := "it is not a drain document"
		if st.DrainErr != nil {
			reason = st.DrainErr.Error()
		}
		return fmt.Errorf("%w: the drain document in Consul KV does not parse (%s) and this process never read one that did, so a change now could drop the zones it drains; fix it by hand or delete it (consul kv delete %s) and drain again",
			mcribapi.ErrRefused, reason, key)
	}
	if d.doc != nil {
		doc.Zones = maps.Clone(d.doc.Zones)
	}
	return nil
}

// changed makes doc, an operator's change just stored, the one known; its
// steps are tried at once.
func (d *drainState) changed(doc *mcribapi.DrainDoc) {
	d.doc, d.corrupt, d.good, d.err = doc, false, true, ""
	d.blockedAt = nil
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
		err = l.drains.base(st, &doc, kvlayout.For(l.opts.KVPrefix, l.opts.Pool).Drain())
		if err == nil {
			err = change(&doc)
		}
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
			l.drains.changed(&doc)
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

// answer returns the drain document as answered: each entry with its
// slots counted on m (a slot announced to a node counting for its zone,
// placed by tr, when its step interval is under AnnounceLead), its spares
// left (spares counts them), its state (paused under an operator freeze:
// frozen) and what blocks it; corrupt says why the stored one does not
// parse, with its key.
func (d *drainState) answer(tr *tracker, m *cachenodes.SlotMap, spares func() int, frozen bool, key string) mcribapi.DrainDoc {
	out := mcribapi.DrainDoc{Zones: map[string]*mcribapi.DrainEntry{}}
	if d.corrupt {
		out.Corrupt = drainCorruptMessage(d.err, key)
	}
	if d.doc == nil {
		return out
	}
	held, announced := zoneSlots(m), tr.zoneSlotsAnnounced(m)
	left := 0
	if len(d.doc.Zones) > 0 {
		left = spares()
	}
	for zone, e := range d.doc.Zones {
		c := *e
		c.Slots, c.TargetSlots = held[zone], e.Target()
		if e.Interval() < cachenodes.AnnounceLead {
			// The next step may come before an announced move serves:
			// the slot counts as moved already.
			c.Slots = announced[zone]
		}
		c.SlotsToMove = max(c.Slots-c.TargetSlots, c.TargetSlots-c.Slots)
		c.SparesLeft = left
		c.Warning = spareWarning(c.Slots > c.TargetSlots, c.Slots < c.TargetSlots, c.SlotsToMove, left)
		if c.MovedSlots == nil {
			c.MovedSlots = []int{}
		}
		switch {
		case frozen:
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
		case d.corrupt:
			c.Blocked = "the drain document in Consul KV is corrupt: no step is taken until it is fixed or set again"
		case c.State == mcribapi.DrainDrained:
			c.Blocked = ""
		}
		out.Zones[zone] = &c
	}
	return out
}

// drainsLocked returns the drain document as answered now. l.mu must be
// held.
func (l *Loop) drainsLocked(now time.Time) mcribapi.DrainDoc {
	return l.drains.answer(l.tr, l.current, func() int { return l.readySparesLocked(now) }, l.freeze.doc != nil,
		kvlayout.For(l.opts.KVPrefix, l.opts.Pool).Drain())
}
