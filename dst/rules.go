package dst

import (
	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/revert"
)

// The rules the checker asserts, by name. docs/simulation.md ("The
// checker") says what each asserts.
const (
	ruleSlotMapValid      = "slotmap-valid"
	ruleGeneration        = "generation-order"
	ruleClientGeneration  = "client-generation-order"
	ruleInv1Replacement   = "inv1-replaced-while-answering"
	ruleInv2Placement     = "inv2-placement-unflushed"
	ruleInv2Undecided     = "inv2-flush-undecided"
	ruleInv2Forgotten     = "inv2-flush-forgotten"
	ruleInv2Needless      = "inv2-needless-flush"
	ruleInv3Frozen        = "inv3-moved-while-frozen"
	ruleInv3Hold          = "inv3-replaced-before-hold"
	ruleInv3Ceiling       = "inv3-ceiling"
	ruleInv7FlushByLeader = "inv7-flush-by-leader"
	ruleInv9WarmOwing     = "inv9-warm-from-owing"
	ruleS7CopyOwing       = "s7-copy-from-owing"
	ruleStaleRead         = "s7-stale-read"
	ruleAdmissions        = "inv8-admissions"
	ruleShareUnfailed     = "inv8-share-without-failure"
	ruleResizeTwin        = "resize-twin"
	ruleResizeKeys        = "resize-keys"
	ruleResizePace        = "resize-pace"
	ruleResizeFrozen      = "resize-frozen"
	ruleResizeCount       = "resize-count"
	ruleAnnounce          = "s9-announce-then-serve"
	ruleRevision          = "s9-revision-order"
	ruleTombstones        = "s9-tombstones"
	ruleFresh             = "s9-fresh-maps"
	ruleEndedWarming      = "s9-ended-warming"
)

// touch marks p's status as changed by the step under way.
func (w *world) touch(p *replicaProc) {
	if p != nil {
		w.chk.dirty[p] = true
	}
}

// checkReplicas checks each replica's served map and refreshes the status
// of the processes the step drove.
func (c *checker) checkReplicas() {
	w := c.w
	lock := w.consul.kv[poolKeys.Leader()]
	holder := ""
	if lock != nil {
		holder = lock.session
	}
	if holder != c.lockHolder {
		if holder != "" {
			c.takeovers = append(c.takeovers, w.now)
		}
		c.lockHolder = holder
	}
	for _, r := range w.replicas {
		p := r.proc
		if p == nil {
			continue
		}
		if m := p.loop.SlotMap(); m != nil {
			if m.Generation() < c.served[r.id] {
				c.fail(ruleGeneration, 0, "%s serves generation %d after generation %d", p.name(), m.Generation(), c.served[r.id])
			}
			c.served[r.id] = max(c.served[r.id], m.Generation())
		}
		if !c.dirty[p] {
			continue
		}
		c.dirty[p] = false
		st := p.loop.Status()
		c.status[p] = st
		pend := c.pending[p]
		for _, ns := range st.Nodes {
			_, was := pend[ns.ID]
			switch {
			case ns.FlushPending && !was:
				pend[ns.ID] = w.now
			case !ns.FlushPending && was:
				delete(pend, ns.ID)
			}
		}
	}
}

// onClientMap checks what a client took: a map it routes by from now on
// (after, when it is not before) is higher in (generation, revision) than
// every map it took before.
func (c *checker) onClientMap(cl *appClient, before, after *cachenodes.SlotMap, from *replicaProc) {
	if after == nil {
		return
	}
	switch {
	case after.Generation() < cl.gen:
		c.fail(ruleClientGeneration, revert.GenerationOrder, "%s took generation %d from %s after it had taken generation %d", cl.name, after.Generation(), from.name(), cl.gen)
	case before != nil && after != before && !higher(after, cl.gen, cl.rev):
		c.fail(ruleClientGeneration, revert.GenerationOrder, "%s took generation %d revision %d from %s after it had taken generation %d revision %d",
			cl.name, after.Generation(), after.Revision(), from.name(), cl.gen, cl.rev)
	}
	if higher(after, cl.gen, cl.rev) {
		cl.gen, cl.rev = after.Generation(), after.Revision()
	}
}

// higher reports whether m's (generation, revision) is above (gen, rev),
// compared in that order.
func higher(m *cachenodes.SlotMap, gen, rev uint64) bool {
	return m.Generation() > gen || (m.Generation() == gen && m.Revision() > rev)
}

// atEnd checks the whole history once more.
func (c *checker) atEnd() {
	if c.violation != nil {
		return
	}
	if v, ok := c.hist.recheck(); ok {
		c.staleRead(v)
	}
}
