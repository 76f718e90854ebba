package warmcopy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mcrib/mcrib/clock"
)

// fakeItem is one value of a fakeNode.
type fakeItem struct {
	value []byte
	flags uint32
	exp   int64 // Unix seconds, -1: never
	la    int64
	cas   uint64
}

// fakeNode is a memcached in memory on a fake clock, with the commands a
// copy sends: enough to test the copy's logic without the protocol. Its
// methods are safe for concurrent use.
type fakeNode struct {
	clk *clock.Fake

	mu      sync.Mutex
	items   map[string]*fakeItem
	nextCAS uint64
	log     []string // the commands sent: "gets a b", "add a", "set a"
	// getsTakes is how far each gets moves the fake clock.
	getsTakes time.Duration
	// beforeGets, when set, runs at each gets (the lock not held) before
	// it is answered.
	beforeGets func(keys []string)
	// dumpTakes is how far a metadump moves the fake clock.
	dumpTakes time.Duration
	// noHashDump makes it a memcached without metadump hash.
	noHashDump bool
	// busy is how many metadumps to answer BUSY.
	busy int
	// fail maps a command (gets, add, set, dial) to the error its next
	// calls fail with, as many times as failTimes says (0: every time).
	fail      map[string]error
	failTimes map[string]int
}

func newFakeNode(clk *clock.Fake) *fakeNode {
	return &fakeNode{clk: clk, items: map[string]*fakeItem{}, fail: map[string]error{}, failTimes: map[string]int{}}
}

// failing returns the error op fails with now, if any.
func (n *fakeNode) failing(op string) error {
	err := n.fail[op]
	if err == nil {
		return nil
	}
	if left, ok := n.failTimes[op]; ok {
		if left == 1 {
			delete(n.fail, op)
			delete(n.failTimes, op)
		} else {
			n.failTimes[op] = left - 1
		}
	}
	return err
}

// put stores a value as a set would (exp relative, 0: never).
func (n *fakeNode) put(key, value string, flags uint32, exp int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.putLocked(key, []byte(value), flags, exp)
}

func (n *fakeNode) putLocked(key string, value []byte, flags uint32, exp int64) {
	now := n.clk.Now().Unix()
	abs := int64(-1)
	if exp > 0 {
		abs = now + exp
	}
	n.nextCAS++
	n.items[key] = &fakeItem{value: value, flags: flags, exp: abs, la: now, cas: n.nextCAS}
}

// touch sets the last access of key.
func (n *fakeNode) touch(key string, la int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.items[key].la = la
}

func (n *fakeNode) remove(key string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.items, key)
}

// get returns key's item, if live.
func (n *fakeNode) get(key string) (fakeItem, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	it, ok := n.liveLocked(key)
	if !ok {
		return fakeItem{}, false
	}
	return *it, true
}

func (n *fakeNode) liveLocked(key string) (*fakeItem, bool) {
	it, ok := n.items[key]
	if ok && it.exp != -1 && it.exp <= n.clk.Now().Unix() {
		delete(n.items, key)
		return nil, false
	}
	return it, ok
}

func (n *fakeNode) commands() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.log...)
}

// fakeConn is a connection to a fakeNode.
type fakeConn struct {
	n      *fakeNode
	closed bool
}

var _ node = (*fakeConn)(nil)

var errClosed = errors.New("fake: use of a closed connection")

func (c *fakeConn) serverTime() (int64, error) { return c.n.clk.Now().Unix(), nil }

func (c *fakeConn) metadump(ctx context.Context, mode string, fn func(Entry)) error {
	n := c.n
	n.mu.Lock()
	n.log = append(n.log, "lru_crawler metadump "+mode)
	if n.noHashDump && mode == "hash" {
		n.mu.Unlock()
		return fmt.Errorf("%w: fake", errBadClass)
	}
	if n.busy > 0 {
		n.busy--
		n.mu.Unlock()
		return fmt.Errorf("%w: fake", ErrBusy)
	}
	var es []Entry
	for k := range n.items {
		if it, ok := n.liveLocked(k); ok {
			es = append(es, Entry{Key: k, Exp: it.exp, LastAccess: it.la, CAS: it.cas, Size: 50 + len(k) + len(it.value)})
		}
	}
	n.mu.Unlock()
	for _, e := range es {
		fn(e)
	}
	n.clk.Advance(n.dumpTakes)
	return nil
}

func (c *fakeConn) gets(keys []string, maxValue int) ([]item, error) {
	n := c.n
	if c.closed {
		return nil, errClosed
	}
	n.mu.Lock()
	n.log = append(n.log, "gets "+strings.Join(keys, " "))
	err, before, takes := n.failing("gets"), n.beforeGets, n.getsTakes
	n.mu.Unlock()
	if before != nil {
		before(keys)
	}
	n.clk.Advance(takes)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []item
	for _, k := range keys {
		it, ok := n.liveLocked(k)
		if !ok {
			continue
		}
		got := item{key: k, flags: it.flags, cas: it.cas, size: len(it.value)}
		if len(it.value) > maxValue {
			got.tooLarge = true
		} else {
			got.value = append([]byte(nil), it.value...)
		}
		it.la = n.clk.Now().Unix()
		out = append(out, got)
	}
	return out, nil
}

func (c *fakeConn) store(verb string, reqs []storeReq, within time.Duration) ([]outcome, error) {
	n := c.n
	out := make([]outcome, len(reqs))
	if c.closed {
		return out, errClosed
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, q := range reqs {
		n.log = append(n.log, verb+" "+q.key)
	}
	if err := n.failing(verb); err != nil {
		return out, err
	}
	for i, q := range reqs {
		if _, present := n.liveLocked(q.key); verb == "add" && present {
			out[i] = notStored
			continue
		}
		n.putLocked(q.key, append([]byte(nil), q.value...), q.flags, q.exp)
		out[i] = stored
	}
	return out, nil
}

func (c *fakeConn) close() error { c.closed = true; return nil }

// fakeNet serves fake nodes by address to a Copier.
type fakeNet map[string]*fakeNode

func (f fakeNet) open(_ context.Context, addr string) (node, error) {
	n, ok := f[addr]
	if !ok {
		return nil, fmt.Errorf("fake: no node at %s", addr)
	}
	n.mu.Lock()
	err := n.failing("dial")
	n.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &fakeConn{n: n}, nil
}
