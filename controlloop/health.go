package controlloop

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// health is what the last reads and passes found, for Ready and Status.
type health struct {
	// consulErr is the last error reaching Consul (nil: the last read
	// answered); passErr the last pass's error (nil: it completed).
	consulErr, passErr error
	// corrupt names the documents the last read found corrupt (kvcheck.go).
	corrupt []string
	// lastPass is when the last pass completed.
	lastPass time.Time
	// mapReadAt is when this process last read the slot map from the
	// store successfully (the start of the read), or wrote it (the start
	// of the write): what the map it serves is fresh as of.
	mapReadAt time.Time
	// blocked counts the evictions the last decision held back (the
	// freeze, the ceiling, a maintenance waiting for a spare).
	blocked int
}

// passed records a pass that completed at now.
func (h *health) passed(now time.Time) { h.lastPass, h.passErr = now, nil }

// readMap records a successful read (or write) of the slot map that
// began at at.
func (h *health) readMap(at time.Time) {
	if at.After(h.mapReadAt) {
		h.mapReadAt = at
	}
}

// SlotMapReadAt returns when this process last read the slot map it
// serves from Consul successfully (the leader's successful write counts
// as a read), by its clock; zero before the first. GET /v1/slotmap
// answers the map's age from it (X-Mcrib-Map-Age), so that clients judge
// whether their map is fresh (docs/api.md, "Fresh maps"). Run reads the
// map at least every cachenodes.MapReadEvery.
func (l *Loop) SlotMapReadAt() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.health.mapReadAt
}

// setPassError records err as the last pass's error, and as the last
// error reaching Consul when consul is set.
func (l *Loop) setPassError(err error, consul bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setPassErrorLocked(err, consul)
}

// setPassErrorLocked is setPassError with l.mu held.
func (l *Loop) setPassErrorLocked(err error, consul bool) {
	l.health.passErr = err
	if consul {
		l.health.consulErr = err
	}
}

// setCorruptLocked records which documents the last read found corrupt.
// l.mu must be held.
func (l *Loop) setCorruptLocked(keys []string) {
	l.health.corrupt = slices.Clone(keys)
}

// Corrupt returns the documents the last read found corrupt.
func (l *Loop) Corrupt() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.health.corrupt)
}

// Ready returns nil when this process completed a reconcile within
// 3 × max(probe interval, 1s) and can reach Consul; otherwise an error
// whose message is the reason.
func (l *Loop) Ready() error {
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	limit := 3 * max(l.opts.ProbeInterval, time.Second)
	switch {
	case l.health.consulErr != nil:
		return fmt.Errorf("consul is unreachable: %v", l.health.consulErr)
	case l.health.passErr != nil && isKVRefusal(l.health.passErr):
		return l.health.passErr
	case l.health.lastPass.IsZero() && l.health.passErr != nil:
		return fmt.Errorf("no reconcile has completed yet: %v", l.health.passErr)
	case l.health.lastPass.IsZero():
		return errors.New("no reconcile has completed yet")
	case now.Sub(l.health.lastPass) > limit:
		msg := fmt.Sprintf("the last reconcile completed %s ago, more than the %s allowed", now.Sub(l.health.lastPass).Round(time.Millisecond), limit)
		if l.health.passErr != nil {
			msg += fmt.Sprintf(": %v", l.health.passErr)
		}
		return errors.New(msg)
	}
	return nil
}
