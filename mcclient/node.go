package mcclient

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/backoff"
)

// Conn is what the client needs of one node's memcache connection;
// *memcache.Client has it. Options.Dial makes one per node address; tests
// and simulators pass their own. Get and GetMulti answer each item with
// its CAS unique (CasID, memcached's gets), which CompareAndSwap takes
// back: the client's Add replaces a tombstone only so.
type Conn interface {
	Get(key string) (*memcache.Item, error)
	GetMulti(keys []string) (map[string]*memcache.Item, error)
	Set(item *memcache.Item) error
	Add(item *memcache.Item) error
	Replace(item *memcache.Item) error
	CompareAndSwap(item *memcache.Item) error
	Delete(key string) error
	Close() error
}

// fixedSelector is a memcache.ServerSelector of one address: every key goes
// to it, with no lock and no allocation.
type fixedSelector struct{ addr net.Addr }

func (s *fixedSelector) PickServer(string) (net.Addr, error) { return s.addr, nil }
func (s *fixedSelector) Each(f func(net.Addr) error) error   { return f(s.addr) }

// staticAddr is a resolved address whose String is computed once:
// gomemcache calls it on every operation to find an idle connection.
type staticAddr struct{ network, str string }

func (a *staticAddr) Network() string { return a.network }
func (a *staticAddr) String() string  { return a.str }

// node is one memcached of the pool as the client knows it: its connection
// and its replay queue. A node keeps its identity (and queue) across map
// changes as long as its ID and address stay the same.
type node struct {
	id, addr string
	be       Conn
	q        *replayQueue
	sh       *shared
	// tombs is set while the client's map names the node as a slot's
	// incoming node or as the new holder of a slot with a warming object:
	// nothing sends it a delete then, and its queue is replayed as
	// tombstones (see replay).
	tombs atomic.Bool

	// replayMu is held by the one goroutine replaying the queue; others do
	// not wait for it.
	replayMu sync.Mutex
	bo       backoff.Backoff // under replayMu
	retryAt  time.Time       // under replayMu: no replay before
}

// dialBackend returns the gomemcache client of one node address.
func dialBackend(addr string, o Options) (Conn, error) {
	tcp, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return nil, err
	}
	mc := memcache.NewFromSelector(&fixedSelector{addr: &staticAddr{network: tcp.Network(), str: tcp.String()}})
	mc.Timeout = o.Timeout
	mc.MaxIdleConns = o.MaxIdleConns
	return mc, nil
}

// ready reports whether the node may be used now: its queue is empty, or
// a replay emptied it. It never waits for another goroutine's replay.
func (n *node) ready() bool {
	return n.q.Len() == 0 || n.replay()
}

// replay sends the queued deletes in order until the queue is empty (true)
// or the node fails to answer (false: the next try waits a backoff), each
// as a tombstone (cachenodes.TombstoneItem) while the node takes
// tombstones instead of deletes (see node.tombs). It returns false at once
// while another goroutine replays or the backoff has not passed.
func (n *node) replay() bool {
	if !n.replayMu.TryLock() {
		return false
	}
	defer n.replayMu.Unlock()
	if n.sh.clock.Now().Before(n.retryAt) {
		return false
	}
	for {
		key, ok := n.q.Front()
		if !ok {
			n.bo.Reset()
			return true
		}
		err := n.invalidate(key)
		if err != nil && (Unreachable(err) || errors.Is(err, memcache.ErrServerError)) {
			n.retryAt = n.sh.clock.Now().Add(n.bo.Next())
			return false
		}
		n.q.Pop(key)
		n.sh.metrics.replayed(n.id)
	}
}

// invalidate sends the node what takes key's value out of it: a delete,
// or a tombstone while the node takes tombstones.
func (n *node) invalidate(key string) error {
	if n.tombs.Load() {
		return n.be.Set(cachenodes.TombstoneItem(key))
	}
	return n.be.Delete(key)
}

// unreachable queues a delete of key after an operation found the node
// not answering, and starts the replay backoff: the next replay (and so
// the next operation on the node) waits for it.
func (n *node) unreachable(key string) {
	n.enqueue(key)
	if n.replayMu.TryLock() { // else a replay is under way and backs off itself
		n.retryAt = n.sh.clock.Now().Add(n.bo.Next())
		n.replayMu.Unlock()
	}
}

// enqueue queues a delete of key, counting a drop when the queue is full.
func (n *node) enqueue(key string) {
	if !n.q.Push(key) {
		n.sh.metrics.dropped(n.id, dropQueueFull, 1)
	}
}

// drop empties the queue for reason.
func (n *node) drop(reason string) {
	if k := n.q.Clear(); k > 0 {
		n.sh.metrics.dropped(n.id, reason, k)
	}
}
