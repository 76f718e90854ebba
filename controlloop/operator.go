package controlloop

import (
	"context"
	"time"

	"github.com/mcrib/mcrib/mcribapi"
)

// Freeze stores a freeze document; while it is stored no slot changes
// hands. by names who froze (a token name or the remote address).
func (l *Loop) Freeze(ctx context.Context, reason, by string) (mcribapi.FreezeDoc, error) {
	doc := mcribapi.FreezeDoc{Frozen: true, Reason: reason, At: l.clock.Now().UTC().Truncate(time.Second), By: by}
	if err := l.store.PutFreeze(ctx, doc); err != nil {
		return mcribapi.FreezeDoc{}, err
	}
	l.mu.Lock()
	l.freeze = &doc
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
	l.freeze = nil
	l.mu.Unlock()
	l.Kick()
	return nil
}
