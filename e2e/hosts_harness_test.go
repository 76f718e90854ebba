package e2e

import (
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/mcribapi"
)

// hostsProbeInterval is the --probe-interval of every replica on a bed, as
// the tests across hosts reason in whole probe intervals.
const hostsProbeInterval = time.Second

// hostsOptions describes a pool on a test bed of hosts.
type hostsOptions struct {
	nodes    int      // memcached, mc-01 …, on hosts with their own Consul agent
	replicas int      // mcrib replicas, each on its own host with its own agent
	slots    int      // --slots
	hold     string   // --hold
	flags    []string // further serve flags
	// zones, when above 0, puts the nodes in that many zones a, b, … of
	// nodes/zones each, with IDs that sort by zone (mc-a-1 …, mc-b-1 …);
	// otherwise the nodes are mc-01 … in zones a, b, c in turn.
	zones int
	// perHost, when above 1, puts that many memcached on each host (ports
	// 11211, 11212, …), each registered as its own service instance through
	// the host's agent: nodes i·perHost … i·perHost+perHost−1 share host i+1.
	// With zones, a zone's nodes must fill whole hosts.
	perHost int
}

// hostOf returns the index (from 0) of node i's host and its memcached
// port there.
func (o hostsOptions) hostOf(i int) (host, port int) {
	per := max(1, o.perHost)
	return i / per, 11211 + i%per
}

// nodeIdentity returns the ID and zone of node i (from 0) of a bed.
func (o hostsOptions) nodeIdentity(i int) (id, az string) {
	if o.zones <= 0 {
		return fmt.Sprintf("mc-%02d", i+1), string(rune('a' + i%3))
	}
	per := max(1, o.nodes/o.zones)
	az = string(rune('a' + i/per))
	return fmt.Sprintf("mc-%s-%d", az, i%per+1), az
}

// hostsPool is a pool deployed as in production, on a bed: the Consul
// server on a host of its own, each memcached on a host with its own Consul
// client agent (its service registered there, so its check runs from its
// host; hostsOptions.perHost puts several memcached on a host), and each
// mcrib replica on a host with its own agent, listening on 0.0.0.0:7070
// and talking to that agent. The test binary reaches every
// host from the root namespace.
type hostsPool struct {
	t        *testing.T
	consul   *testenv.Consul
	consulAt *testenv.Host
	nodes    []*hostNode
	byID     map[string]*hostNode
	replicas []*replica
	client   *http.Client
}

// hostNode is one memcached on a host (its own unless hostsOptions.perHost
// is above 1, when it shares the host and its agent with others).
type hostNode struct {
	id    string
	az    string // its zone (service meta az)
	host  *testenv.Host
	agent *testenv.ConsulAgent
	mc    *testenv.Memcached
}

