package dst

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/revert"
)

// checkKV checks a new version of the stored slot map against the last.
func (c *checker) checkKV() {
	w := c.w
	e := w.consul.kv[poolKeys.SlotMap()]
	if e == nil || e.modifyIndex == c.kvIndex {
		return
	}
	c.kvIndex = e.modifyIndex
	c.checkTwinsRaw(e.value)
	if c.violation != nil {
		return
	}
	m, err := cachenodes.ParseSlotMap(e.value)
	if err != nil {
		c.fail(ruleSlotMapValid, 0, "the stored slot map does not parse: %v", err)
		return
	}
	prev := c.kvMap
	c.validMap(m)
	if prev != nil {
		c.checkChange(prev, m)
	}
	if c.violation != nil {
		return
	}
	c.kvMap = m
	c.noteIncoming(m)
	c.noteProtected(m)
	for i := range m.NumSlots() {
		if id := m.Slot(i).ID; id != "" {
			c.nodes[id].servedStep = w.step
		}
		if ws := m.Warming(i); ws != nil {
			c.nodes[ws.NodeID].servedStep = w.step
		}
	}
	c.lastDrained = c.drainedZones()
	if prev == nil || prev.Generation() != m.Generation() {
		w.tr.add(w.now, "stored map: generation %d %s", m.Generation(), mapLine(m))
	}
}

// mapLine is a short form of a map for the trace.
func mapLine(m *cachenodes.SlotMap) string {
	s := ""
	for i, n := range m.Slots() {
		if i > 0 {
			s += " "
		}
		if n.ID == "" {
			s += "-"
		} else {
			s += n.ID[3:]
		}
		if ws := m.Warming(i); ws != nil {
			s += "<" + ws.NodeID[3:]
		}
	}
	return "[" + s + "]"
}

// validMap checks one stored map: no memcached twice (by address, under
// whatever ID), each holder at its node's address.
func (c *checker) validMap(m *cachenodes.SlotMap) {
	seen := map[string]string{}
	add := func(id, addr, what string) {
		if prev, dup := seen[addr]; dup {
			// A spare listed at an address the map names already is the
			// same memcached under a second service ID.
			fix := revert.Fix(0)
			if prev == "a spare" || what == "a spare" {
				fix = revert.ListedOnce
			}
			c.fail(ruleSlotMapValid, fix, "generation %d: the memcached at %s is %s and also %s", m.Generation(), addr, prev, what)
		}
		seen[addr] = what
		if n := c.w.nodeByID[id]; n == nil || n.addr != addr {
			c.fail(ruleSlotMapValid, 0, "generation %d: %s names node %s at %s, which is not its address", m.Generation(), what, id, addr)
		}
	}
	rf := m.ResizedFrom()
	for i, n := range m.Slots() {
		if m.IsTwin(i) {
			continue // slot s's memcached again (resize-twin)
		}
		if n.ID != "" {
			add(n.ID, n.Addr, fmt.Sprintf("the holder of slot %d", i))
		}
		ws := m.Warming(i)
		switch {
		case ws == nil:
		case rf > 0 && i >= rf && ws.NodeID == m.Slot(i-rf).ID:
			// A split twin warms from slot s's holder, which keeps slot s.
			if ws.Addr != m.Slot(i-rf).Addr {
				c.fail(ruleSlotMapValid, 0, "generation %d: the warm source %s of slot %d is at %s, slot %d's holder at %s", m.Generation(), ws.NodeID, i, ws.Addr, i-rf, m.Slot(i-rf).Addr)
			}
		default:
			add(ws.NodeID, ws.Addr, fmt.Sprintf("the warm source of slot %d", i))
		}
	}
	for _, n := range m.Spares() {
		add(n.ID, n.Addr, "a spare")
	}
}

