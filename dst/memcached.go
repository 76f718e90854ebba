package dst

import (
	"time"

	"github.com/mcrib/mcrib/cachenodes"
)

// proc is the state of a memcached process.
type proc int

const (
	running proc = iota
	// paused: SIGSTOP; connections are accepted but nothing is answered,
	// the contents are kept.
	paused
	// dead: nothing listens; connections are refused.
	dead
)

// maxRelativeExpiry is memcached's longest relative expiry, in seconds.
const maxRelativeExpiry = 30 * 24 * 3600

// item is one value a memcached holds.
type item struct {
	value []byte
	flags uint32
	exp   time.Time // zero: never
	// writer names the write that stored it (the client operation), for
	// the trace and the checker.
	writer string
	// cas is its CAS unique: a new one with every store (the node's
	// count of stores).
	cas uint64
}

// mcNode is one simulated memcached process: its items (expiring by its
// host's clock), its counters and its pid.
type mcNode struct {
	w    *world
	id   string // the Consul service ID it is registered under
	host *host
	addr string
	port int
	proc proc
	pid  int64
	// started is when the process started, in simulated time: memcached
	// counts its uptime on a monotonic clock, which no step of the wall
	// clock moves.
	started time.Duration
	items   map[string]item

	hits, misses, flushes uint64
	// stores counts the stores, for the items' CAS uniques.
	stores uint64
	// gone is set once the node left the pool for good.
	gone bool
	// aliases are the other service IDs it is registered under.
	aliases []string
}

// ids returns every service ID the node is registered under.
func (n *mcNode) ids() []string { return append([]string{n.id}, n.aliases...) }

func (n *mcNode) clock() hostClock { return hostClock{w: n.w, host: n.host} }

// restart starts a new process: a new pid (but in a container),
// nothing stored, counters at 0.
func (n *mcNode) restart() {
	n.pid = n.w.newPID(n)
	n.started = n.w.now
	n.items = map[string]item{}
	n.hits, n.misses, n.flushes = 0, 0, 0
	n.set(running)
	n.w.chk.onRestart(n)
}

// set changes the process's state.
func (n *mcNode) set(p proc) {
	n.proc = p
	n.w.truth++
}

// get returns key's item if it is there and not expired.
func (n *mcNode) get(key string) (item, bool) {
	it, ok := n.items[key]
	if ok && !it.exp.IsZero() && !n.clock().Now().Before(it.exp) {
		delete(n.items, key)
		ok = false
	}
	if ok {
		n.hits++
	} else {
		n.misses++
	}
	return it, ok
}

// has is get without counting.
func (n *mcNode) has(key string) bool {
	it, ok := n.items[key]
	return ok && (it.exp.IsZero() || n.clock().Now().Before(it.exp))
}

// expiry turns memcached's expiration into a time by the node's clock.
func (n *mcNode) expiry(e int32) time.Time {
	switch {
	case e == 0:
		return time.Time{}
	case e <= maxRelativeExpiry:
		return n.clock().Now().Add(time.Duration(e) * time.Second)
	}
	return time.Unix(int64(e), 0)
}

// stats is memcached's stats reply.
func (n *mcNode) stats() cachenodes.Stats {
	curr := 0
	for k := range n.items {
		if n.has(k) {
			curr++
		}
	}
	return cachenodes.Stats{PID: n.pid, Uptime: (n.w.now - n.started).Truncate(time.Second), CurrItems: uint64(curr),
		GetHits: n.hits, GetMisses: n.misses, CmdFlush: n.flushes}
}

// flushAll empties the node, as flush_all does.
func (n *mcNode) flushAll() {
	n.items = map[string]item{}
	n.flushes++
}
