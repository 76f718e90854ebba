package dst

import (
	"encoding/json"
	"time"

	"github.com/mcrib/mcrib/internal/revert"
	"github.com/mcrib/mcrib/mcribapi"
)

// onFlush checks a flush as memcached carries it out (invariants 2 and 7).
func (c *checker) onFlush(n *mcNode, p *replicaProc) {
	w := c.w
	t := c.nodes[n.id]
	holder := false
	if m := p.loop.SlotMap(); m != nil {
		for _, id := range n.ids() {
			holder = holder || m.SlotOf(id) >= 0
		}
	}
	kind := "placement"
	if holder {
		kind = "returning"
	}
	w.tr.add(w.now, "%s flushes %s (%s)", p.name(), n.id, kind)
	if l := c.leader(); l != p {
		c.fail(ruleInv7FlushByLeader, 0, "%s flushed %s while it did not hold the leader lock", p.name(), n.id)
	}
	if holder {
		c.checkReturningFlush(t, p)
	}
	t.clean(w)
}

// checkReturningFlush checks the flush of a slot holder: the pool decided
// it, and the node may have missed something.
func (c *checker) checkReturningFlush(t *nodeTruth, p *replicaProc) {
	w := c.w
	since, seen := c.pending[p][t.n.id]
	settle := 2*probeInterval + 2*maxSkew
	switch {
	case c.storedFlush(t), t.owe:
	case t.oweEnded > 0 && w.now-t.oweEnded <= settle:
		// A retry of a decided flush whose answer was lost.
	case seen && since >= p.lead.termStart && since > t.cleanAt:
		// Decided by this leader during its term.
	case !seen && pendingIn(p.loop.Status(), t.n.id):
		// Decided by this leader in this very pass.
	case !seen:
		// A node disturbed long enough to owe a flush, flushed before any
		// decision was stored or shown: the flush in the very pass that
		// decides it.
		thr := max(probeInterval-2*maxSkew, w.flushAfter-2*probeInterval-2*maxSkew)
		fix := revert.Fix(0)
		if longestIn(t.disturbed, t.settledClean(w.now, settle), w.now, probeInterval) >= thr {
			fix = revert.StoredBeforeFlush
		}
		c.fail(ruleInv2Undecided, fix, "%s flushed slot holder %s, which neither the pool nor %s itself had found owing a flush", p.name(), t.n.id, p.name())
		return
	case since < p.lead.termStart:
		c.fail(ruleInv2Undecided, revert.FollowerFlush,
			"%s flushed slot holder %s, a flush the pool never decided: the leader of the moment showed none pending; %s had shown it pending since %.3fs, before its term began at %.3fs (a follower's own decision)",
			p.name(), t.n.id, p.name(), since.Seconds(), p.lead.termStart.Seconds())
		return
	default:
		c.fail(ruleInv2Undecided, revert.FollowerFlush,
			"%s flushed slot holder %s, a flush the pool never decided: %s showed it pending only from %.3fs, when the node was flushed (placed) at %.3fs, a mark of its own older than that flush",
			p.name(), t.n.id, p.name(), since.Seconds(), t.cleanAt.Seconds())
		return
	}
	if e, ok := c.entryOf(t); ok && e.PID == t.n.pid && c.storedForAnother(t) {
		// Decided about an earlier process of a memcached in a container,
		// which kept the pid: a leader that did not see the restart itself
		// cannot tell, and flushes.
		return
	}
	thr := max(probeInterval-2*maxSkew, w.flushAfter-2*probeInterval-2*maxSkew)
	from := t.settledClean(w.now, settle)
	if longest := longestIn(t.disturbed, from, w.now, probeInterval); longest < thr {
		c.fail(ruleInv2Needless, 0,
			"%s flushed %s, whose memcached answered throughout since it was last clean at %.3fs (its longest disturbance %v, under the %v a decision needs)",
			p.name(), t.n.id, from.Seconds(), longest, thr)
		return
	}
	c.checkVotesLag(t, p, from, thr)
}

