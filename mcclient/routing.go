package mcclient

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mcrib/mcrib/cachenodes"
)

// routing is the immutable routing table of one slot map.
type routing struct {
	m       *cachenodes.SlotMap
	slots   []*node // by slot; nil when vacant
	holders []*node // every node with a slot, once
	// warm is each slot's warm source (see warm.go); nil when no slot
	// warms, else nil for each slot that does not.
	warm []*warmSource
}

// SetSlotMap makes the client route by m, with one atomic swap: operations
// under way finish on the table they started with, and none waits for the
// swap. A node keeps its connections while its ID and address stay the
// same, and its replay queue while its ID does (a queue follows its node
// to a new address). A node that leaves every slot keeps its queue (Run
// and Replay still replay it); when it is placed again (mcrib flushed it
// first) or leaves the map, its queue is dropped. A slot's warm source (the map's warming
// object) is kept as a node too, with its connections and queue, and
// remembers across maps, for as long as the same node warms the same slot,
// that a write to it failed; when a later map ends the warming early while
// the slot keeps its holder, the client goes on sending the slot's writes
// to the old holder until the warming's until plus ClockSkew (a client
// with the earlier map may still read it). On an error (an address that
// does not resolve, a nil map, a map of a lower generation than the
// current one: ErrOlderGeneration) nothing changes. A map of the same
// generation is taken: warming and spares change without a new one.
func (c *Client) SetSlotMap(m *cachenodes.SlotMap) error {
	if m == nil {
		return errors.New("mcclient: setting a nil slot map")
	}
	retired, err := c.setSlotMap(m)
	// Outside the lock (a Conn may call the client), in the order of the
	// nodes' IDs (a simulation replays the same calls every time).
	slices.SortFunc(retired, func(a, b *node) int { return strings.Compare(a.id, b.id) })
	for _, n := range retired {
		n.be.Close()
	}
	return err
}

// setSlotMap is SetSlotMap under the client's lock; it returns the nodes
// whose connections the new table no longer uses, for the caller to
// close.
func (c *Client) setSlotMap(m *cachenodes.SlotMap) (retired []*node, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.route.Load()
	if c.order && old != nil {
		if err := cachenodes.CheckGeneration(old.m, m); err != nil {
			return nil, fmt.Errorf("mcclient: setting the slot map: %w", err)
		}
	}
	held := map[string]bool{} // IDs with a slot in the old map
	if old != nil {
		for _, n := range old.holders {
			held[n.id] = true
		}
	}

	r := &routing{m: m, slots: make([]*node, m.NumSlots())}
	fresh := map[string]*node{} // nodes made for this map, not yet known
	// known returns the node of nd: the client's own while its address
	// stays, else a fresh one (which takes over its queue).
	known := func(nd cachenodes.Node, i int) (*node, error) {
		if n := fresh[nd.ID]; n != nil {
			return n, nil
		}
		n := c.nodes[nd.ID]
		if n != nil && n.addr == nd.Addr {
			return n, nil
		}
		be, err := c.opts.Dial(nd.Addr)
		if err != nil {
			return nil, fmt.Errorf("mcclient: node %q of slot %d at %q: %w", nd.ID, i, nd.Addr, err)
		}
		q := newReplayQueue(c.opts.MaxQueue)
		if n != nil {
			// The same node at a new address: its queue follows it
			// (a delete too many is harmless, one too few is not).
			q = n.q
		}
		n = &node{id: nd.ID, addr: nd.Addr, be: be, q: q, sh: c.sh}
		n.bo.Min, n.bo.Max = c.opts.RetryMin, c.opts.RetryMax
		fresh[nd.ID] = n
		return n, nil
	}
	fail := func(err error) ([]*node, error) {
		for _, f := range fresh {
			retired = append(retired, f)
		}
		return retired, err
	}
	for i := range m.NumSlots() {
		nd := m.Slot(i)
		if nd.IsZero() {
			continue
		}
		n, err := known(nd, i)
		if err != nil {
			return fail(err)
		}
		r.slots[i] = n
		r.holders = append(r.holders, n)
	}
	inMap := map[string]bool{}   // spares and warm sources
	warming := map[string]bool{} // warm sources, and those remembered for writes
	for i := range m.NumSlots() {
		var ws *warmSource
		if w := m.Warming(i); w != nil {
			n, err := known(w.Node(), i)
			if err != nil {
				return fail(err)
			}
			inMap[w.NodeID] = true
			ws = newWarmSource(n, w.Until, old.warmOf(i))
		} else if c.durable {
			ws = c.stillWritten(old, m, r, i, fresh)
		}
		if ws == nil {
			continue
		}
		if r.warm == nil {
			r.warm = make([]*warmSource, m.NumSlots())
		}
		r.warm[i], warming[ws.n.id] = ws, true
	}

	// Reconcile the known nodes with the new holders.
	for _, s := range m.Spares() {
		inMap[s.ID] = true
	}
	for id, n := range c.nodes {
		placed := m.SlotOf(id) >= 0
		if placed && old != nil && !held[id] {
			// Parked with a queue, now placed again: mcrib flushed it.
			n.drop(dropNodeFlushed)
		}
		switch {
		case fresh[id] != nil: // a new address: fresh[id] has the queue
			retired = append(retired, n)
			delete(c.nodes, id)
		case !placed && !warming[id] && (!inMap[id] || n.q.Len() == 0):
			// Out of the map, or parked with nothing to replay.
			n.drop(dropNodeGone)
			retired = append(retired, n)
			delete(c.nodes, id)
		}
	}
	for id, n := range fresh {
		c.nodes[id] = n
	}
	c.route.Store(r)
	if old == nil {
		close(c.first)
	}
	return retired, nil
}

// stillWritten returns the warm source that slot i had in old, remembered
// for writes, when m ends that warming early but the slot keeps its
// holder and the writes' end has not passed: a client that still routes
// by the earlier map reads the old holder until until by its clock, so
// this one's writes must reach it until then plus ClockSkew. None when the
// slot's holder changed (m moved the slot), the old holder holds a slot in
// m (mcrib flushed it to place it) or took a new address, or the slots
// were resized.
func (c *Client) stillWritten(old *routing, m *cachenodes.SlotMap, r *routing, i int, fresh map[string]*node) *warmSource {
	w := old.warmOf(i)
	if w == nil || len(old.slots) != len(r.slots) || old.slots[i] == nil || old.slots[i] != r.slots[i] ||
		m.SlotOf(w.n.id) >= 0 || fresh[w.n.id] != nil || !c.sh.clock.Now().Before(w.writeUntil) {
		return nil
	}
	return w.remembered()
}
