package mcclient

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
)

// routing is the routing table of one slot map. It is immutable but for
// readAt, the map's freshness, which a reading of the same map moves on.
type routing struct {
	m       *cachenodes.SlotMap
	slots   []*node // by slot; nil when vacant
	holders []*node // every node with a slot, once
	// warm is each slot's warming object (see warm.go); nil when no slot
	// has one, else nil for each slot that has none.
	warm []*warmSource
	// incoming is each slot's incoming node (an announce); nil when no
	// slot has one, else nil for each slot that has none.
	incoming []*node
	// readAt is when the map was last read from Consul, in Unix
	// nanoseconds by the client's clock (see fresh.go).
	readAt atomic.Int64
}

// setSlotMap is TakeReading under the client's lock: m read at at
// (ageKnown: the reader said when; else at is a made-up time that is not
// fresh), now
// by the client's clock. It returns the nodes whose connections the new
// table no longer uses, for the caller to close.
func (c *Client) setSlotMap(m *cachenodes.SlotMap, at time.Time, ageKnown bool, now time.Time) (retired []*node, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.route.Load()
	take := old == nil || !old.m.Equal(m)
	if c.order && old != nil {
		if take, err = cachenodes.MapOrder(old.m, m); err != nil {
			return nil, fmt.Errorf("mcclient: setting the slot map: %w", err)
		}
	}
	if !take {
		// The map the client routes by, read again.
		if ageKnown && at.UnixNano() > old.readAt.Load() {
			old.readAt.Store(at.UnixNano())
		}
		return nil, nil
	}
	held := map[string]bool{} // IDs with a slot, or announced to one, in the old map
	if old != nil {
		for _, n := range old.holders {
			held[n.id] = true
		}
		for _, n := range old.incoming {
			if n != nil {
				held[n.id] = true
			}
		}
	}

	r := &routing{m: m, slots: make([]*node, m.NumSlots())}
	r.readAt.Store(at.UnixNano())
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
	keep := map[string]bool{}  // incoming nodes, warm sources (also remembered ones)
	inMap := map[string]bool{} // spares and the nodes kept
	tombs := map[string]bool{} // incoming nodes and the new holders of warming slots
	if m.AnyIncoming() {
		r.incoming = make([]*node, m.NumSlots())
		for i := range m.NumSlots() {
			in := m.Incoming(i)
			if in == nil {
				continue
			}
			n, err := known(in.Node(), i)
			if err != nil {
				return fail(err)
			}
			r.incoming[i] = n
			keep[n.id], tombs[n.id] = true, true
		}
	}
	// The warm states of the old table, by source and new holder.
	states := map[warmPair]*warmState{}
	for i, w := range old.warmList() {
		if w != nil && old.slots[i] != nil {
			states[warmPair{w.n.id, old.slots[i].id}] = w.st
		}
	}
	stateOf := func(p warmPair) *warmState {
		st := states[p]
		if st == nil {
			st = new(warmState)
			states[p] = st
		}
		return st
	}
	for i := range m.NumSlots() {
		var ws *warmSource
		if w := m.Warming(i); w != nil {
			n, err := known(w.Node(), i)
			if err != nil {
				return fail(err)
			}
			ws = &warmSource{n: n, readsUntil: w.ReadsUntil(), writesUntil: w.WritesUntil(),
				st: stateOf(warmPair{w.NodeID, m.Slot(i).ID})}
		} else if c.durable {
			ws = rememberWarm(old, r, i, now, fresh)
			if ws != nil {
				ws = &warmSource{n: ws.n, writesUntil: ws.writesUntil, st: stateOf(warmPair{ws.n.id, r.slots[i].id})}
			}
		}
		if ws == nil {
			continue
		}
		if r.warm == nil {
			r.warm = make([]*warmSource, m.NumSlots())
		}
		r.warm[i] = ws
		keep[ws.n.id], tombs[r.slots[i].id] = true, true
	}

	// Reconcile the known nodes with the new map.
	for _, s := range m.Spares() {
		inMap[s.ID] = true
	}
	for id := range keep {
		inMap[id] = true
	}
	for id, n := range c.nodes {
		placed := m.SlotOf(id) >= 0
		if (placed || m.IncomingOf(id) >= 0) && old != nil && !held[id] {
			// Parked with a queue, now placed or announced again: mcrib
			// flushed it first.
			n.drop(dropNodeFlushed)
		}
		switch {
		case fresh[id] != nil: // a new address: fresh[id] has the queue
			retired = append(retired, n)
			delete(c.nodes, id)
		case !placed && !keep[id] && (!inMap[id] || n.q.Len() == 0):
			// Out of the map, or parked with nothing to replay.
			n.drop(dropNodeGone)
			retired = append(retired, n)
			delete(c.nodes, id)
		}
	}
	for id, n := range fresh {
		c.nodes[id] = n
	}
	for id, n := range c.nodes {
		n.tombs.Store(tombs[id] && c.tombstones) // (revert.Tombstones: deletes)
	}
	c.route.Store(r)
	if old == nil {
		close(c.first)
	}
	return retired, nil
}

// warmList returns r's warm sources by slot (nil for a nil r or none).
func (r *routing) warmList() []*warmSource {
	if r == nil {
		return nil
	}
	return r.warm
}

// rememberWarm returns the warm source that slot i of the new table r had
// in old when r's map has no warming object for it: the map removed it
// (an older leader ended warmings so; the shipped one keeps an ended
// warming's object until its writes end), while the writes' end has not
// passed by the client's clock and the slot keeps its holder (in a table
// of another length, slot i mod old's length). A client that still
// routes by old may read the source until then, so this one's writes
// must reach it. That holds when the source keeps a slot of its own (a
// split's source keeps slot s) just as when it parks. None when the
// slot's holder changed, the source took a new address, the slot is
// announced to a new node, or the tables' lengths do not divide.
func rememberWarm(old, r *routing, i int, now time.Time, fresh map[string]*node) *warmSource {
	if old == nil || old.warm == nil || len(r.slots)%len(old.slots) != 0 || r.incomingOf(i) != nil {
		return nil
	}
	j := i % len(old.slots)
	w := old.warm[j]
	if w == nil || old.slots[j] == nil || old.slots[j] != r.slots[i] || fresh[w.n.id] != nil || !now.Before(w.writesUntil) {
		return nil
	}
	return w
}
