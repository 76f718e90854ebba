package testenv

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
)

// serfStatusAlive is serf.StatusAlive, the Status of a live member in
// /v1/agent/members.
const serfStatusAlive = 1

// ConsulAgent is a Consul client agent (not a server) bound to one loopback
// address or to a host of a test bed, joined to a Consul server: its
// Process handle (Stop, Kill, Start, Pause, Resume, PID, …) and its
// addresses and client. Its zero value is not usable; use
// Consul.StartClientAgent or Consul.StartClientAgentOn. Methods are safe
// for concurrent use, but Stop, Kill and Start must not race with each
// other.
//
// The agent runs with leave_on_terminate = true, so Stop makes it leave the
// cluster gracefully: the server deregisters its node at once, and every
// service registered on it vanishes from /v1/health/service and the catalog
// (see removeLeftNode). Kill (SIGKILL) does not leave: the server notices
// the failure through gossip (within about a second on loopback), marks
// the node's serfHealth check critical, and keeps its services listed, not
// passing, until the node is reaped (72h by default); the services' own
// checks keep their last synced status. Start starts it again with the same
// address, ports, node name and data directory, and waits until the server
// lists it as an alive member again. Pause (SIGSTOP) keeps its sockets but
// it neither gossips nor answers its HTTP API until Resume, so the server
// soon marks its node failed.
//
// Consul 1.13 persists services and checks registered through the agent HTTP
// API in its data directory, and reloads them when the agent starts again
// with the same data directory (which Start does). Tests should still
// register again after Start: Register is idempotent.
type ConsulAgent struct {
	*Process
	// IP is the address the agent binds, e.g. "127.0.0.2", or its host's
	// Addr.
	IP string
	// HTTPAddr is the agent's HTTP API address, "<IP>:<port>".
	HTTPAddr string
	// Client is an API client for HTTPAddr; use it to register services on
	// this agent.
	Client *api.Client
	// NodeName is the agent's node name in the catalog.
	NodeName string
	// SerfLANAddr is the agent's Serf LAN address, "<IP>:<port>".
	SerfLANAddr string
	// DataDir is the agent's data directory, kept across Stop and Start.
	DataDir string

	server   *Consul
	httpPort int
	serfPort int
	probe    *api.Client // like Client, with a timeout on every request
}

// StartClientAgent starts a Consul client agent bound to ip (a loopback
// address such as "127.0.0.2") on free ports, with its own data directory,
// joined to c through -retry-join, and waits until the server lists it as an
// alive member and its node is in the catalog. It is killed when the test
// ends.
func (c *Consul) StartClientAgent(t testing.TB, ip string) *ConsulAgent {
	t.Helper()
	if parsed := net.ParseIP(ip); parsed == nil || !parsed.IsLoopback() {
		t.Fatalf("testenv: client agent address %q is not a loopback IP", ip)
	}
	return c.startClientAgent(t, ip, nil)
}

// StartClientAgentOn starts a Consul client agent like StartClientAgent, on
// host h of a test bed: bound to h.Addr, on Consul's default ports (HTTP
// 8500, Serf LAN 8301) when h is a host of its own, or on free ports on
// Bed.Root. Its node name is h.Name. A host holds one Consul agent at most;
// processes on h reach the agent at HTTPAddr.
func (c *Consul) StartClientAgentOn(t testing.TB, h *Host) *ConsulAgent {
	t.Helper()
	return c.startClientAgent(t, h.Addr, h)
}

// startClientAgent starts a client agent bound to ip, on h unless it is nil.
func (c *Consul) startClientAgent(t testing.TB, ip string, h *Host) *ConsulAgent {
	t.Helper()
	a := &ConsulAgent{
		IP:      ip,
		DataDir: t.TempDir(),
		server:  c,
	}
	if h != nil {
		a.NodeName = c.agentName(h.Name)
		a.Process = newProcess(t, "consul agent on "+h.Name, c.bin)
		a.prefix = h.execPrefix()
	} else {
		a.NodeName = c.agentName("agent-" + strings.ReplaceAll(ip, ".", "-"))
		a.Process = newProcess(t, "consul agent "+ip, c.bin)
	}
	a.ready, a.readyTimeout, a.readyInterval = a.joined, consulReadyTimeout, 50*time.Millisecond
	a.afterStop = a.leftCatalog
	var err error
	for attempt := 0; attempt < startAttempts(h); attempt++ {
		var p []int
		p, err = consulPorts(h, ip, 2)
		if err != nil {
			t.Fatalf("testenv: finding ports on %s for a consul agent: %v", ip, err)
		}
		a.httpPort, a.serfPort = p[0], p[1]
		a.HTTPAddr = net.JoinHostPort(ip, strconv.Itoa(a.httpPort))
		a.SerfLANAddr = net.JoinHostPort(ip, strconv.Itoa(a.serfPort))
		a.Client = newAPIClient(t, a.HTTPAddr, 0)
		a.probe = newAPIClient(t, a.HTTPAddr, consulProbeTimeout)
		a.setArgs(a.argv()...)
		if err = a.launch(); err == nil {
			c.mu.Lock()
			c.agents = append(c.agents, a)
			c.mu.Unlock()
			return a
		}
		if !errors.Is(err, errExited) {
			break
		}
		// Most likely a port was taken between choosing and binding: retry.
	}
	t.Fatalf("testenv: starting consul client agent on %s: %v\n%s", ip, err, a.tail(30))
	return nil
}

