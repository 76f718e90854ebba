package warmcopy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/mcrib/mcrib/clock"
)

// Defaults of Options.
const (
	// DefaultRate is the rate of a copy when Options.Rate is zero: 20 MB
	// (20,000,000 bytes) of values a second, the default of
	// --warm-copy-rate.
	DefaultRate = 20_000_000
	// DefaultWarmTTL is the longest expiry of a copy when Options.WarmTTL
	// is zero, the default of --warm-ttl.
	DefaultWarmTTL = time.Hour
	// DefaultTimeout bounds each command's answer when Options.Timeout is
	// zero.
	DefaultTimeout = 2 * time.Second
	// DefaultMaxKeys is how many keys of the slot a copy takes up, at
	// most, when Options.MaxKeys is zero: the most recently used.
	DefaultMaxKeys = 1 << 20
	// DefaultMaxValueBytes is the largest value copied when
	// Options.MaxValueBytes is zero: memcached's default item size limit.
	DefaultMaxValueBytes = 1 << 20
)

// LockFresh is how recently the leader lock must have been confirmed for
// the copy to add a key to B (Options.LockConfirmedAt): a copy is a
// leader's action, as a flush is.
const LockFresh = time.Second

// maxExpiry is the longest relative expiry memcached takes: a larger
// number is read as a Unix time.
const maxExpiry = 30 * 24 * time.Hour

// Options configures a Copier. Every field but LockConfirmedAt has a
// working default when zero or nil.
type Options struct {
	// Rate is the most bytes of values one Copy reads from its source and
	// adds to B per second (halved while the source answers slowly);
	// zero means DefaultRate. The copy-off setting of --warm-copy-rate 0
	// is the caller's to keep: it runs no Copy.
	Rate int64
	// WarmTTL is the longest expiry of a copy: a key is added to B with
	// min(its remaining expiry at the source, WarmTTL). Zero means
	// DefaultWarmTTL; more than 30 days means 30 days, memcached's
	// longest relative expiry.
	WarmTTL time.Duration
	// LockConfirmedAt returns when this process last confirmed that it
	// holds the leader lock, on Clock (the zero time: never). A key is
	// added to B only within LockFresh of it; otherwise the copy skips
	// the key (SkipNotLeader) and pauses until it is confirmed again. It
	// is required, and called from the goroutine of each Copy.
	LockConfirmedAt func() time.Time
	// Clock times the copy: the rate, the FillWithin window, the lock's
	// freshness and the source's answers. Nil means clock.Real.
	Clock clock.Clock
	// Dial opens the copy's connections (a Copy has one to its source and
	// one to B, of its own). Nil means a net.Dialer's DialContext.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Timeout bounds a dial and the answer to each command (each line of
	// a metadump); zero means DefaultTimeout.
	Timeout time.Duration
	// MaxKeys is how many keys of the slot a copy takes up at most, the
	// most recently used (the rest: SkipOverCap); it bounds the memory a
	// copy holds. Zero means DefaultMaxKeys.
	MaxKeys int
	// MaxValueBytes is the largest value copied (a larger one:
	// SkipTooLarge); zero means DefaultMaxValueBytes.
	MaxValueBytes int
}

// Copier copies the hot keys of warming slots from their warm sources
// into their new holders, one Copy per warming move. Build it with New;
// it is safe for concurrent use, and its Copy runs may be concurrent
// (one per move, each on connections of its own).
type Copier struct {
	opts   Options
	clock  clock.Clock
	totals counters
	// open connects to a node; tests replace it with fakes.
	open func(ctx context.Context, addr string) (node, error)
	// hooks, for tests: called after the first gets of a batch (the keys
	// about to be added) and after its adds (the keys B stored).
	afterGets, afterAdd func(keys []string)
}

// New returns a Copier with opts, its defaults filled in. It fails when
// opts.LockConfirmedAt is nil or a field is negative.
func New(opts Options) (*Copier, error) {
	switch {
	case opts.LockConfirmedAt == nil:
		return nil, errors.New("warmcopy: Options.LockConfirmedAt is required")
	case opts.Rate < 0 || opts.WarmTTL < 0 || opts.Timeout < 0 || opts.MaxKeys < 0 || opts.MaxValueBytes < 0:
		return nil, errors.New("warmcopy: negative Options field")
	}
	if opts.Rate == 0 {
		opts.Rate = DefaultRate
	}
	if opts.WarmTTL == 0 {
		opts.WarmTTL = DefaultWarmTTL
	}
	opts.WarmTTL = min(opts.WarmTTL, maxExpiry)
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxKeys == 0 {
		opts.MaxKeys = DefaultMaxKeys
	}
	if opts.MaxValueBytes == 0 {
		opts.MaxValueBytes = DefaultMaxValueBytes
	}
	if opts.Dial == nil {
		opts.Dial = (&net.Dialer{}).DialContext
	}
	c := &Copier{opts: opts, clock: clock.Or(opts.Clock)}
	c.open = func(ctx context.Context, addr string) (node, error) {
		return dialNode(ctx, c.opts.Dial, addr, c.opts.Timeout)
	}
	return c, nil
}

// Totals returns what every Copy of c did, summed (Halved is false):
// CopiedKeys and CopiedBytes are mcrib_warm_copied_keys_total and
// mcrib_warm_copied_bytes_total.
func (c *Copier) Totals() Stats { return c.totals.stats() }

// Move is one warming slot to copy: from its warm source (A) into its new
// holder (B), the keys k with cachenodes.KeySlot(k, NumSlots) == Slot.
// For a split, Slot is the twin's index and NumSlots the doubled count:
// the source also holds slot s, whose keys are not copied.
type Move struct {
	// Source is A's address, host:port.
	Source string
	// Target is B's address.
	Target string
	// Slot is the warming slot's index in a table of NumSlots slots.
	Slot, NumSlots int
}

func (m Move) check() error {
	switch {
	case m.Source == "" || m.Target == "":
		return fmt.Errorf("%w: no source or target address", ErrInvalidMove)
	case m.Source == m.Target:
		return fmt.Errorf("%w: source and target are both %s", ErrInvalidMove, m.Source)
	case m.NumSlots < 1 || m.Slot < 0 || m.Slot >= m.NumSlots:
		return fmt.Errorf("%w: slot %d of %d", ErrInvalidMove, m.Slot, m.NumSlots)
	}
	return nil
}

// leading reports whether the leader lock was confirmed within LockFresh
// of now.
func (c *Copier) leading(now time.Time) bool {
	at := c.opts.LockConfirmedAt()
	return !at.IsZero() && now.Sub(at) < LockFresh
}

// copyExpiry returns the relative expiry, in seconds, of a copy of an item
// that expires at exp (Unix seconds on the source's clock, -1: never),
// when the source's clock reads now, capped at ttl; false when the item
// has less than MinRemaining left. memcached's clock counts whole seconds
// and lags the true time by up to one, so the copy is given a second less
// than the item has: it never outlives the item at the source.
func copyExpiry(exp int64, now time.Time, ttl time.Duration) (int64, bool) {
	if exp == -1 {
		return int64(ttl / time.Second), true
	}
	left := time.Unix(exp, 0).Sub(now)
	if left < MinRemaining {
		return 0, false
	}
	return int64(min(left-time.Second, ttl) / time.Second), true
}
