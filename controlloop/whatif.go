package controlloop

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcrib/mcrib/internal/kvlayout"
	"github.com/mcrib/mcrib/mcribapi"
)

// A what-if (docs/api.md, "What-if") asks what a drain or a resize would
// cost before it is made: the API answers the refusals its endpoint would
// answer, and the simulator's prediction for the rest. CheckDrain and
// CheckResize give those refusals from the stored documents and this
// process's view of the pool; they change nothing and need not lead.

// CheckDrain returns the refusal PUT /v1/drain/{zone} would answer now
// for zone (mcribapi.ErrUnknownZone, mcribapi.ErrRefused), nil when the
// drain would be set.
func (l *Loop) CheckDrain(ctx context.Context, zone string) error {
	if zone == "" {
		return fmt.Errorf("%w: the nodes without a zone form the zone \"\", which cannot be drained", mcribapi.ErrUnknownZone)
	}
	st, err := l.readForCheck(ctx)
	if err != nil {
		return err
	}
	doc := &mcribapi.DrainDoc{Zones: map[string]*mcribapi.DrainEntry{}}
	if st.Drain != nil {
		doc = st.Drain
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.drainRefusalLocked(doc, zone)
}

// CheckResize returns the refusal PUT /v1/resize would answer now for
// req (mcribapi.ErrBadRequest, mcribapi.ErrRefused), nil when the resize
// would start.
func (l *Loop) CheckResize(ctx context.Context, req mcribapi.Resize) error {
	st, err := l.readForCheck(ctx)
	if err != nil {
		return err
	}
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.current == nil {
		return fmt.Errorf("%w: the pool has no slot map yet", mcribapi.ErrRefused)
	}
	prev := l.current
	conflict := func(fresh bool) error { return l.resizeConflictLocked(st, prev, now, fresh) }
	_, _, err = l.resizes.apply(prev, &resizeRequest{resize: req}, conflict, kvlayout.For(l.opts.KVPrefix, l.opts.Pool).Resize(), now)
	return err
}

// readForCheck reads the pool's documents for a check; a corrupt one is
// read as the store gives it.
func (l *Loop) readForCheck(ctx context.Context) (Snapshot, error) {
	st, err := l.store.Read(ctx)
	var ce *CorruptError
	if err != nil && !errors.As(err, &ce) {
		return Snapshot{}, fmt.Errorf("reading the pool's documents: %w", err)
	}
	return st, nil
}
