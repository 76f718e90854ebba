package cachenodes

import (
	"errors"
	"fmt"
	"net"
	"sync/atomic"

	"github.com/bradfitz/gomemcache/memcache"
)

// ErrVacantSlot is wrapped by Selector.PickServer's error when the key's
// slot has no node: the request misses rather than going to another node.
var ErrVacantSlot = errors.New("cachenodes: the key's slot is vacant")

// ErrNoSlotMap is wrapped by Selector.PickServer's error when the selector
// has no slot map yet. It also wraps memcache.ErrNoServers, the error
// gomemcache's own selector gives in that case.
var ErrNoSlotMap = fmt.Errorf("cachenodes: the selector has no slot map: %w", memcache.ErrNoServers)

// Selector is a memcache.ServerSelector that routes every key to the node of
// its slot, KeySlot(key, NumSlots()), in a mcrib slot map. A key whose slot
// is vacant gets an error wrapping ErrVacantSlot, never another node: a
// vacant slot misses instead of rehashing its keys over the survivors. It
// picks slot holders only, never a warming slot's old holder (see
// SlotMap.Warming): like twemproxy, an application on the bare selector
// sees a moved slot cold at once; mcclient warms it. The
// zero value has no map (PickServer returns ErrNoSlotMap) until SetSlotMap
// gives it one. A Selector is safe for concurrent use; SetSlotMap swaps an
// immutable routing table atomically.
type Selector struct {
	table atomic.Pointer[selectorTable]
}

var _ memcache.ServerSelector = (*Selector)(nil)

// selectorTable is the immutable routing table of one slot map: for each
// slot either its resolved address or the error a vacant slot returns.
type selectorTable struct {
	m       *SlotMap
	addrs   []net.Addr // by slot; nil when vacant
	vacant  []error    // by slot; nil when served
	servers []net.Addr // every distinct address, in slot order, for Each
}

// staticAddr is a resolved address whose Network and String are computed
// once, so that PickServer hands out the same value without allocating.
type staticAddr struct {
	network, str string
}

func (a *staticAddr) Network() string { return a.network }
func (a *staticAddr) String() string  { return a.str }

// NewSelector returns a Selector routing by m, or the error SetSlotMap gives.
func NewSelector(m *SlotMap) (*Selector, error) {
	s := &Selector{}
	if err := s.SetSlotMap(m); err != nil {
		return nil, err
	}
	return s, nil
}

// SetSlotMap makes the selector route by m. It resolves every slot's address
// first; if one fails (or m is nil) it returns the error and changes
// nothing, like gomemcache's ServerList.SetServers. No connection is made.
func (s *Selector) SetSlotMap(m *SlotMap) error {
	if m == nil {
		return errors.New("cachenodes: setting a nil slot map on the selector")
	}
	n := m.NumSlots()
	t := &selectorTable{m: m, addrs: make([]net.Addr, n), vacant: make([]error, n)}
	byAddr := make(map[string]net.Addr, n)
	for i := range n {
		node := m.Slot(i)
		if node.IsZero() {
			t.vacant[i] = fmt.Errorf("%w: slot %d of %d", ErrVacantSlot, i, n)
			continue
		}
		tcp, err := net.ResolveTCPAddr("tcp", node.Addr)
		if err != nil {
			return fmt.Errorf("resolving address %q of node %q in slot %d: %w", node.Addr, node.ID, i, err)
		}
		a := &staticAddr{network: tcp.Network(), str: tcp.String()}
		if prev, ok := byAddr[a.str]; ok {
			t.addrs[i] = prev
			continue
		}
		byAddr[a.str] = a
		t.addrs[i] = a
		t.servers = append(t.servers, a)
	}
	s.table.Store(t)
	return nil
}

// SlotMap returns the map the selector routes by, or nil if it has none.
func (s *Selector) SlotMap() *SlotMap {
	if t := s.table.Load(); t != nil {
		return t.m
	}
	return nil
}

// PickServer returns the address of the node serving key's slot. It does
// not allocate.
func (s *Selector) PickServer(key string) (net.Addr, error) {
	t := s.table.Load()
	if t == nil {
		return nil, ErrNoSlotMap
	}
	slot := KeySlot(key, len(t.addrs))
	if a := t.addrs[slot]; a != nil {
		return a, nil
	}
	return nil, t.vacant[slot]
}

// Each calls f with the address of every node that holds a slot, once per
// address, in slot order, and stops at the first error f returns. With no
// map it calls f never and returns nil.
func (s *Selector) Each(f func(net.Addr) error) error {
	t := s.table.Load()
	if t == nil {
		return nil
	}
	for _, a := range t.servers {
		if err := f(a); err != nil {
			return err
		}
	}
	return nil
}
