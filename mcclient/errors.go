package mcclient

import (
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mcrib/mcrib/cachenodes"
)

// ErrQueued is wrapped by the error of a Delete, Set or Replace that did
// not reach its node because the node is unreachable (or still has
// invalidations waiting): a delete of the key is queued and will be
// replayed when the node answers, and before this client reads the node
// again (a tombstone instead of the delete while the node is a slot's
// incoming node or a warming slot's new holder). The write did not complete: until the replay, another client
// that reaches the node may still read the value it replaced there. A
// caller that only wants the key invalidated in time may treat it as
// success; one that needs the replaced value gone everywhere retries.
var ErrQueued = errors.New("mcclient: the node is unreachable; a delete of the key is queued for replay")

// ErrWarmSourceMissed is wrapped, beside ErrQueued, by the error of a
// Delete, Set or Replace of a key in a warming slot whose old holder did
// not take it (it did not answer, had deletes queued that it could not
// take first, or answered an error). The new holder has the write and a
// delete of the key is queued for the old holder, but until it reaches
// it a client that still reads the old holder (its clock behind, or its
// link to the old holder working) may read there the value the write
// replaced. Retry the write until it returns nil, or treat the key as not
// yet invalidated.
var ErrWarmSourceMissed = errors.New("mcclient: the warming slot's old holder did not take the write")

// ErrIncomingMissed is wrapped, beside ErrQueued, by the error of a
// Delete, Set or Replace of a key in a slot announced to a new node
// (the map's incoming) when that node did not take the key's tombstone:
// it did not answer, or had tombstones queued that it could not take
// first. The slot's holder has the write; the tombstone is queued for the
// incoming node and replayed when it answers. Until then a copy of the
// value the write replaced may be made into the node once it serves.
// Retry the write until it returns nil.
var ErrIncomingMissed = errors.New("mcclient: the slot's incoming node did not take the tombstone")

// ErrNoSlotMap is returned by every operation before the client has a slot
// map; Client.WaitForSlotMap waits for the first.
var ErrNoSlotMap = errors.New("mcclient: no slot map yet")

// ErrOlderGeneration is wrapped by the error of SetSlotMap for a map whose
// generation is lower than that of the map the client routes by (the
// generation order): nothing changes. It is
// cachenodes.ErrOlderGeneration, which the followers report too.
var ErrOlderGeneration = cachenodes.ErrOlderGeneration

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
