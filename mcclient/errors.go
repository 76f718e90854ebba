package mcclient

import (
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/bradfitz/gomemcache/memcache"
)

// ErrQueued is wrapped by the error of a Delete, Set or Replace that did
// not reach its node because the node is unreachable (or still has
// invalidations waiting): a delete of the key is queued and will be
// replayed before the node serves a read again. A caller that only wants
// the key invalidated may treat it as success.
var ErrQueued = errors.New("mcclient: the node is unreachable; a delete of the key is queued for replay")

// ErrNoSlotMap is returned by every operation before the client has a slot
// map.
var ErrNoSlotMap = errors.New("mcclient: no slot map yet")

// Unreachable reports whether err, from a gomemcache operation, says that
// the node did not answer: a failed or timed-out connection, a read or
// write timeout, a connection closed or reset. A cache miss, a CAS
// conflict, a "not stored", a malformed key or a server error are answers,
// not unreachability.
func Unreachable(err error) bool {
	if err == nil {
		return false
	}
	switch {
	case errors.Is(err, memcache.ErrCacheMiss), errors.Is(err, memcache.ErrCASConflict),
		errors.Is(err, memcache.ErrNotStored), errors.Is(err, memcache.ErrMalformedKey),
		errors.Is(err, memcache.ErrServerError), errors.Is(err, memcache.ErrNoStats):
		return false
	}
	var cte *memcache.ConnectTimeoutError
	var ne net.Error
	var errno syscall.Errno
	return errors.As(err, &cte) || errors.As(err, &ne) || errors.As(err, &errno) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)
}
