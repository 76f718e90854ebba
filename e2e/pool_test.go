package e2e

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/mcribapi"
)

// pool is a Consul dev agent with memcached nodes registered in it.
type pool struct {
	consul *testenv.Consul
	nodes  map[string]*testenv.Memcached // by service ID
	ids    []string
}

// newPool starts a Consul dev agent and n memcached registered on it as
// mc-01 … with az a, b, c in turn.
func newPool(t *testing.T, n int) *pool {
	t.Helper()
	p := &pool{consul: testenv.StartConsul(t), nodes: map[string]*testenv.Memcached{}}
	for i := range n {
		id := fmt.Sprintf("mc-%02d", i+1)
		m := testenv.StartMemcached(t)
		p.nodes[id] = m
		p.ids = append(p.ids, id)
		p.register(t, p.consul.Client, id)
	}
	return p
}

func (p *pool) register(t *testing.T, c *api.Client, id string) {
	t.Helper()
	az := string(rune('a' + len(id)%3))
	if n, err := strconv.Atoi(id[len(id)-2:]); err == nil {
		az = string(rune('a' + n%3))
	}
	testenv.Register(t, c, p.nodes[id], testenv.Registration{ID: id, Meta: map[string]string{"az": az}})
}

// filled waits until m serves a map with every slot filled and Consul KV
// holds the same, and returns it.
func filled(t *testing.T, p *pool, m *mcrib, slots int) *cachenodes.SlotMap {
	t.Helper()
	var sm *cachenodes.SlotMap
	testenv.Eventually(t, 30*time.Second, fmt.Sprintf("all %d slots filled and stored", slots), func() bool {
		sm = m.slotMap()
		if sm == nil || sm.NumSlots() != slots {
			return false
		}
		for _, n := range sm.Slots() {
			if n.IsZero() {
				return false
			}
		}
		kv := kvSlotMap(t, p.consul.Client, "default")
		return kv != nil && kv.Equal(sm)
	})
	return sm
}

// fill writes count keys through a gomemcache client routed by the slot
// map and returns them.
func fill(t *testing.T, sm *cachenodes.SlotMap, count int) map[string]string {
	t.Helper()
	sel, err := cachenodes.NewSelector(sm)
	if err != nil {
		t.Fatal(err)
	}
	c := memcache.NewFromSelector(sel)
	c.Timeout = 2 * time.Second
	items := map[string]string{}
	for i := range count {
		k, v := fmt.Sprintf("key-%d", i), fmt.Sprintf("value-%d", i)
		if err := c.Set(&memcache.Item{Key: k, Value: []byte(v)}); err != nil {
			t.Fatalf("set %s: %v", k, err)
		}
		items[k] = v
	}
	return items
}

// missing returns how many items are not found through the slot map.
func missing(t *testing.T, sm *cachenodes.SlotMap, items map[string]string) int {
	t.Helper()
	sel, err := cachenodes.NewSelector(sm)
	if err != nil {
		t.Fatal(err)
	}
	c := memcache.NewFromSelector(sel)
	c.Timeout = 2 * time.Second
	n := 0
	for k, v := range items {
		it, err := c.Get(k)
		if err != nil || string(it.Value) != v {
			n++
		}
	}
	return n
}

// flushes returns cmd_flush of every node by ID.
func (p *pool) flushes(t *testing.T) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for id, m := range p.nodes {
		if st, err := stats(t, m.Addr); err == nil {
			out[id] = st.CmdFlush
		}
	}
	return out
}

// nodeStatus finds a node in a status document.
func nodeStatus(st mcribapi.Status, id string) (mcribapi.NodeStatus, bool) {
	for _, n := range st.Nodes {
		if n.ID == id {
			return n, true
		}
	}
	return mcribapi.NodeStatus{}, false
}