// checkChange checks one change of the stored map: generation order,
// placements, replacements, warmings.
func (c *checker) checkChange(prev, m *cachenodes.SlotMap) {
	w := c.w
	split := c.checkResize(prev, m)
	if c.violation != nil {
		return
	}
	// A doubling write changes the slot count: it takes a generation.
	changed := prev.NumSlots() != m.NumSlots()
	for i := range min(prev.NumSlots(), m.NumSlots()) {
		changed = changed || prev.Slot(i).ID != m.Slot(i).ID
	}
	switch {
	case m.Generation() < prev.Generation():
		c.fail(ruleGeneration, 0, "the stored map went back from generation %d to %d", prev.Generation(), m.Generation())
	case changed && m.Generation() != prev.Generation()+1:
		c.fail(ruleGeneration, 0, "a slot changed hands from generation %d to %d (not one more)", prev.Generation(), m.Generation())
	case !changed && m.Generation() != prev.Generation():
		c.fail(ruleGeneration, 0, "the generation rose from %d to %d while no slot changed hands", prev.Generation(), m.Generation())
	}
	if m.Generation() == prev.Generation() && m.Revision() <= prev.Revision() {
		c.fail(ruleRevision, 0, "the stored map was written again at generation %d with revision %d after revision %d: its (generation, revision) did not rise",
			m.Generation(), m.Revision(), prev.Revision())
	}
	c.checkWarmingsKept(prev, m)
	frozen := w.consul.kv[poolKeys.Freeze()] != nil
	autoFrozen := c.massAbsence(prev)
	// The drain document as the pass read it and as it wrote it: a return
	// that ends removes the zone's entry in the write of its last step.
	drained := c.drainedZones()
	for z := range c.lastDrained {
		drained[z] = true
	}
	unannounced := "" // the first placement of the change that was not announced
	for i := range min(prev.NumSlots(), m.NumSlots()) {
		from, to := prev.Slot(i), m.Slot(i)
		if from.ID == to.ID || m.IsTwin(i) {
			// (A twin follows slot s: checked as slot s.)
			continue
		}
		decided := w.now
		if to.ID != "" {
			var why string
			if decided, why = c.announced(m, i, to); why != "" && unannounced == "" {
				unannounced = why
			}
		}
		if split[i] {
			// A split (resize-pace, resize-frozen): a placement, not a
			// replacement.
			if t := c.nodes[to.ID]; t.servedStep > t.cleanStep {
				c.fail(ruleInv2Placement, 0, "%s entered slot %d (a split) without a flush since it last served (last clean at %.3fs)", to.ID, i, t.cleanAt.Seconds())
			}
			continue
		}
		if frozen {
			c.fail(ruleInv3Frozen, 0, "slot %d went from %q to %q while an operator's freeze is stored", i, from.ID, to.ID)
		}
		if to.ID != "" {
			if t := c.nodes[to.ID]; t.servedStep > t.cleanStep {
				c.fail(ruleInv2Placement, 0, "%s entered slot %d without a flush since it last served (last clean at %.3fs)", to.ID, i, t.cleanAt.Seconds())
			}
		}
		if from.ID != "" {
			c.checkReplacement(i, from, to, drained, autoFrozen, decided)
		}
	}
	for i := range m.NumSlots() {
		ws := m.Warming(i)
		was := (*cachenodes.Warming)(nil)
		switch {
		case i < prev.NumSlots():
			was = prev.Warming(i)
		case m.IsTwin(i):
			was = prev.Warming(m.TwinOf(i)) // the doubling copies slot s's
		}
		if ws == nil || (was != nil && ws.NodeID == was.NodeID && ws.Addr == was.Addr && ws.Until.Equal(was.Until)) {
			continue // the same warming (its ended_at may be new)
		}
		if t := c.nodes[ws.NodeID]; t.owe {
			c.fail(ruleInv9WarmOwing, c.owingFix(ws.NodeID), "slot %d moved warm from %s (%s), which owes a flush (decided by %s at %.3fs): its new holder %s copies values it may have missed deletes of",
				i, ws.NodeID, c.moveWhy(t.n, m.Slot(i), drained), t.oweBy, t.oweSince.Seconds(), m.Slot(i).ID)
		}
	}
	if unannounced != "" {
		c.fail(ruleAnnounce, 0, "%s", unannounced)
		return
	}
	for _, t := range c.order {
		if id := t.n.id; t.owe && m.SlotOf(id) < 0 && (!m.AnyWarming() || m.WarmingOf(id) < 0) {
			// It holds no slot and warms none: its next placement flushes
			// it. A leader that has not read this write yet (its answer
			// lost) may still carry the flush out as decided: oweEnded
			// lets it, as after a flush whose answer was lost.
			t.owe, t.oweEnded = false, w.now
			w.tr.add(w.now, "the flush %s owed ends: it holds no slot", id)
		}
	}
}

