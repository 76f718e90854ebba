package ratelimit

import (
	"context"
	"errors"
	"log/slog"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/internal/consulwatch"
)

// docReading is one answer of a blocking query on the boot-limit document.
type docReading struct {
	// Snap is the key as read; its Doc is the zero Document when the key is
	// missing or bad.
	Snap Snapshot
	// Bad, when not nil, says why the stored value is not a valid document
	// (it wraps ErrBadDocument).
	Bad error
}

// sameReading reports whether two readings hold the same key version and
// document, so that the second changes nothing for a follower whose state
// is made of the readings alone (the Client; not the Service, which also
// writes the document and must see every reading whose index moved).
func sameReading(a, b docReading) bool {
	return a.Snap.Found == b.Snap.Found && a.Snap.ModifyIndex == b.Snap.ModifyIndex &&
		a.Snap.Doc.Equal(b.Snap.Doc) && (a.Bad == nil) == (b.Bad == nil)
}

// follow keeps the Service and the Client on the boot-limit document: it
// follows the key with blocking queries (internal/consulwatch) until ctx
// ends and calls onChange with every reading whose index moved, unless
// equal (when not nil) finds it equal to the last one delivered, with its
// X-Consul-Index. A stored value that
// is not a valid document is a reading too, with Bad set. When onChange
// returns an error (a repair could not be written), the reading is offered
// again after a backoff. Consul errors are logged to log and retried,
// forever; every wait is timed by c.
func (s *Store) follow(ctx context.Context, c clock.Clock, log *slog.Logger, equal func(a, b docReading) bool, onChange func(r docReading, index uint64) error) {
	query := func(_ context.Context, q *api.QueryOptions) (docReading, *api.QueryMeta, error) {
		snap, meta, err := s.get(q)
		if errors.Is(err, ErrBadDocument) {
			return docReading{Snap: snap, Bad: err}, meta, nil
		}
		return docReading{Snap: snap}, meta, err
	}
	opts := consulwatch.Options[docReading]{Name: s.key, Equal: equal, Clock: c, Logger: log}
	consulwatch.Run(ctx, opts, query, onChange, nil)
}
