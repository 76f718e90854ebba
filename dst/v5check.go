package dst

import (
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/revert"
)

// The rules of moves without a stale read (docs/api.md): tombstones,
// fresh maps, ended warmings. Each asserts the simulated world's ground
// truth: the stored slot map as the checker last read it, the requests
// that reached each memcached, and when Consul really answered each
// replica a read of the map.

// freshSlack is how far a client's own measure of its map's age may fall
// short of the truth: a clock step of the answering replica between its
// read and its answer, and one of the client's since, each up to the
// clocks' 1 s.
const freshSlack = 2 * 2 * maxSkew

// protection is one node that the stored map names for one slot as the
// slot's incoming node, or as its holder while the slot has a warming
// object: nothing may send it a delete of a key of that slot.
type protection struct {
	addr string
	slot int
}

// protects reports whether m names the node at addr slot i's incoming node
// or its holder while slot i has a warming object.
func protects(m *cachenodes.SlotMap, addr string, i int) bool {
	if m == nil || i >= m.NumSlots() {
		return false
	}
	if in := m.Incoming(i); in != nil && in.Addr == addr {
		return true
	}
	return m.AnyWarming() && m.Warming(i) != nil && m.Slot(i).Addr == addr
}

// noteProtected records the protections of m, the stored map's new
// version: one seen before keeps when it was first stored.
func (c *checker) noteProtected(m *cachenodes.SlotMap) {
	next := map[protection]time.Duration{}
	for i := range m.NumSlots() {
		var addrs []string
		if in := m.Incoming(i); in != nil {
			addrs = append(addrs, in.Addr)
		}
		if m.AnyWarming() && m.Warming(i) != nil {
			addrs = append(addrs, m.Slot(i).Addr)
		}
		for _, a := range addrs {
			p := protection{a, i}
			if at, ok := c.protected[p]; ok {
				next[p] = at
			} else {
				next[p] = c.w.now
			}
		}
	}
	c.protected = next
}

// onDelete checks a delete of key that reached n, sent by from
// (s9-tombstones): from the moment the stored map names n a slot's
// incoming node until the slot's warming object is removed, nothing sends
// n a delete of a key of that slot. A client whose own map does not name n
// so yet may lag behind the announce (its map shows n as what it was
// before); only while its map could be fresh and still lag: for a fresh
// map, no longer than FreshFor (and the clocks' slack) after the announce
// was stored.
func (c *checker) onDelete(from *caller, n *mcNode, key string) {
	m := c.kvMap
	if m == nil || (!m.AnyIncoming() && !m.AnyWarming()) {
		return
	}
	i := cachenodes.KeySlot(key, m.NumSlots())
	since, ok := c.protected[protection{n.addr, i}]
	if !ok {
		return
	}
	cl := from.client
	if cl == nil {
		c.fail(ruleTombstones, 0, "%s sent a delete of %s to %s, the stored map's incoming node or new holder of slot %d (since %.3fs)", from.name, key, n.id, i, since.Seconds())
		return
	}
	cm := cl.mc.SlotMap()
	switch {
	case cm != nil && protects(cm, n.addr, cachenodes.KeySlot(key, cm.NumSlots())):
		c.fail(ruleTombstones, revert.Tombstones, "%s sent a delete of %s to %s, which its own map (generation %d) names slot %d's incoming node or new holder: a tombstone was due",
			cl.name, key, n.id, cm.Generation(), cachenodes.KeySlot(key, cm.NumSlots()))
	case cl.mc.MapFresh() && c.w.now-since >= cachenodes.FreshFor+freshSlack:
		c.fail(ruleTombstones, 0, "%s sent a delete of %s to %s, slot %d's incoming node or new holder in the stored map since %.3fs, on a map it counts fresh (generation %d) that does not show it",
			cl.name, key, n.id, i, since.Seconds(), cm.Generation())
	}
}