// pendingIn reports whether st shows node id flush_pending.
func pendingIn(st mcribapi.Status, id string) bool {
	for _, ns := range st.Nodes {
		if ns.ID == id {
			return ns.FlushPending
		}
	}
	return false
}

// storedFlush reports whether the flushes document in KV holds an entry
// for t's memcached.
func (c *checker) storedFlush(t *nodeTruth) bool {
	_, ok := c.entryOf(t)
	return ok
}

// entryOf returns the stored entry of t's memcached, under any service ID
// it is registered with.
func (c *checker) entryOf(t *nodeTruth) (flushEntry, bool) {
	for _, id := range t.n.ids() {
		if e, ok := c.storedEntry(id); ok {
			return e, true
		}
	}
	return flushEntry{}, false
}

// storedOwes reports whether the flushes document holds an entry for
// t's node that binds the memcached running now: one decided on this
// very process (its pid) and not yet carried out (its cmd_flush not
// passed). An entry about a process that has since restarted, or that
// a flush whose answer was lost already carried out, owes nothing: the
// node is empty, and the leader drops the entry when it sees so.
func (c *checker) storedOwes(t *nodeTruth) bool {
	e, ok := c.entryOf(t)
	switch {
	case !ok:
		return false
	case e.PID == 0:
		// Decided from no reading: it binds the memcached that was not
		// emptied since the episode began (since, by a host's clock).
		since := e.Since.Sub(c.w.start) - maxSkew
		return t.cleanAt < min(since, c.flushFirst[e.NodeID])
	}
	return c.bindsRunning(e, t) && e.CmdFlush >= t.n.flushes
}

// bindsRunning reports whether entry e was decided from a reading of the
// memcached process running now on t's node: its pid, and (a memcached in
// a container keeps its pid across a restart) its start as the reading
// showed it, on the decider's clock, no earlier than the process's start
// less the clocks' skew and uptime's whole seconds.
func (c *checker) bindsRunning(e flushEntry, t *nodeTruth) bool {
	if e.PID != t.n.pid {
		return false
	}
	return e.StartedAt.IsZero() || !e.StartedAt.Before(c.w.start.Add(t.n.started-time.Second))
}

// storedForAnother reports whether the flushes document holds an entry for
// t's node decided on another memcached process than the one running now
// (its pid): the leader shows it pending, but it is no decision about this
// process, which started empty since.
func (c *checker) storedForAnother(t *nodeTruth) bool {
	e, ok := c.entryOf(t)
	return ok && e.PID != 0 && !c.bindsRunning(e, t)
}

// flushEntry is what the checker reads of one entry of the stored
// flushes document.
type flushEntry struct {
	NodeID   string    `json:"node_id"`
	CmdFlush uint64    `json:"cmd_flush"`
	PID      int64     `json:"pid"`
	Since    time.Time `json:"since"`
	// StartedAt is when the process of the reading started, by the
	// decider's clock.
	StartedAt time.Time `json:"started_at"`
}

// storedEntry returns the stored flushes document's entry for id.
func (c *checker) storedEntry(id string) (flushEntry, bool) {
	e := c.w.consul.kv[poolKeys.Flushes()]
	if e == nil {
		clear(c.flushFirst)
		return flushEntry{}, false
	}
	if e.modifyIndex != c.flushesIndex {
		c.flushesIndex, c.flushes = e.modifyIndex, map[string]flushEntry{}
		var doc struct {
			Flushes []flushEntry `json:"flushes"`
		}
		if json.Unmarshal(e.value, &doc) == nil {
			for _, f := range doc.Flushes {
				c.flushes[f.NodeID] = f
			}
		}
		for id := range c.flushFirst {
			if _, ok := c.flushes[id]; !ok {
				delete(c.flushFirst, id)
			}
		}
		for id := range c.flushes {
			if _, ok := c.flushFirst[id]; !ok {
				c.flushFirst[id] = c.w.now
			}
		}
	}
	f, ok := c.flushes[id]
	return f, ok
}