// agentName returns base, with a suffix when c already has an agent of
// that name.
func (c *Consul) agentName(base string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	name := base
	for n := 2; ; n++ {
		taken := false
		for _, a := range c.agents {
			taken = taken || a.NodeName == name
		}
		if !taken {
			return name
		}
		name = fmt.Sprintf("%s-%d", base, n)
	}
}

// argv returns the agent's arguments.
func (a *ConsulAgent) argv() []string {
	return []string{
		"agent",
		"-data-dir", a.DataDir,
		"-bind", a.IP,
		"-client", a.IP,
		"-http-port", strconv.Itoa(a.httpPort),
		"-dns-port", "-1",
		"-grpc-port", "-1",
		"-serf-lan-port", strconv.Itoa(a.serfPort),
		"-node", a.NodeName,
		"-retry-join", a.server.SerfLANAddr,
		"-retry-interval", "250ms",
		"-log-level", consulLogLevel(),
		"-hcl", "disable_update_check = true",
		"-hcl", "leave_on_terminate = true",
	}
}

// joined reports whether the server lists the agent as alive, the agent can
// reach the leader, and the agent's node is in the catalog.
func (a *ConsulAgent) joined() bool {
	members, err := a.server.probe.Agent().Members(false)
	if err != nil {
		return false
	}
	alive := false
	for _, m := range members {
		if m.Name == a.NodeName && m.Status == serfStatusAlive {
			alive = true
		}
	}
	if !alive {
		return false
	}
	if leader, err := a.probe.Status().Leader(); err != nil || leader == "" {
		return false
	}
	node, _, err := a.server.probe.Catalog().Node(a.NodeName, nil)
	return err == nil && node != nil && node.Node != nil
}

// serverDown reports whether the agent lists its server as not alive (or not
// at all).
func (a *ConsulAgent) serverDown() bool {
	members, err := a.probe.Agent().Members(false)
	if err != nil {
		return false
	}
	for _, m := range members {
		if m.Name == a.server.NodeName {
			return m.Status != serfStatusAlive
		}
	}
	return true
}

// servicesSynced reports whether every service registered on the agent is in
// the server's catalog.
func (a *ConsulAgent) servicesSynced() bool {
	local, err := a.probe.Agent().Services()
	if err != nil {
		return false
	}
	node, _, err := a.server.probe.Catalog().Node(a.NodeName, nil)
	if err != nil || node == nil {
		return false
	}
	for id := range local {
		if _, ok := node.Services[id]; !ok {
			return false
		}
	}
	return true
}

// leftCatalog runs after Stop (SIGTERM): the agent left the cluster
// gracefully first (this takes about 4s), so its node and services are gone
// from the server's catalog and health endpoints when Stop returns (unless
// the server is stopped too).
//
// Consul 1.13 keeps syncing check updates to the servers while it leaves, so
// a check that changes during the leave can register the node again right
// after the server removed it; the leader would only remove that leftover
// node at its next reconcile (up to a minute later). leftCatalog therefore
// deregisters the node from the catalog itself when it is still listed after
// the agent exited, as that reconcile would.
func (a *ConsulAgent) leftCatalog(t testing.TB) {
	t.Helper()
	if a.server.Exited() {
		return // nobody to leave: the node stays as it was in the catalog
	}
	if deregistered, err := a.removeLeftNode(); err != nil {
		t.Fatalf("testenv: removing the left node %s from the catalog: %v", a.NodeName, err)
	} else if deregistered {
		t.Logf("testenv: node %s was still in the catalog after it left; deregistered it", a.NodeName)
	}
}

// removeLeftNode waits a little for the agent's node to leave the catalog,
// and deregisters it when it does not (then reporting true).
func (a *ConsulAgent) removeLeftNode() (bool, error) {
	catalog := a.server.probe.Catalog()
	gone := func() bool {
		node, _, err := catalog.Node(a.NodeName, nil)
		return err == nil && (node == nil || node.Node == nil)
	}
	if Poll(500*time.Millisecond, 20*time.Millisecond, gone) {
		return false, nil
	}
	if _, err := catalog.Deregister(&api.CatalogDeregistration{Node: a.NodeName}, nil); err != nil {
		return true, err
	}
	if !Poll(5*time.Second, 20*time.Millisecond, gone) {
		return true, errNodeStillListed
	}
	return true, nil
}
