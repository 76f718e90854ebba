package e2e

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/mcclient"
	"github.com/mcrib/mcrib/mcribapi"
)

// pool is a Consul dev server with memcached nodes registered in it, on
// loopback: the pool of every test that is not on a bed of hosts (those
// have newHostsPool).
type pool struct {
	consul *testenv.Consul
	nodes  map[string]*testenv.Memcached // by service ID
	ids    []string
	zoneOf map[string]string // the zone each node is registered in (service meta az)
	// agents holds each node's own Consul client agent, with
	// poolOptions.agents; nodes are registered through it.
	agents map[string]*testenv.ConsulAgent
}

// poolOptions says what buildPool builds.
type poolOptions struct {
	// nodes is the number of memcached mc-01 …, in the zones that
	// numberedZone gives them.
	nodes int
	// zones and perZone, instead, put perZone memcached in each zone, with
	// IDs that sort by zone: mc-a-1 … mc-a-N, mc-b-1 ….
	zones   []string
	perZone int
	// agents registers each memcached through a Consul client agent of its
	// own, on 127.0.0.2, 127.0.0.3, … (as on a host of its own), rather
	// than through the server's.
	agents bool
	// consul is the server; nil starts a dev server (StartConsul).
	consul *testenv.Consul
}

// newPool starts a Consul dev agent and n memcached registered on it as
// mc-01 … with az a, b, c in turn.
func newPool(t testing.TB, n int) *pool {
	t.Helper()
	return buildPool(t, poolOptions{nodes: n})
}

// newZonedPool starts Consul and perZone memcached in each of zones, with
// IDs that sort by zone (mc-a-1 … mc-a-N, mc-b-1 …).
func newZonedPool(t testing.TB, zones []string, perZone int) *pool {
	t.Helper()
	return buildPool(t, poolOptions{zones: zones, perZone: perZone})
}

// newAgentPool starts Consul and n memcached, mc-01 …, each registered
// through a client agent of its own.
func newAgentPool(t testing.TB, n int) *pool {
	t.Helper()
	return buildPool(t, poolOptions{nodes: n, agents: true})
}

// buildPool starts the pool o describes: the Consul server, then for each
// node its memcached, its agent (with o.agents) and its registration.
func buildPool(t testing.TB, o poolOptions) *pool {
	t.Helper()
	p := &pool{consul: o.consul, nodes: map[string]*testenv.Memcached{}, zoneOf: map[string]string{},
		agents: map[string]*testenv.ConsulAgent{}}
	if p.consul == nil {
		p.consul = testenv.StartConsul(t)
	}
	type node struct{ id, az string }
	var nodes []node
	for i := range o.nodes {
		id := fmt.Sprintf("mc-%02d", i+1)
		nodes = append(nodes, node{id, numberedZone(id)})
	}
	for _, z := range o.zones {
		for i := range o.perZone {
			nodes = append(nodes, node{fmt.Sprintf("mc-%s-%d", z, i+1), z})
		}
	}
	for i, n := range nodes {
		p.nodes[n.id] = testenv.StartMemcached(t)
		p.ids = append(p.ids, n.id)
		p.zoneOf[n.id] = n.az
		if o.agents {
			p.agents[n.id] = p.consul.StartClientAgent(t, fmt.Sprintf("127.0.0.%d", i+2))
		}
		p.register(t, n.id)
	}
	return p
}

// numberedZone is the zone of a node mc-NN of a pool without zones: a, b,
// c for NN mod 3 = 0, 1, 2.
func numberedZone(id string) string {
	az := string(rune('a' + len(id)%3))
	if n, err := strconv.Atoi(id[len(id)-2:]); err == nil {
		az = string(rune('a' + n%3))
	}
	return az
}

// register registers id (again), with its zone, through its own agent or
// else the server's.
func (p *pool) register(t testing.TB, id string) {
	t.Helper()
	az, ok := p.zoneOf[id]
	if !ok {
		az = numberedZone(id)
	}
	c := p.consul.Client
	if a := p.agents[id]; a != nil {
		c = a.Client
	}
	testenv.Register(t, c, p.nodes[id], testenv.Registration{ID: id, Meta: map[string]string{"az": az}})
}

// inZone returns the IDs of zone's nodes.
func (p *pool) inZone(zone string) []string {
	var out []string
	for _, id := range p.ids {
		if p.zoneOf[id] == zone {
			out = append(out, id)
		}
	}
	return out
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

// routedClient returns a gomemcache client routed by sm through
// cachenodes.Selector, as an application without mcclient routes.
func routedClient(t testing.TB, sm *cachenodes.SlotMap) *memcache.Client {
	t.Helper()
	sel, err := cachenodes.NewSelector(sm)
	if err != nil {
		t.Fatal(err)
	}
	c := memcache.NewFromSelector(sel)
	c.Timeout = 2 * time.Second
	return c
}

// fill writes count keys through a gomemcache client routed by the slot
// map and returns them.
func fill(t *testing.T, sm *cachenodes.SlotMap, count int) map[string]string {
	t.Helper()
	c := routedClient(t, sm)
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
	c := routedClient(t, sm)
	n := 0
	for k, v := range items {
		it, err := c.Get(k)
		if err != nil || string(it.Value) != v {
			n++
		}
	}
	return n
}

// missingThroughClient returns how many items the Go client, routed by
// sm, does not read back: while a slot of sm warms, it reads a miss of the
// new holder from the old one, as an application does.
func missingThroughClient(t *testing.T, sm *cachenodes.SlotMap, items map[string]string) int {
	t.Helper()
	c, err := mcclient.New(mcclient.Options{Timeout: clientTimeout})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetSlotMap(sm); err != nil {
		t.Fatal(err)
	}
	n := 0
	for k, v := range items {
		if it, err := c.Get(k); err != nil || string(it.Value) != v {
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
