package slotplan

import (
	"slices"
	"testing"
)

// TestNoSpareSaysWhy: when no node can take a slot, the refusal says what
// each node without a slot is instead, counted, and what would help (an
// operator reads it in the answer and the events): undraining a zone only
// when one is drained.
func TestNoSpareSaysWhy(t *testing.T) {
	owing := vUp("d1")
	owing.OwesFlush = true
	nodes := []NodeView{vUp("a1"), vUp("b1"), vUnreachable("c1"), vAway("c2"), vMaint("c3"), vNotPresent("c4"), owing, vFlapping("d2"), vFlapping("d3")}
	for _, tc := range []struct {
		name    string
		drained map[string]bool
		want    string
	}{
		{"a zone drained", map[string]bool{"az-b": true},
			"no spare can take slot 0 of node a1: every node holds a slot, is in a drained zone (1 node), does not answer (1 node), " +
				"is absent from Consul or in maintenance (3 nodes), owes a flush (1 node) or is held back by flap damping (2 nodes); " +
				"add a memcached to the service, or undrain a zone"},
		{"no zone drained", nil,
			"no spare can take slot 0 of node a1: every node holds a slot, does not answer (1 node), " +
				"is absent from Consul or in maintenance (3 nodes), owes a flush (1 node) or is held back by flap damping (2 nodes); " +
				"add a memcached to the service"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Pool: assignPool, NumSlots: 1, Prev: slotMapOf(t, 1, []string{"a1"}, nil), Nodes: nodes,
				Budget: 1, Now: assignNow, Replace: "a1", Drained: tc.drained}
			if tc.drained == nil {
				in.Nodes = append(slices.Clone(nodes[:1]), nodes[2:]...)
			}
			if got := Decide(in).Refused; got != tc.want {
				t.Errorf("refused:\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
