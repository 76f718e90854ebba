package dst

import (
	"context"
	"errors"
	"slices"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/mcclient"
)

// caller is who makes a call to a memcached node: a replica's prober or an
// application client.
type caller struct {
	w    *world
	host *host
	// name is the caller for the trace ("r1", "c2").
	name string
	// client is the application client, nil for a replica.
	client *appClient
	// replica is the replica process, nil for a client.
	replica *replicaProc
}

// errRefused is a refused connection.
var errRefused = &netError{msg: "dial tcp: connect: connection refused"}

// errTimeout is a call that got no answer.
var errTimeout = &netError{msg: "read tcp: i/o timeout", timeout: true}

// call carries one operation to the memcached at addr and its answer
// back: apply runs when the request arrives (also when its answer is then
// lost), and its error is the answer.
func (c *caller) call(addr, op, key string, apply func(n *mcNode) error) error {
	w := c.w
	n := w.nodeByAddr[addr]
	if n == nil {
		return errRefused
	}
	out := w.net.send(c.host.name, n.host.name, op, key)
	if out == delivered || out == lostAnswer {
		switch n.proc {
		case dead:
			out = refused
		case paused:
			out = lostRequest
		}
	}
	if c.client != nil {
		c.client.maybeInterleave(op, key, true)
	}
	var err error
	switch out {
	case refused:
		err = errRefused
	case lostRequest:
		err = errTimeout
	default:
		err = apply(n)
		if out == lostAnswer {
			err = errTimeout
		}
	}
	if c.client != nil {
		c.client.maybeInterleave(op, key, false)
	}
	if out != delivered || w.cfg.TraceOps || (c.client == nil && op != "stats") {
		w.tr.add(w.now, "%s → %s %s %s: %s", c.name, n.id, op, key, errWord(out, err))
	}
	return err
}

func errWord(out outcome, err error) string {
	switch {
	case out != delivered && out != lostAnswer:
		return out.String()
	case out == lostAnswer:
		return "done, answer lost"
	case err == nil:
		return "ok"
	}
	return err.Error()
}

// conn is mcclient.Conn over the simulated network to one node address.
type conn struct {
	c    *caller
	addr string
}

var _ mcclient.Conn = (*conn)(nil)

func (k *conn) Get(key string) (*memcache.Item, error) {
	var out *memcache.Item
	err := k.c.call(k.addr, "get", key, func(n *mcNode) error {
		it, ok := n.get(key)
		if !ok {
			return memcache.ErrCacheMiss
		}
		out = &memcache.Item{Key: key, Value: slices.Clone(it.value), Flags: it.flags, CasID: it.cas}
		if cl := k.c.client; cl != nil {
			cl.servedBy(n, key, it)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (k *conn) GetMulti(keys []string) (map[string]*memcache.Item, error) {
	out := map[string]*memcache.Item{}
	for _, key := range keys {
		it, err := k.Get(key)
		switch {
		case err == nil:
			out[key] = it
		case !errors.Is(err, memcache.ErrCacheMiss):
			return out, err
		}
	}
	return out, nil
}

func (k *conn) store(op string, it *memcache.Item, when func(n *mcNode) bool) error {
	return k.c.call(k.addr, op, it.Key, func(n *mcNode) error {
		if !when(n) {
			return memcache.ErrNotStored
		}
		n.stores++
		n.items[it.Key] = item{value: slices.Clone(it.Value), flags: it.Flags, exp: n.expiry(it.Expiration), writer: k.c.writing(op, it), cas: n.stores}
		k.c.reached(n, it.Key)
		return nil
	})
}

// CompareAndSwap is memcached's cas: stored only while the item is the
// one read with it.CasID.
func (k *conn) CompareAndSwap(it *memcache.Item) error {
	return k.c.call(k.addr, "cas", it.Key, func(n *mcNode) error {
		switch {
		case !n.has(it.Key):
			return memcache.ErrCacheMiss
		case n.items[it.Key].cas != it.CasID:
			return memcache.ErrCASConflict
		}
		n.stores++
		n.items[it.Key] = item{value: slices.Clone(it.Value), flags: it.Flags, exp: n.expiry(it.Expiration), writer: k.c.writing("cas", it), cas: n.stores}
		k.c.reached(n, it.Key)
		return nil
	})
}

func (k *conn) Set(it *memcache.Item) error {
	return k.store("set", it, func(*mcNode) bool { return true })
}

func (k *conn) Add(it *memcache.Item) error {
	return k.store("add", it, func(n *mcNode) bool { return !n.has(it.Key) })
}

func (k *conn) Replace(it *memcache.Item) error {
	return k.store("replace", it, func(n *mcNode) bool { return n.has(it.Key) })
}

func (k *conn) Delete(key string) error {
	return k.c.call(k.addr, "delete", key, func(n *mcNode) error {
		k.c.reached(n, key)
		k.c.w.chk.onDelete(k.c, n, key)
		if !n.has(key) {
			return memcache.ErrCacheMiss
		}
		delete(n.items, key)
		return nil
	})
}

func (k *conn) Close() error { return nil }

// reached records, for the client's write of key under way, that a
// write of key reached n (its request arrived; the ended-warming rule).
func (c *caller) reached(n *mcNode, key string) {
	cl := c.client
	if cl == nil || len(cl.stack) == 0 {
		return
	}
	if o := cl.stack[len(cl.stack)-1]; o.kind != opGet && o.key == key {
		if o.reached == nil {
			o.reached = map[string]bool{}
		}
		o.reached[n.addr] = true
	}
}

// writing names the write that stores it: the value for a set, "fill" and
// the value for a copy from a warm source.
func (c *caller) writing(op string, it *memcache.Item) string {
	if op == "add" {
		return "fill:" + string(it.Value)
	}
	return string(it.Value)
}

// probeSeen is what a replica's last probe of a node read.
type probeSeen struct {
	ok      bool
	pid     int64
	flushes uint64
}

// prober is a replica's controlloop.Prober over the simulated network.
type prober struct{ c *caller }

func (p prober) Stats(_ context.Context, addr string) (cachenodes.Stats, error) {
	w := p.c.w
	if n := w.nodeByAddr[addr]; n != nil && w.now < w.plant.silent[n.id] {
		return cachenodes.Stats{}, errTimeout // a planted lie: the ground truth knows nothing of it
	}
	var st cachenodes.Stats
	err := p.c.call(addr, "stats", "", func(n *mcNode) error {
		st = n.stats()
		return nil
	})
	if r := p.c.replica; r != nil {
		// What this probe tells the loop that the last did not: only then
		// can its status (flush_pending) change.
		seen := probeSeen{ok: err == nil, pid: st.PID, flushes: st.CmdFlush}
		if r.seen[addr] != seen {
			r.seen[addr], r.learned = seen, true
		}
	}
	return st, err
}

func (p prober) Flush(_ context.Context, addr string) error {
	err := p.c.call(addr, "flush_all", "", func(n *mcNode) error {
		n.flushAll()
		p.c.w.chk.onFlush(n, p.c.replica)
		return nil
	})
	if n := p.c.w.nodeByAddr[addr]; err == nil && n != nil {
		p.c.w.chk.onFlushAnswered(n, p.c.replica)
	} else if err != nil && n != nil {
		if t := p.c.w.chk.nodes[n.id]; t != nil {
			t.flushFailedStep = p.c.w.step
		}
	}
	return err
}
