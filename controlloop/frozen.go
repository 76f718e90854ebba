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

// decideAuto decides the automatic freeze over the slot holders of m by
// the verdicts of tr: the mass-absence guard, an observer's fault, or a
// fault of discovery. alert is the zone alert (zoneWatch.watch), part of
// the reason it shows. It records the reason for the status, tells in r
// when it changes, and reports whether it is on.
func (f *freezeState) decideAuto(tr *tracker, m *cachenodes.SlotMap, alert string, r *report) bool {
	serving, absent := tr.absentHolders(m)
	tripped, reason := f.guard.Check(serving, absent)
	if !tripped && tr.mass != "" {
		// Many holders unreachable at once while Consul still lists them:
		// the observer's fault (invariant 7). When Consul agrees they are
		// gone, the absence guard's reason says more.
		tripped, reason = true, tr.mass
	}
	if tr.fault != "" {
		tripped, reason = true, tr.fault
	}
	if !tripped {
		reason = ""
	}
	if reason != f.base {
		if tripped {
			r.log(slog.LevelWarn, "automatic freeze", "reason", reason)
		} else {
			r.log(slog.LevelInfo, "automatic freeze lifted")
		}
		autoFreezeEvent(r, reason)
	}
	f.base, f.auto = reason, reason
	if tripped && alert != "" {
		// The zone that fails names itself, with the lever (section 7).
		f.auto += "; " + alert
	}
	return tripped
}

// autoFreezeLocked watches the zones of m and decides the automatic
// freeze over its slot holders (freezeState.decideAuto); r tells what
// changed. l.mu must be held.
func (l *Loop) autoFreezeLocked(m *cachenodes.SlotMap, r *report) bool {
	alert := l.zones.watch(l.tr, m, l.drains.doc, r)
	return l.freeze.decideAuto(l.tr, m, alert, r)
}
