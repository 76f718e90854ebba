package slotplan

import "github.com/mcrib/mcrib/cachenodes"

// distinctAddrs drops the candidates whose address a slot holder, a warm
// source or an incoming node (announced, at one of the addresses
// announcedAt) already serves (as the previous map or Consul now has it):
// the same memcached registered under another service ID, or twice, is no
// ready spare (section 7); placing and flushing it would wipe a warm node
// and give it two slots. It also drops all but the lowest ID of
// candidates that share an address, so no two slots ever hold the same
// address.
func distinctAddrs(in Input, idx *assignIndex, announcedAt []string, cands []int) []int {
	used := make(map[string]bool, idx.holders+len(cands)+len(announcedAt))
	for _, a := range announcedAt {
		used[a] = true
	}
	for i := range in.NumSlots {
		if n := idx.prevSlot(i); !n.IsZero() {
			used[n.Addr] = true
			if v, ok := idx.holderView(in, i); ok && v.Listed && v.Addr != "" {
				used[v.Addr] = true // the address Build will refresh it to
			}
		}
	}
	if in.Prev != nil && in.Prev.AnyWarming() {
		listed := make(map[string]string, len(in.Nodes)-idx.holders)
		for j := range in.Nodes {
			if idx.slotOf[j] < 0 && in.Nodes[j].Listed {
				listed[in.Nodes[j].ID] = in.Nodes[j].Addr
			}
		}
		for i := range in.NumSlots {
			if w := in.Prev.Warming(i); w != nil {
				used[w.Addr] = true
				if a := listed[w.NodeID]; a != "" {
					used[a] = true
				}
			}
		}
	}
	out := cands[:0]
	for _, j := range cands {
		if a := in.Nodes[j].Addr; !used[a] {
			used[a] = true
			out = append(out, j)
		}
	}
	return out
}

// keepAddrsDistinct undoes an address refresh that would make two slots
// hold the same address (a holder re-registered at another holder's
// address): that slot keeps the address of the previous map until Consul
// settles, rather than the pass failing validation again and again.
func keepAddrsDistinct(slots []cachenodes.Node, idx *assignIndex) {
	seen := make(map[string]int, len(slots))
	for i, n := range slots {
		if n.Addr == "" {
			continue
		}
		if j, dup := seen[n.Addr]; dup {
			for _, k := range []int{i, j} {
				if p := idx.prevSlot(k); p.ID == slots[k].ID && p.Addr != slots[k].Addr {
					slots[k] = p
				}
			}
		}
		seen[slots[i].Addr] = i
	}
}
