package warmcopy

import (
	"errors"
	"fmt"
	"strings"
)

// The errors a Copy returns wrap one of these (and the cause), so that a
// caller can tell which node failed and whether B may hold an unchecked
// copy.
var (
	// ErrInvalidMove is returned for a Move that names no source or target,
	// the same node twice, or a slot outside its table.
	ErrInvalidMove = errors.New("warmcopy: invalid move")
	// ErrSource wraps a failure of the warm source (A): a dial, a read or
	// write, or an answer outside the protocol.
	ErrSource = errors.New("warmcopy: the warm source failed")
	// ErrTarget wraps a failure of the new holder (B).
	ErrTarget = errors.New("warmcopy: the new holder failed")
	// ErrUnverified is wrapped by an *UnverifiedError: copies that B may
	// hold but that could be neither checked against A nor undone.
	ErrUnverified = errors.New("warmcopy: copies neither checked nor undone")
	// ErrProtocol is an answer memcached's text protocol does not allow
	// here, ERROR or CLIENT_ERROR among them (memcached did not understand
	// the command). The connection is closed after it.
	ErrProtocol = errors.New("warmcopy: unexpected answer from memcached")
	// ErrLineTooLong is a protocol error: an answer line longer than
	// maxLine bytes, more than any line memcached 1.6 writes.
	ErrLineTooLong = fmt.Errorf("%w: a line over %d bytes", ErrProtocol, maxLine)
	// ErrServer is memcached's SERVER_ERROR: it understood the command
	// but could not carry it out (an add of a value over its item size
	// limit, out of memory). The connection stays usable.
	ErrServer = errors.New("warmcopy: memcached answered SERVER_ERROR")
	// ErrBusy is the LRU crawler's BUSY: another crawl (another metadump,
	// or memcached's own background crawl) is running. A Copy waits and
	// asks again.
	ErrBusy = errors.New("warmcopy: the LRU crawler is busy")
)

// UnverifiedError names copies that B may hold and that a Copy could
// neither check against A (the second gets) nor undo (the tombstone): B
// may hold a value A no longer has until the copy expires, so the caller
// should set the tombstones again (Copier.Tombstone) before the warming
// object goes. It wraps ErrUnverified and the cause.
type UnverifiedError struct {
	// Target is B's address.
	Target string
	// Keys are the keys whose tombstones were not set.
	Keys []string
	// Err is why.
	Err error
}

// Error says how many copies are unverified and why.
func (e *UnverifiedError) Error() string {
	shown := e.Keys
	if len(shown) > 3 {
		shown = shown[:3]
	}
	more := ""
	if len(e.Keys) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(e.Keys)-len(shown))
	}
	return fmt.Sprintf("warmcopy: %d copies in %s neither checked nor undone (%s%s): %v", len(e.Keys), e.Target, strings.Join(shown, ", "), more, e.Err)
}

// Unwrap returns ErrUnverified and the cause.
func (e *UnverifiedError) Unwrap() []error { return []error{ErrUnverified, e.Err} }