// onWarmRead checks a read a client answered from a warm source: nothing
// copies from one that owes a flush (s7-copy-from-owing), and only a
// client whose map is fresh reads one (s9-fresh-maps), by its own measure
// and by the truth: the answering replica's last successful read of the
// map from Consul, FreshFor ago at most (and the clocks' slack).
func (c *checker) onWarmRead(cl *appClient, o *op, n *mcNode) {
	if !o.warm {
		return
	}
	w := c.w
	if !cl.mc.MapFresh() {
		age, _ := cl.mc.MapAge()
		c.fail(ruleFresh, revert.FreshWarmReads, "%s read %s from %s, the warm source in its map (generation %d), on a map %v old by its clock: not fresh",
			cl.name, o.key, n.id, o.gen, age)
		return
	}
	if age := w.now - cl.readTruth; age >= cachenodes.FreshFor+freshSlack {
		c.fail(ruleFresh, 0, "%s read %s from %s, the warm source in its map (generation %d), which the replica it came from last read from Consul %v ago: the map's age it was told is wrong",
			cl.name, o.key, n.id, o.gen, age)
		return
	}
	t := c.nodes[n.id]
	m := c.kvMap
	if !t.owe || m == nil || !m.AnyWarming() || m.WarmingOf(n.id) < 0 {
		return
	}
	c.fail(ruleS7CopyOwing, c.owingFix(n.id), "%s read %s from warm source %s (to copy it into the new holder), which owes a flush (decided by %s at %.3fs)",
		cl.name, o.key, n.id, t.oweBy, t.oweSince.Seconds())
}

// onWriteDone checks a client's set or delete that succeeded, made on
// map m (s9-ended-warming): while m has a warming object for the key's
// slot and the client's clock is before its WritesUntil, the write reached
// the warm source, whether its reads had ended or not.
func (c *checker) onWriteDone(cl *appClient, o *op, m *cachenodes.SlotMap) {
	if !o.ok || o.kind == opGet || m == nil || !m.AnyWarming() {
		return
	}
	i := cachenodes.KeySlot(o.key, m.NumSlots())
	ws := m.Warming(i)
	now := hostClock{w: c.w, host: cl.host}.Now()
	if ws == nil || !now.Before(ws.WritesUntil()) || o.reached[ws.Addr] {
		return
	}
	fix, phase := revert.WarmWriteDurable, "while it is read"
	if !now.Before(ws.ReadsUntil()) {
		fix, phase = revert.EndedWarmingGrace, "after its reads ended"
	}
	c.fail(ruleEndedWarming, fix, "%s's %s of %s succeeded at %s by its clock without reaching %s, slot %d's warm source in its map (generation %d), %s: the writes go there until %s",
		cl.name, o.kind, o.key, clockWord(now), ws.NodeID, i, m.Generation(), phase, clockWord(ws.WritesUntil()))
}

// checkWarmingsKept checks the warmings that the change from prev to m
// removes (s9-ended-warming): each stays in the stored map until its
// WritesUntil (its reads' end, ended_at or until, plus WarmWriteGrace),
// less the clocks' 1 s, never sooner.
func (c *checker) checkWarmingsKept(prev, m *cachenodes.SlotMap) {
	if !prev.AnyWarming() {
		return
	}
	now := c.w.start.Add(c.w.now)
	for i := range prev.NumSlots() {
		was := prev.Warming(i)
		if was == nil {
			continue
		}
		if ws := m.Warming(i); ws != nil && ws.NodeID == was.NodeID && ws.Addr == was.Addr && ws.Until.Equal(was.Until) {
			continue
		}
		if now.Before(was.WritesUntil().Add(-2 * maxSkew)) {
			c.fail(ruleEndedWarming, revert.EndedWarmingGrace, "slot %d's warming from %s (reads until %s) was removed from the stored map at %s, before its writes' end %s less the clocks' %v",
				i, was.NodeID, clockWord(was.ReadsUntil()), clockWord(now), clockWord(was.WritesUntil()), 2*maxSkew)
			return
		}
	}
}

// clockWord is an instant of a host's clock for a message.
func clockWord(t time.Time) string { return t.UTC().Format("15:04:05.000") }
