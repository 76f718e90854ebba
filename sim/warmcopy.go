package sim

import "github.com/mcrib/mcrib/cachenodes"

// The leader copies the hot keys (docs/api.md, "The leader copies the hot
// keys"), as the simulator models it when Config.WarmCopyRate is above 0:
// while a slot warms (its warming not ended) and its warm source answers
// mcrib's host, the simulated leader adds into the new holder the warm
// source's keys of that slot, most recently read first, at most
// WarmCopyRate ÷ ItemBytes keys a second per move. The copy's gets at the
// warm source are no application's: they count in no counter. The list of
// keys is taken when the copy starts, as lru_crawler metadump gives it.

// simCopy is one move's copy: its two nodes and the keys still to add.
type simCopy struct {
	source, holder int
	keys           []uint32
}

// copySecond runs one second of the copies of m's warming slots: a copy
// starts with a warming, goes on while it warms, and is forgotten when
// the warming ends or its nodes change.
func (p *mcribPolicy) copySecond(m *cachenodes.SlotMap, cfg Config) {
	if cfg.WarmCopyRate <= 0 || m == nil || !m.AnyWarming() {
		p.copies = nil
		return
	}
	now := p.w.clk.Now()
	perSecond := max(1, int(cfg.WarmCopyRate/int64(cfg.ItemBytes)))
	if p.copies == nil {
		p.copies = map[int]*simCopy{}
	}
	for slot := range m.NumSlots() {
		w := m.Warming(slot)
		src, okA := -1, false
		if w != nil {
			src, okA = p.w.byID[w.NodeID]
		}
		hold, okB := p.w.byID[m.Slot(slot).ID]
		if w == nil || m.IsTwin(slot) || w.Ended() || !now.Before(w.Until) || !okA || !okB {
			delete(p.copies, slot)
			continue
		}
		c := p.copies[slot]
		if c == nil || c.source != src || c.holder != hold {
			n := m.NumSlots()
			c = &simCopy{source: src, holder: hold,
				keys: p.w.nodes[src].cache.recent(func(k uint32) bool { return slotOf(k, n) == slot })}
			p.copies[slot] = c
		}
		if !p.w.observerReaches(src) || !p.w.observerReaches(hold) {
			continue
		}
		b := p.w.nodes[hold].cache
		k := min(perSecond, len(c.keys))
		for _, key := range c.keys[:k] {
			b.add(key)
		}
		c.keys = c.keys[k:]
	}
}
