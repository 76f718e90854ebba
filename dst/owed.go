package dst

import (
	"strings"

	"github.com/mcrib/mcrib/internal/revert"
	"github.com/mcrib/mcrib/mcribapi"
)

// checkOwed follows the pool's decisions that nodes owe a flush and
// asserts none is forgotten.
func (c *checker) checkOwed() {
	w := c.w
	l := c.leader()
	m := c.kvMap
	if m == nil {
		return
	}
	holds := func(id string) bool { return m.SlotOf(id) >= 0 || (m.AnyWarming() && m.WarmingOf(id) >= 0) }
	var st mcribapi.Status
	if l != nil {
		st = c.status[l]
	}
	pendingNow := map[string]bool{}
	for _, ns := range st.Nodes {
		if ns.FlushPending {
			pendingNow[ns.ID] = true
		}
	}
	for id, on := range w.plant.pending {
		pendingNow[id] = on // a planted lie about the leader's status
	}
	// The pool's decision is the stored entry; with the old paths (owed
	// flushes in each process's memory, reverted for the self-test) it is
	// what the leader of the moment shows pending.
	memoryDecides := w.cfg.Reverted.Reverted(revert.FollowerFlush) || w.cfg.Reverted.Reverted(revert.ForgottenFlush)
	for _, t := range c.order {
		id := t.n.id
		if !holds(id) {
			continue
		}
		// A pending that began with the node's last flush or restart is no
		// decision: the node is empty (a stale mark its next probe clears).
		// Nor does a node owe one that was emptied (restarted, or flushed
		// with the answer lost) during the episode it returns from.
		if !t.owe && (c.storedOwes(t) || (memoryDecides && pendingNow[id] && !c.storedForAnother(t) && c.pending[l][id] >= l.lead.termStart && c.pending[l][id] > t.cleanAt &&
			t.cleanAt < lastSpanStart(t.disturbed, probeInterval))) {
			t.owe, t.oweSince, t.oweBy, t.oweProc, t.forgotSince = true, w.now, "the pool", l, 0
			t.oweFrozen = w.consul.kv[poolKeys.Freeze()] != nil
			if l != nil {
				t.oweBy = l.name()
			}
			w.tr.add(w.now, "the pool decides that %s owes a flush (%s)", id, t.oweBy)
		}
		if !t.owe {
			continue
		}
		if l == nil || w.now-l.lead.termStart < 2*probeInterval+2*maxSkew || pendingNow[id] {
			t.forgotSince = 0
			continue
		}
		if t.forgotSince == 0 {
			t.forgotSince = w.now
			continue
		}
		if w.now-t.forgotSince >= 2*probeInterval {
			var how []string
			if t.oweFrozen {
				how = append(how, "an operator's freeze held the flush back")
			}
			if t.oweProc != nil && !t.oweProc.alive {
				how = append(how, t.oweProc.name()+" has crashed since")
			}
			if len(how) > 0 {
				how[0] = " (" + how[0]
				how[len(how)-1] += ")"
			}
			fix, still := c.forgottenFix(t, l), "still holds its slot"
			if m.SlotOf(id) < 0 {
				// It gave its slot away warm: the warm move off an owing
				// holder drops the owed flush (the bug of invariant 9).
				fix, still = revert.WarmFromOwing, "gave its slot away warm and warms it"
			}
			c.fail(ruleInv2Forgotten, fix, "%s owes a flush (decided by %s at %.3fs%s) and %s unflushed, but the leader %s has shown it not pending since %.3fs: the decision is forgotten",
				id, t.oweBy, t.oweSince.Seconds(), strings.Join(how, "; "), still, l.name(), t.forgotSince.Seconds())
			return
		}
	}
}