// newHostsPool builds the bed, starts Consul, the memcached hosts (waiting
// until Consul lists every one as passing) and the replicas, and waits
// until every slot is filled and one replica leads.
func newHostsPool(t *testing.T, o hostsOptions) *hostsPool {
	t.Helper()
	bed := testenv.NewBed(t) // first: skips without root
	transport := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 32}
	t.Cleanup(transport.CloseIdleConnections)
	p := &hostsPool{t: t, byID: map[string]*hostNode{},
		client: &http.Client{Transport: transport, Timeout: 2 * time.Second}}
	if o.perHost > 1 && o.zones > 0 && (o.nodes%o.zones != 0 || (o.nodes/o.zones)%o.perHost != 0) {
		t.Fatalf("hostsOptions: %d nodes in %d zones do not fill whole hosts of %d memcached", o.nodes, o.zones, o.perHost)
	}
	p.consulAt = bed.AddHost(t, "consul")
	p.consul = testenv.StartConsulOn(t, p.consulAt)
	var last *hostNode // the previous node, whose host the next may share
	for i := range o.nodes {
		id, az := o.nodeIdentity(i)
		hi, port := o.hostOf(i)
		n := &hostNode{id: id, az: az}
		if last != nil && port > 11211 {
			n.host, n.agent = last.host, last.agent
			n.mc = testenv.StartMemcachedOnPort(t, n.host, port)
		} else {
			n.host = bed.AddHost(t, fmt.Sprintf("mc%d", hi+1))
			n.agent = p.consul.StartClientAgentOn(t, n.host)
			n.mc = testenv.StartMemcachedOn(t, n.host)
		}
		last = n
		testenv.Register(t, n.agent.Client, n.mc, testenv.Registration{
			ID: n.id, Meta: map[string]string{"az": az}})
		p.nodes = append(p.nodes, n)
		p.byID[n.id] = n
	}
	testenv.Eventually(t, 30*time.Second, "every memcached passing in Consul", func() bool {
		entries, _, err := p.consul.Client.Health().Service("memcached", "", true, nil)
		return err == nil && len(entries) == o.nodes
	})
	// A listen address other than loopback needs an operator token
	// (docs/cli.md), as a deployment would have one.
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := range o.replicas {
		r := &replica{name: fmt.Sprintf("r%d", i+1)}
		r.host = bed.AddHost(t, r.name)
		r.agent = p.consul.StartClientAgentOn(t, r.host)
		args := append([]string{
			"--consul", r.agent.HTTPAddr,
			"--pool", "default",
			"--slots", fmt.Sprint(o.slots),
			"--hold", o.hold,
			"--probe-interval", hostsProbeInterval.String(),
			"--token-file", tokenFile,
		}, o.flags...)
		proc := testenv.StartMcrib(t, testenv.McribOptions{
			ProgramOptions: testenv.ProgramOptions{
				Name: "mcrib on " + r.name, Path: mcribBinary(t), Args: args, Host: r.host, LogLines: 100},
			Listen: "0.0.0.0:7070",
			Addr:   r.host.Addr + ":7070",
			NoWait: true, // all start at once; each is awaited below
		})
		r.mcrib = &mcrib{Mcrib: proc, t: t, api: apiClientOver(proc.Addr, p.client)}
		p.replicas = append(p.replicas, r)
	}
	for _, r := range p.replicas {
		r.WaitReady(t, 30*time.Second, func() bool { return r.ready() == http.StatusOK })
	}
	p.filled()
	p.leader(30 * time.Second)
	return p
}

// filled waits until Consul KV holds a slot map with every slot filled and
// every replica serves that same map, and returns it.
func (p *hostsPool) filled() *cachenodes.SlotMap {
	p.t.Helper()
	var sm *cachenodes.SlotMap
	testenv.Eventually(p.t, 30*time.Second, "every slot filled, stored and served by every replica", func() bool {
		sm = kvSlotMap(p.t, p.consul.Client, "default")
		if sm == nil {
			return false
		}
		for _, n := range sm.Slots() {
			if n.IsZero() {
				return false
			}
		}
		for _, r := range p.replicas {
			if got := r.served(); got == nil || !got.Equal(sm) {
				return false
			}
		}
		return true
	})
	return sm
}

// slotMap returns the slot map stored in Consul KV.
func (p *hostsPool) slotMap() *cachenodes.SlotMap {
	p.t.Helper()
	sm := kvSlotMap(p.t, p.consul.Client, "default")
	if sm == nil {
		p.t.Fatalf("no slot map in Consul KV")
	}
	return sm
}

// leader waits until exactly one running replica says it leads and has
// completed a pass since it was first seen leading, and returns it.
func (p *hostsPool) leader(timeout time.Duration) *replica {
	p.t.Helper()
	var found *replica
	var since time.Time
	testenv.Eventually(p.t, timeout, "exactly one replica leading, with a pass completed as leader", func() bool {
		var leaders []*replica
		var st mcribapi.Status
		for _, r := range p.live() {
			if s, err := r.api.status(); err == nil && s.Leader {
				leaders, st = append(leaders, r), s
			}
		}
		if len(leaders) != 1 {
			found = nil
			return false
		}
		if found != leaders[0] {
			found, since = leaders[0], time.Now()
		}
		return reconciledAfter(st, since)
	})
	return found
}

