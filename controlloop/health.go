package controlloop

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// health is what the last reads and passes found, for Ready and Status.
// Its zero value has seen no pass; it is not safe for concurrent use (the
// Loop's mutex guards it).
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

// failed records err as the last pass's error, and as the last error
// reaching Consul when consul is set.
func (h *health) failed(err error, consul bool) {
	h.passErr = err
	if consul {
		h.consulErr = err
	}
}

// sawCorrupt records which documents the last read found corrupt.
func (h *health) sawCorrupt(keys []string) { h.corrupt = slices.Clone(keys) }

// ready returns nil when a pass completed within limit before now and the
// last read reached Consul; otherwise an error whose message is the
// reason.
func (h *health) ready(now time.Time, limit time.Duration) error {
	switch {
	case h.consulErr != nil:
		return fmt.Errorf("consul is unreachable: %v", h.consulErr)
	case h.passErr != nil && isKVRefusal(h.passErr):
		return h.passErr
	case h.lastPass.IsZero() && h.passErr != nil:
		return fmt.Errorf("no reconcile has completed yet: %v", h.passErr)
	case h.lastPass.IsZero():
		return errors.New("no reconcile has completed yet")
	case now.Sub(h.lastPass) > limit:
		msg := fmt.Sprintf("the last reconcile completed %s ago, more than the %s allowed", now.Sub(h.lastPass).Round(time.Millisecond), limit)
		if h.passErr != nil {
			msg += fmt.Sprintf(": %v", h.passErr)
		}
		return errors.New(msg)
	}
	return nil
}

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
	l.health.failed(err, consul)
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
	return l.health.ready(now, 3*max(l.opts.ProbeInterval, time.Second))
}
