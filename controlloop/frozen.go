package controlloop

import (
	"context"
	"log/slog"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/flapdamp"
	"github.com/mcrib/mcrib/mcribapi"
)

// freezeState is what holds membership still: the operator's freeze, as
// the last read or this process's own Freeze left it, and the automatic
// freeze the last decision found (the mass-absence guard, an observer's
// fault, a fault of discovery).
type freezeState struct {
	// guard is the mass-absence guard (--max-absent-fraction).
	guard flapdamp.MassGuard
	// doc is the operator's freeze document; nil when none is stored.
	doc *mcribapi.FreezeDoc
	// auto is the automatic freeze's reason for the status ("": none),
	// with the zone alert when one names the zone that fails; base is the
	// reason alone: its changes are logged and told as events.
	auto, base string
}

// Freeze stores a freeze document; while it is stored no slot changes
// hands. by names who froze (a token name or the remote address).
func (l *Loop) Freeze(ctx context.Context, reason, by string) (mcribapi.FreezeDoc, error) {
	doc := mcribapi.FreezeDoc{Frozen: true, Reason: reason, At: l.clock.Now().UTC().Truncate(time.Second), By: by}
	if err := l.store.PutFreeze(ctx, doc); err != nil {
		return mcribapi.FreezeDoc{}, err
	}
	l.mu.Lock()
	l.freeze.doc = &doc
	l.mu.Unlock()
	l.Kick()
	return doc, nil
}

// Unfreeze removes the freeze document; pending replacements then proceed
// under the normal hold and ceiling.
func (l *Loop) Unfreeze(ctx context.Context) error {
	if err := l.store.DeleteFreeze(ctx); err != nil {
		return err
	}
	l.mu.Lock()
	l.freeze.doc = nil
	l.mu.Unlock()
	l.Kick()
	return nil
}

// autoFreezeLocked decides the automatic freeze over the slot holders of
// m: the mass-absence guard, an observer's fault, or a fault of discovery.
// It watches the zones (their alert is part of the reason it shows),
// records the reason for the status, tells when it changes, and reports
// whether it is on; r tells what changed. l.mu must be held.
func (l *Loop) autoFreezeLocked(m *cachenodes.SlotMap, r *report) bool {
	serving, absent := l.tr.absentHolders(m)
	tripped, reason := l.freeze.guard.Check(serving, absent)
	if !tripped && l.tr.mass != "" {
		// Many holders unreachable at once while Consul still lists them:
		// the observer's fault (invariant 7). When Consul agrees they are
		// gone, the absence guard's reason says more.
		tripped, reason = true, l.tr.mass
	}
	if l.tr.fault != "" {
		tripped, reason = true, l.tr.fault
	}
	alert := l.watchZonesLocked(m, r)
	if !tripped {
		reason = ""
	}
	if reason != l.freeze.base {
		if tripped {
			r.log(slog.LevelWarn, "automatic freeze", "reason", reason)
		} else {
			r.log(slog.LevelInfo, "automatic freeze lifted")
		}
		autoFreezeEvent(r, reason)
	}
	l.freeze.base, l.freeze.auto = reason, reason
	if tripped && alert != "" {
		// The zone that fails names itself, with the lever (section 7).
		l.freeze.auto += "; " + alert
	}
	return tripped
}