// rejoin has the Consul server join the agent's Serf member again, as
// `consul join` would. The dev server's fast gossip declares a host failed
// within a second or two of losing it, and Serf then reconnects a failed
// member only every 30 s: until then the host's agent knows no server and
// the sessions on it are refused ("serfHealth is in critical state"). The
// tests measure mcrib after a fault, not that timer.
func (p *hostsPool) rejoin(a *testenv.ConsulAgent) {
	p.t.Helper()
	testenv.Eventually(p.t, 10*time.Second, "the Consul server joining "+a.NodeName+" again", func() bool {
		return p.consul.Client.Agent().Join(a.SerfLANAddr, false) == nil
	})
}

// live returns the replicas whose process runs.
func (p *hostsPool) live() []*replica {
	var out []*replica
	for _, r := range p.replicas {
		if !r.Exited() {
			out = append(out, r)
		}
	}
	return out
}

// followers returns the running replicas other than leader.
func (p *hostsPool) followers(leader *replica) []*replica {
	var out []*replica
	for _, r := range p.live() {
		if r != leader {
			out = append(out, r)
		}
	}
	return out
}

// flushes returns cmd_flush of the given nodes (every node when none is
// given), read from the root namespace; a node that does not answer fails
// the test.
func (p *hostsPool) flushes(ids ...string) map[string]uint64 {
	p.t.Helper()
	if len(ids) == 0 {
		for _, n := range p.nodes {
			ids = append(ids, n.id)
		}
	}
	out := map[string]uint64{}
	for _, id := range ids {
		out[id] = mustStats(p.t, p.byID[id].mc.Addr).CmdFlush
	}
	return out
}

// flushesRose returns a description of every node whose cmd_flush differs
// from before, or "".
func (p *hostsPool) flushesRose(before map[string]uint64) string {
	p.t.Helper()
	var rose []string
	for id, n := range p.flushes(slices.Collect(maps.Keys(before))...) {
		if n != before[id] {
			rose = append(rose, fmt.Sprintf("%s cmd_flush %d → %d", id, before[id], n))
		}
	}
	return strings.Join(rose, ", ")
}

// sameMap returns a description of how the slot map in Consul KV differs
// from want (other nodes or generation), or "".
func (p *hostsPool) sameMap(want *cachenodes.SlotMap) string {
	got := kvSlotMap(p.t, p.consul.Client, "default")
	if got == nil {
		return "no slot map in Consul KV"
	}
	if !got.SameSlots(want) || got.Generation() != want.Generation() {
		return fmt.Sprintf("the slot map changed: generation %d %v, was %d %v", got.Generation(), got.Slots(), want.Generation(), want.Slots())
	}
	return ""
}

// settle waits until r shows every node reachable, every slot holder
// serving with no flush pending and no automatic freeze, and has completed
// a pass after it first showed that: the replica has seen the end of a
// fault and acted on it.
func (p *hostsPool) settle(r *replica, timeout time.Duration) {
	p.t.Helper()
	var seen time.Time
	why := "no status yet"
	ok := within(timeout, func() bool {
		st, err := r.api.status()
		if err != nil {
			why, seen = err.Error(), time.Time{}
			return false
		}
		for _, n := range p.nodes {
			ns, listed := nodeStatus(st, n.id)
			if !listed || !ns.Reachable || ns.FlushPending || (ns.Slot != nil && ns.State != mcribapi.NodeServing) {
				why, seen = fmt.Sprintf("node %+v", ns), time.Time{}
				if !listed {
					why = n.id + " not in the status"
				}
				return false
			}
		}
		if st.AutoFrozen {
			why, seen = "auto_frozen: "+st.AutoFreezeReason, time.Time{}
			return false
		}
		if seen.IsZero() {
			seen = time.Now()
		}
		why = "no pass completed since every node showed serving"
		return reconciledAfter(st, seen)
	})
	if !ok {
		p.t.Fatalf("%s did not settle within %v: %s", r.name, timeout, why)
	}
}