// owingFix is the fix a copy from owing node id breaks: warm-from-owing
// when the leader knew, before this step, that the node owes its flush;
// forgotten-flush when it had forgotten (the move follows from that).
func (c *checker) owingFix(id string) revert.Fix {
	if l := c.leader(); l != nil {
		if _, knew := c.pending[l][id]; !knew {
			return revert.ForgottenFlush
		}
	}
	return revert.WarmFromOwing
}

// moveWhy says why a slot moved from n to its new holder, as the checker
// sees it, and what held the owed flush back.
func (c *checker) moveWhy(n *mcNode, to cachenodes.Node, drained map[string]bool) string {
	w := c.w
	t := c.nodes[n.id]
	why := "a hold"
	switch s := w.consul.services[n.id]; {
	case drained[n.host.zone] || drained[to.AZ]:
		why = "a drain or return step"
	case t.replaced && w.now-t.replacedAt < 5*time.Second:
		why = "an operator's replace"
	case s != nil && (s.maintenance || c.unseenEnd(t.maintEnded)):
		// (A leader that has not yet read the end of the maintenance
		// still moves it.)
		why = "maintenance"
	}
	if l := c.leader(); l != nil {
		if st := l.loop.Status(); st.AutoFrozen {
			why += "; automatic freeze: " + st.AutoFreezeReason
		}
	}
	if t.flushFailedStep == w.step {
		why += "; its flush failed in this pass"
	}
	return why
}

// unseenEnd reports whether something that ended at end (0: never)
// ended after the leader last read Consul.
func (c *checker) unseenEnd(end time.Duration) bool {
	l := c.leader()
	return end > 0 && (l == nil || end >= l.lastFetch)
}

// massAbsence says, when more than --max-absent-fraction of prev's holders
// (maintenance aside) are absent from Consul and the leader read Consul
// after each of them went absent, what the leader knew: the automatic
// freeze of invariant 3 is then in force. "" otherwise.
func (c *checker) massAbsence(prev *cachenodes.SlotMap) string {
	w := c.w
	l := c.leader()
	if l == nil {
		return ""
	}
	holders, absent := 0, 0
	for i, h := range prev.Slots() {
		if h.ID == "" || prev.IsTwin(i) {
			continue // (a slot and its twin count as one)
		}
		holders++
		s, t := w.consul.services[h.ID], c.nodes[h.ID]
		if s != nil && s.maintenance {
			continue
		}
		if n := len(t.absent); n > 0 && t.absent[n-1].to == 0 && t.absent[n-1].from < l.lastFetch {
			absent++
		}
	}
	if holders == 0 || float64(absent)/float64(holders) <= maxAbsentFraction {
		return ""
	}
	return fmt.Sprintf("%d of its %d holders were absent from Consul, as %s read it at %.3fs", absent, holders, l.name(), l.lastFetch.Seconds())
}

