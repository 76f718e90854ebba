package leader

import (
	"cmp"
	"fmt"
	"log/slog"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/clock"
)

// Defaults for the optional fields of Options.
const (
	DefaultLockDelay = 3 * time.Second
	DefaultCheckTTL  = 3 * time.Second
)

// maxLockDelay is the longest lock delay Consul honours.
const maxLockDelay = 60 * time.Second

// Options configures an Elector. Client, Key and ID are required; the zero
// value of every other field selects its default.
type Options struct {
	// Client talks to the local Consul agent. The elector registers its
	// health check on that agent and ties its sessions to that agent's node.
	// It watches the lock key with blocking queries of up to a minute, so
	// the client's HTTP timeout, if any, must be longer than that.
	Client *api.Client

	// Key is the lock key, e.g. "mcrib/default/leader".
	Key string

	// ID identifies this process to the others; it is stored as the lock's
	// value while this process leads. mcrib uses its operator API address,
	// e.g. "127.0.0.1:7070".
	ID string

	// LockDelay is how long Consul keeps the lock from being taken again
	// after a session holding it was invalidated (the leader died or was
	// deposed), so that a leader that has not noticed yet stops acting
	// before another starts. It is also how long StepDown waits before
	// campaigning again. Zero means DefaultLockDelay; at most 60 s.
	LockDelay time.Duration

	// CheckTTL is the TTL of the health check each session is tied to. A
	// killed leader loses the lock about CheckTTL after its last refresh;
	// the check is refreshed every CheckTTL/3. Zero means DefaultCheckTTL;
	// at least 300 ms.
	CheckTTL time.Duration

	// Clock times the keepalive, the retries, the lock delay after
	// StepDown and the waits of the watch on the lock key. Nil means the
	// real clock.
	Clock clock.Clock

	// Logger receives campaign events. Nil discards them.
	Logger *slog.Logger
}

// withDefaults validates o and fills in the defaults.
func (o Options) withDefaults() (Options, error) {
	switch {
	case o.Client == nil:
		return o, fmt.Errorf("%w: Client is required", ErrInvalidOptions)
	case o.Key == "":
		return o, fmt.Errorf("%w: Key is required", ErrInvalidOptions)
	case o.ID == "":
		return o, fmt.Errorf("%w: ID is required", ErrInvalidOptions)
	case o.LockDelay < 0 || o.LockDelay > maxLockDelay:
		return o, fmt.Errorf("%w: LockDelay %v outside 0..%v", ErrInvalidOptions, o.LockDelay, maxLockDelay)
	case o.CheckTTL < 0 || (o.CheckTTL > 0 && o.CheckTTL < 300*time.Millisecond):
		return o, fmt.Errorf("%w: CheckTTL %v below 300ms", ErrInvalidOptions, o.CheckTTL)
	}
	o.LockDelay = cmp.Or(o.LockDelay, DefaultLockDelay)
	o.CheckTTL = cmp.Or(o.CheckTTL, DefaultCheckTTL)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Clock = clock.Or(o.Clock)
	return o, nil
}
