package dst

import (
	"time"

	"github.com/mcrib/mcrib/internal/revert"
)

// ownClean is a flush of a node whose answer reached the process that
// made it: from then on that process knows the node empty, whatever the
// other replicas' votes, which lag their probes, still say of the time
// before.
type ownClean struct {
	at time.Duration
	// placement is set when the node held no slot then (the flush of its
	// placement), unset for the flush of a slot holder.
	placement bool
}

// onFlushAnswered records that p's flush of n was carried out and its
// answer reached p.
func (c *checker) onFlushAnswered(n *mcNode, p *replicaProc) {
	t := c.nodes[n.id]
	if t == nil || p == nil {
		return
	}
	holder := false
	if m := p.loop.SlotMap(); m != nil {
		for _, id := range n.ids() {
			holder = holder || m.SlotOf(id) >= 0
		}
	}
	if t.known == nil {
		t.known = map[*replicaProc]ownClean{}
	}
	t.known[p] = ownClean{at: c.w.now, placement: !holder}
}

// checkVotesLag checks p's flush of slot holder t once more, from p's own
// last flush of it that p saw answered (when that is later than from, the
// clean the rule counts from otherwise): p knew the node empty then, so a
// disturbance that ended before it is no reason for this flush. Such a
// flush follows from the other replicas' votes, which lag their probes
// and still report the episode before the clean: the bug VotesLagFlush
// (p's own flush of the slot holder) or VotesLagPlacement (the flush of
// its placement) fixes. thr is the disturbance a decision needs.
func (c *checker) checkVotesLag(t *nodeTruth, p *replicaProc, from, thr time.Duration) {
	k, ok := t.known[p]
	if !ok || k.at <= from || c.decidedBefore(t, k.at) {
		return
	}
	longest := longestIn(t.disturbed, k.at, c.w.now, probeInterval)
	if longest >= thr {
		return
	}
	fix, what := revert.VotesLagFlush, "flushed it"
	if k.placement {
		fix, what = revert.VotesLagPlacement, "flushed it for its placement"
	}
	c.fail(ruleInv2Needless, fix,
		"%s flushed %s, whose memcached answered throughout since %s itself %s at %.3fs (its longest disturbance since %v, under the %v a decision needs): an episode the votes report from before that flush",
		p.name(), t.n.id, p.name(), what, k.at.Seconds(), longest, thr)
}

// decidedBefore reports whether the flushes document holds an entry for
// t's memcached that the checker saw stored before at: a flush of it then
// carried that decision out without its write (removing the entry)
// getting through, so the leader carries it out again.
func (c *checker) decidedBefore(t *nodeTruth, at time.Duration) bool {
	for _, id := range t.n.ids() {
		if _, ok := c.storedEntry(id); ok && c.flushFirst[id] <= at {
			return true
		}
	}
	return false
}
