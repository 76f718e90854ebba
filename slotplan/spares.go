package slotplan

import (
	"fmt"
	"strings"
)

// SpareHelp says what gives the pool a spare again (drained: some zone
// is drained), for the sentences that find none.
func SpareHelp(drained bool) string {
	if drained {
		return "add a memcached to the service, or undrain a zone"
	}
	return "add a memcached to the service"
}

// noSpareWhy says why no node can take a slot: what every node without a
// slot is instead (by the counts of Input's nodes), and what would help.
func noSpareWhy(in Input, idx *assignIndex, warm warmState) string {
	var drained, warming, incoming, down, away, owing, damped int
	for j := range in.Nodes {
		v := &in.Nodes[j]
		switch {
		case idx.slotOf[j] >= 0:
		case warm.sources != nil && warm.sources[v.ID]:
			warming++
		case in.Prev != nil && in.Prev.IncomingOf(v.ID) >= 0:
			incoming++
		case in.Drained[v.AZ]:
			drained++
		case !v.Reachable:
			down++
		case !v.Listed || !v.Present || v.Maintenance:
			away++
		case v.OwesFlush:
			owing++
		case v.Suppressed:
			damped++
		}
	}
	parts := []string{"holds a slot"}
	add := func(n int, what string) {
		switch {
		case n == 1:
			parts = append(parts, what+" (1 node)")
		case n > 1:
			parts = append(parts, fmt.Sprintf("%s (%d nodes)", what, n))
		}
	}
	add(drained, "is in a drained zone")
	add(warming, "is a warm source")
	add(incoming, "is announced to a slot")
	add(down, "does not answer")
	add(away, "is absent from Consul or in maintenance")
	add(owing, "owes a flush")
	add(damped, "is held back by flap damping")
	list := parts[0]
	if len(parts) > 1 {
		list = strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
	}
	help := SpareHelp(len(in.Drained) > 0)
	if warming > 0 {
		help += ", or wait until the warming ends"
	}
	return fmt.Sprintf("every node %s; %s", list, help)
}
