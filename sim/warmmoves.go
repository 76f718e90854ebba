package sim

import (
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/slotplan"
)

// warmSource is a warming slot's old holder as the clients use it: the
// node index (-1: the slot does not warm) and when they stop using it.
type warmSource struct {
	node  int
	until time.Time
}

// warmFor returns the --warm-for mcrib's loop runs with under cfg's
// policy: 0s (every move cold) for mcrib-cold.
func warmFor(cfg Config) time.Duration {
	if cfg.Policy.Cold {
		return 0
	}
	return cfg.WarmFor
}

// convergeRule returns the convergence rule mcrib's loop runs with under
// cfg: --warm-min and --stats-interval when cfg.WarmMin is above 0 (a
// warming ends once its new holder is warm, docs/api.md, "Converged"),
// else nil (a warming lasts its whole --warm-for, as before v5).
func convergeRule(cfg Config) *slotplan.WarmRule {
	if cfg.WarmMin <= 0 {
		return nil
	}
	return &slotplan.WarmRule{WarmMin: min(cfg.WarmMin, warmFor(cfg)), StatsInterval: cfg.StatsInterval}
}

// followWarming takes each slot's warm source from m (the slot map's
// warming object, cachenodes.SlotMap.Warming).
func (p *mcribPolicy) followWarming(m *cachenodes.SlotMap) {
	for s := range p.warm {
		p.warm[s] = warmSource{node: -1}
		if w := m.Warming(s); w != nil {
			if i, ok := p.w.byID[w.NodeID]; ok {
				p.warm[s] = warmSource{node: i, until: w.ReadsUntil()}
			}
		}
	}
}

func (p *mcribPolicy) warming() []warmSource { return p.warm }

// warmGet is the read of a key its slot's new holder missed, as mcrib's
// Go client (mcclient) does it while the slot warms: before until by the
// client's clock, and while the old holder answers, the key is read from
// the old holder, and a hit there is stored into the new holder with add
// (which cannot overwrite: the new holder just missed it). It reports
// whether the old holder had the key.
func (wl *workload) warmGet(slot, holder int, k uint32) bool {
	if slot >= len(wl.warm) {
		return false
	}
	src := wl.warm[slot]
	if src.node < 0 || src.node == holder || !wl.w.clk.Now().Before(src.until) || !wl.w.servesClients(src.node) {
		return false
	}
	old := wl.w.nodes[src.node]
	if !old.cache.get(k) {
		old.misses += wl.weight
		return false
	}
	old.hits += wl.weight
	wl.w.nodes[holder].cache.set(k) // the add
	return true
}

// warmSet sends the cache-aside fill of a key, a set, to its slot's old
// holder too while the slot warms, as the Go client sends every set and
// delete to both.
func (wl *workload) warmSet(slot, holder int, k uint32) {
	if slot >= len(wl.warm) {
		return
	}
	src := wl.warm[slot]
	if src.node < 0 || src.node == holder || !wl.w.clk.Now().Before(src.until) || !wl.w.servesClients(src.node) {
		return
	}
	wl.w.nodes[src.node].cache.set(k)
}
