package controlloop

import (
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
)

// The loop's tests name nodes as slotplan's do, "<zone letter><number>":
// node "b7" lives in zone "az-b".

const assignPool = "default"

// assignPrevAt is the updated_at of every map slotMapOf builds; assignNow
// is a moment an hour later.
var (
	assignPrevAt = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	assignNow    = time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
)

// cacheNode returns the node id as Consul lists it by default.
func cacheNode(id string) cachenodes.Node {
	return cachenodes.Node{ID: id, Addr: id + ".cache:11211", AZ: "az-" + id[:1]}
}

// slotMapOf builds a map of generation gen from slot holder IDs ("" for a
// vacant slot) and spare IDs, each node as cacheNode has it.
func slotMapOf(t testing.TB, gen uint64, slots, spares []string) *cachenodes.SlotMap {
	t.Helper()
	nodes := func(ids []string) []cachenodes.Node {
		out := make([]cachenodes.Node, len(ids))
		for i, id := range ids {
			if id != "" {
				out[i] = cacheNode(id)
			}
		}
		return out
	}
	m, err := cachenodes.NewSlotMap(cachenodes.SlotMapSpec{Pool: assignPool, Generation: gen, UpdatedAt: assignPrevAt, Slots: nodes(slots), Spares: nodes(spares)})
	if err != nil {
		t.Fatalf("building a slot map: %v", err)
	}
	return m
}

// slotIDs returns the node ID of every slot of m, "" for a vacant slot.
func slotIDs(m *cachenodes.SlotMap) []string { return nodeIDs(m.Slots()) }

// nodeIDs returns the IDs of nodes in order.
func nodeIDs(nodes []cachenodes.Node) []string {
	ids := make([]string, len(nodes))
	for i, n := range nodes {
		ids[i] = n.ID
	}
	return ids
}
