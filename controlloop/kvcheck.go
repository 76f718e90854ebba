package controlloop

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/mcribapi"
)

// ErrCorruptDocument is matched (errors.Is) by the error of a read that
// found a document in Consul KV that does not parse: it is reported as
// exactly that, never as Consul being unreachable.
var ErrCorruptDocument = errors.New("controlloop: a document in Consul KV is corrupt")

// ErrForeignSlotMap is wrapped by the error of a pass that found a slot
// map of another pool under this pool's key: it is neither used nor
// overwritten.
var ErrForeignSlotMap = errors.New("controlloop: the stored slot map belongs to another pool")

// ErrOlderSlotMap is wrapped by the error of a pass that found a stored
// slot map older than the one this process knows (a hand edit, a restored
// snapshot): it is neither adopted nor overwritten until an operator
// decides (delete the key to have the known map put back, or restart mcrib
// to adopt the stored one).
var ErrOlderSlotMap = errors.New("controlloop: the stored slot map is older than the one this process knows")

// CorruptError is the error of a read that found corrupt documents. Its
// message starts "the slotmap document in Consul KV is corrupt".
type CorruptError struct {
	// Keys are the corrupt documents' names (of kvlayout.Checked).
	Keys []string
	// Err is why the first one does not parse.
	Err error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%s: %v", corruptMessage(e.Keys), e.Err)
}

// Is makes a CorruptError match ErrCorruptDocument.
func (e *CorruptError) Is(target error) bool { return target == ErrCorruptDocument }

func (e *CorruptError) Unwrap() error { return e.Err }

// corruptMessage says which documents are corrupt, in one sentence.
func corruptMessage(keys []string) string {
	if len(keys) == 1 {
		return "the " + keys[0] + " document in Consul KV is corrupt"
	}
	return "the " + strings.Join(keys, " and ") + " documents in Consul KV are corrupt"
}

// corruptFreeze is the freeze a corrupt freeze document stands for: a
// freeze (the safe reading), whose reason says why.
func corruptFreeze(err error) *mcribapi.FreezeDoc {
	return &mcribapi.FreezeDoc{Frozen: true, Reason: fmt.Sprintf("the freeze document in Consul KV is corrupt (%v): taken as frozen until it is fixed or deleted (mcrib unfreeze)", err), By: "mcrib"}
}

// isKVRefusal reports whether a read error is about what is stored rather
// than about reaching Consul.
func isKVRefusal(err error) bool {
	return errors.Is(err, ErrCorruptDocument) || errors.Is(err, ErrForeignSlotMap) || errors.Is(err, ErrOlderSlotMap)
}

// checkStored refuses a stored map that belongs to another pool, or that
// is older than known (the map this process last adopted or wrote; nil
// when none).
func (l *Loop) checkStored(m, known *cachenodes.SlotMap) error {
	if m == nil {
		return nil
	}
	if m.Pool() != l.opts.Pool {
		return fmt.Errorf("%w: the slot map in Consul KV names pool %q, not %q: refusing to use or overwrite it (fix or delete the key)", ErrForeignSlotMap, m.Pool(), l.opts.Pool)
	}
	if known != nil && m.Generation() < known.Generation() {
		return fmt.Errorf("%w: the slot map in Consul KV has generation %d, older than generation %d this process knows: refusing to adopt or overwrite it (delete the key to have generation %d put back, or restart mcrib to adopt the stored one)",
			ErrOlderSlotMap, m.Generation(), known.Generation(), known.Generation())
	}
	return nil
}

// parseStoredFreeze reads a stored freeze document; any value present
// means frozen.
func parseStoredFreeze(b []byte) (*mcribapi.FreezeDoc, error) {
	var f mcribapi.FreezeDoc
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, err
	}
	f.Frozen = true
	return &f, nil
}

// parseStoredDrain reads a stored drain document: {"zones": {...}} whose
// entries have a percent and a step of 1..100, a step_interval from 1s to
// 1h and a baseline of at least 0. Anything else is corrupt.
func parseStoredDrain(b []byte) (*mcribapi.DrainDoc, error) {
	var d mcribapi.DrainDoc
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, err
	}
	if d.Zones == nil {
		return nil, errors.New(`the drain document has no "zones" object`)
	}
	for zone, e := range d.Zones {
		switch {
		case zone == "":
			return nil, errors.New(`the drain document drains the zone "", which cannot be drained`)
		case e == nil:
			return nil, fmt.Errorf("the drain entry of zone %q is null", zone)
		case e.Percent < 1 || e.Percent > 100 || e.StepPercent < 1 || e.StepPercent > 100 || e.BaselineSlots < 0:
			return nil, fmt.Errorf("the drain entry of zone %q has a percent, step or baseline out of range", zone)
		}
		for _, slot := range e.MovedSlots {
			if slot < 0 {
				return nil, fmt.Errorf("the drain entry of zone %q moved slot %d, which no pool has", zone, slot)
			}
		}
		if d, err := time.ParseDuration(e.StepInterval); err != nil || d < mcribapi.MinDrainStepInterval || d > mcribapi.MaxDrainStepInterval {
			return nil, fmt.Errorf("the drain entry of zone %q has step_interval %q, not a duration from 1s to 1h", zone, e.StepInterval)
		}
	}
	return &d, nil
}

// storedDrain is the drain document as stored: the entries without the
// fields filled in when answered (blocked, which the leader alone knows,
// is stored).
func storedDrain(d mcribapi.DrainDoc) mcribapi.DrainDoc {
	out := mcribapi.DrainDoc{Zones: make(map[string]*mcribapi.DrainEntry, len(d.Zones))} // never Corrupt
	for zone, e := range d.Zones {
		c := *e
		c.Slots, c.TargetSlots, c.State, c.SlotsToMove, c.SparesLeft, c.Warning = 0, 0, "", 0, 0, ""
		out.Zones[zone] = &c
	}
	return out
}

// checkSlots checks the slot count of the stored map m against the one
// this process knows: --slots, or the count a resize doubled it to. A map
// resized from the count known (a resize another replica made, or a
// restart with the old --slots) is taken, with a warning, and its count
// becomes the one known; any other count is refused.
func (l *Loop) checkSlots(m *cachenodes.SlotMap) error {
	if m == nil {
		return nil
	}
	known := int(l.slots.Load())
	switch {
	case m.NumSlots() == known:
		return nil
	case m.ResizedFrom() == known:
		if known == l.opts.NumSlots {
			l.opts.Logger.Warn("the pool was resized: taking the stored slot count, not --slots", "pool", l.opts.Pool,
				"slots", m.NumSlots(), "resized_from", m.ResizedFrom(), "flag", l.opts.NumSlots)
		}
		l.slots.Store(int64(m.NumSlots()))
		return nil
	}
	also := ""
	if m.ResizedFrom() > 0 {
		also = fmt.Sprintf(" (or %d, the count it was resized from)", m.ResizedFrom())
	}
	return fmt.Errorf("%w: pool %q has %d slots in Consul KV but --slots is %d; only a resize changes the slot count: start with --slots %d%s",
		ErrSlotCountMismatch, l.opts.Pool, m.NumSlots(), known, m.NumSlots(), also)
}