// checkReplacement classifies a slot leaving its holder, a move decided
// (announced) at decided, and checks a replacement against invariants 1
// and 3; the ceiling counts it when it was decided, as the leader does.
func (c *checker) checkReplacement(slot int, from, to cachenodes.Node, drained map[string]bool, autoFrozen string, decided time.Duration) {
	w := c.w
	t := c.nodes[from.ID]
	reason := "hold"
	switch s := w.consul.services[from.ID]; {
	case drained[from.AZ] || (to.ID != "" && drained[to.AZ]):
		// A drain or return step keeps its own pace (taken so whenever a
		// drained zone is concerned: a replace there is not counted).
		return
	case t.replaced && decided-t.replacedAt < 5*time.Second:
		reason = "replace"
	case s != nil && (s.maintenance || c.unseenEnd(t.maintEnded)):
		// (A leader that has not yet read the end of the maintenance
		// still moves it.)
		reason = "maintenance"
	}
	c.replacements = append(c.replacements, decided)
	if autoFrozen != "" {
		c.fail(ruleInv3Frozen, 0, "slot %d was taken from %s (%s) while %s: the automatic freeze holds every replacement back", slot, from.ID, reason, autoFrozen)
	}
	if reason == "hold" {
		thr := max(probeInterval-2*maxSkew, w.hold-2*probeInterval-2*maxSkew)
		if longest := longestIn(t.disturbed, w.now-w.hold, w.now, probeInterval); longest < thr {
			c.fail(ruleInv1Replacement, 0, "slot %d was taken from %s, whose memcached answered throughout the hold (longest disturbance %v)", slot, from.ID, longest)
		}
		if absent := longestIn(t.absent, w.now-w.hold-10*time.Second, w.now, time.Second); absent < w.hold-2*maxSkew-time.Second {
			c.fail(ruleInv3Hold, 0, "slot %d was taken from %s after %v of absence from Consul, under --hold %v", slot, from.ID, absent, w.hold)
		}
	}
	// The most replacements decided within one window around this one's
	// (moves serve in another order than they were announced).
	window := time.Minute - 2*maxSkew
	near := make([]time.Duration, 0, len(c.replacements))
	for _, at := range c.replacements {
		if at-decided < window && decided-at < window {
			near = append(near, at)
		}
	}
	slices.Sort(near)
	n := 0
	for lo, hi := 0, 0; hi < len(near); hi++ {
		for near[hi]-near[lo] >= window {
			lo++
		}
		n = max(n, hi-lo+1)
	}
	if n > maxReplacementsPerMinute {
		fix := revert.Fix(0)
		if c.takeoverSince(decided - window) {
			fix = revert.CeilingAfterTakeover
		}
		var at []string
		for _, t := range c.replacements {
			if t-decided < window && decided-t < window {
				at = append(at, fmt.Sprintf("%.3fs", t.Seconds()))
			}
		}
		c.fail(ruleInv3Ceiling, fix, "%d replacements within %v (at %s; the last: slot %d from %s, %s), above --max-replacements-per-minute %d%s",
			n, window, strings.Join(at, ", "), slot, from.ID, reason, maxReplacementsPerMinute, takeoverWord(fix))
	}
}

func takeoverWord(f revert.Fix) string {
	if f != 0 {
		return "; the leader changed within the window"
	}
	return ""
}

// takeoverSince reports whether the leader changed since t.
func (c *checker) takeoverSince(t time.Duration) bool {
	for _, at := range c.takeovers {
		if at >= t {
			return true
		}
	}
	return false
}

// drainedZones returns the zones the stored drain document drains.
func (c *checker) drainedZones() map[string]bool {
	e := c.w.consul.kv[poolKeys.Drain()]
	out := map[string]bool{}
	if e == nil {
		return out
	}
	var doc struct {
		Zones map[string]json.RawMessage `json:"zones"`
	}
	if json.Unmarshal(e.value, &doc) == nil {
		for z := range doc.Zones {
			out[z] = true
		}
	}
	return out
}
