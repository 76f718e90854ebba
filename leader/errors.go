package leader

import "errors"

// ErrNotLeader reports that an operation needs leadership that this process
// does not hold.
var ErrNotLeader = errors.New("leader: this process is not the leader")

// ErrInvalidOptions reports an Options value that New refuses; the wrapped
// message names the field.
var ErrInvalidOptions = errors.New("leader: invalid options")

// errKeyLost reports that the lock key no longer carries our session: the
// session was invalidated or the key was deleted (for example because Consul
// restarted with an empty store).
var errKeyLost = errors.New("leader: lock key no longer held by our session")

// errSessionGone reports that Consul no longer knows our session.
var errSessionGone = errors.New("leader: session no longer exists")
