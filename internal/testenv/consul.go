package testenv

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
)

// consulReadyTimeout bounds how long a Consul agent may take to become ready.
// A dev server is usually ready in about a second, but CI machines running
// many test binaries at once can be much slower.
const consulReadyTimeout = 60 * time.Second

// consulProbeTimeout bounds each readiness probe request.
const consulProbeTimeout = 2 * time.Second

// Consul is a Consul dev server (`consul agent -dev`: a single server, state
// in memory only), on free loopback ports or on a host of a test bed: its
// Process handle (Stop, Kill, Pause, Resume, PID, …; Start brings the
// running client agents back too, see restartWithAgents) and its addresses
// and client. Its zero value is not usable; use StartConsul or
// StartConsulOn. Methods are safe for concurrent use, but Stop and Start
// must not race with each other.
type Consul struct {
	*Process
	// HTTPAddr is the HTTP API address, "<ip>:<port>": "127.0.0.1:<port>"
	// from StartConsul.
	HTTPAddr string
	// Client is an API client for HTTPAddr.
	Client *api.Client
	// SerfLANAddr is the Serf LAN address that client agents join,
	// "<ip>:<port>".
	SerfLANAddr string
	// NodeName is the server's node name in the catalog.
	NodeName string

	nodeID string
	ip     string // the address the server binds
	ports  consulServerPorts
	probe  *api.Client // like Client, with a timeout on every request

	mu     sync.Mutex
	agents []*ConsulAgent // client agents joined to this server, for Start

	// aclToken, when set, enables ACLs (default deny) with it as the
	// management and agent token; Client and the probe send it.
	aclToken string
}

// consulServerPorts are the ports a dev server listens on.
type consulServerPorts struct {
	http, serfLAN, serfWAN, server int
}

// StartConsul starts a Consul dev server bound to 127.0.0.1 on free ports,
// with DNS and gRPC disabled, and waits until it has elected itself leader
// and accepts a KV write. It is stopped when the test ends.
func StartConsul(t testing.TB) *Consul {
	t.Helper()
	return startConsul(t, nil)
}

// StartConsulOn starts a Consul dev server like StartConsul, on host h of a
// test bed: bound to h.Addr (which it advertises), on Consul's default
// ports (HTTP 8500, Serf LAN 8301) when h is a host of its own, or on free
// ports on Bed.Root. Its node name is h.Name. A host holds one Consul agent
// at most.
func StartConsulOn(t testing.TB, h *Host) *Consul {
	t.Helper()
	return startConsul(t, h)
}

// startConsul starts a dev server on h, or on loopback when h is nil.
func startConsul(t testing.TB, h *Host) *Consul {
	t.Helper()
	return startConsulWith(t, h, "")
}

// startConsulWith starts a dev server on h (loopback when nil), with ACLs
// enabled and aclToken as the management token when it is not "".
func startConsulWith(t testing.TB, h *Host, aclToken string) *Consul {
	t.Helper()
	c := &Consul{
		aclToken: aclToken,
		nodeID:   newUUID(t),
		NodeName: "consul-server",
		ip:       "127.0.0.1",
	}
	name := "consul server"
	if h != nil {
		c.NodeName, c.ip = h.Name, h.Addr
		name += " on " + h.Name
	}
	c.Process = newProcess(t, name, ConsulBinary(t))
	if h != nil {
		c.prefix = h.execPrefix()
	}
	c.ready, c.readyTimeout, c.readyInterval = c.leads, consulReadyTimeout, 50*time.Millisecond
	c.startAgain = c.restartWithAgents
	var err error
	for attempt := 0; attempt < startAttempts(h); attempt++ {
		var p []int
		p, err = consulPorts(h, c.ip, 4)
		if err != nil {
			t.Fatalf("testenv: finding ports for consul: %v", err)
		}
		c.ports = consulServerPorts{http: p[0], serfLAN: p[1], serfWAN: p[2], server: p[3]}
		c.HTTPAddr = net.JoinHostPort(c.ip, strconv.Itoa(c.ports.http))
		c.SerfLANAddr = net.JoinHostPort(c.ip, strconv.Itoa(c.ports.serfLAN))
		c.Client = newAPIClient(t, c.HTTPAddr, 0)
		c.probe = newAPIClient(t, c.HTTPAddr, consulProbeTimeout)
		if aclToken != "" {
			c.Client.AddHeader("X-Consul-Token", aclToken)
			c.probe.AddHeader("X-Consul-Token", aclToken)
		}
		c.setArgs(c.argv()...)
		if err = c.launch(); err == nil {
			return c
		}
		if !errors.Is(err, errExited) {
			break
		}
		// Most likely a port was taken between choosing and binding: retry.
	}
	t.Fatalf("testenv: starting consul: %v\n%s", err, c.tail(30))
	return nil
}

// argv returns the server's arguments, on c.ports.
func (c *Consul) argv() []string {
	return []string{
		"agent", "-dev",
		"-bind", c.ip,
		"-client", c.ip,
		"-http-port", strconv.Itoa(c.ports.http),
		"-dns-port", "-1",
		"-grpc-port", "-1",
		"-serf-lan-port", strconv.Itoa(c.ports.serfLAN),
		"-serf-wan-port", strconv.Itoa(c.ports.serfWAN),
		"-server-port", strconv.Itoa(c.ports.server),
		"-node", c.NodeName,
		// A fixed node ID keeps the server the same member across restarts,
		// so client agents do not see a name conflict.
		"-node-id", c.nodeID,
		"-log-level", consulLogLevel(),
		"-hcl", "disable_update_check = true",
		"-hcl", c.aclHCL(),
	}
}

// leads reports whether the server has a leader and accepts KV writes.
func (c *Consul) leads() bool {
	leader, err := c.probe.Status().Leader()
	if err != nil || leader == "" {
		return false
	}
	// Leave no key behind: tests may list the whole KV store.
	const key = "testenv-ready"
	if _, err := c.probe.KV().Put(&api.KVPair{Key: key, Value: []byte("1")}, nil); err != nil {
		return false
	}
	_, err = c.probe.KV().Delete(key, nil)
	return err == nil
}

// restartWithAgents is the server's Start: it starts the server again on the same
// ports after Stop and waits until it is ready. Being a dev server, it
// starts empty: KV, catalog and sessions are gone.
//
// Client agents started from c that are running come back too, and Start
// waits for them: first until each has noticed that the server failed (Serf
// takes about 6s from Stop; time spent after Stop counts), so that the
// server's return is a join that makes the agent resync its state at once;
// then it asks each agent to join again (Serf alone would retry only after
// 30s or more), and waits until each is an alive member and every service
// registered on it is back in the catalog. Without the first wait, an agent
// whose sync failed during the outage would be back only after 15s to 30s.
func (c *Consul) restartWithAgents(t testing.TB) {
	t.Helper()
	agents := c.runningAgents()
	for _, a := range agents {
		if err := a.waitReady(consulReadyTimeout, 50*time.Millisecond, a.serverDown); err != nil {
			t.Fatalf("testenv: waiting for client agent %s to notice the server stopped: %v", a.NodeName, err)
		}
	}
	if err := c.launch(); err != nil {
		t.Fatalf("testenv: restarting consul server: %v\n%s", err, c.tail(30))
	}
	for _, a := range agents {
		if err := c.probe.Agent().Join(a.SerfLANAddr, false); err != nil {
			t.Fatalf("testenv: rejoining client agent %s to the restarted server: %v", a.NodeName, err)
		}
	}
	for _, a := range agents {
		err := a.waitReady(consulReadyTimeout, 50*time.Millisecond, func() bool {
			return a.joined() && a.servicesSynced()
		})
		if err != nil {
			t.Fatalf("testenv: client agent %s after the server restart: %v\n%s", a.NodeName, err, a.tail(30))
		}
	}
}

// runningAgents returns the client agents started from c that are running.
func (c *Consul) runningAgents() []*ConsulAgent {
	c.mu.Lock()
	defer c.mu.Unlock()
	var running []*ConsulAgent
	for _, a := range c.agents {
		if !a.Exited() {
			running = append(running, a)
		}
	}
	return running
}

// consulPorts returns n ports for a Consul agent bound to ip on h, in the
// order HTTP, Serf LAN, Serf WAN, server RPC: Consul's defaults on a host of
// a test bed, whose namespace has all its ports free, else free ports.
func consulPorts(h *Host, ip string, n int) ([]int, error) {
	if h != nil && h.NetNS != "" {
		return []int{8500, 8301, 8302, 8300}[:n], nil
	}
	return freePorts(ip, n, true)
}

// startAttempts returns how often a process on h is started before giving
// up when it exits at once: three times on free ports, which another
// process may take between choice and bind; once on a host of a test bed,
// whose fixed ports nobody else takes.
func startAttempts(h *Host) int {
	if h != nil && h.NetNS != "" {
		return 1
	}
	return 3
}

// NewClient returns another client of the server, like Client (with its
// token, when the server has ACLs) but with a connection pool of its own,
// as a separate process would have; it is closed when the test ends.
func (c *Consul) NewClient(t testing.TB) *api.Client {
	t.Helper()
	client := newAPIClient(t, c.HTTPAddr, 0)
	if c.aclToken != "" {
		client.AddHeader("X-Consul-Token", c.aclToken)
	}
	return client
}

// newAPIClient returns a Consul API client for addr that ignores the CONSUL_*
// environment (no token, no TLS), with its own connection pool, closed when
// the test ends. A non-zero timeout bounds every request (do not use such a
// client for blocking queries).
func newAPIClient(t testing.TB, addr string, timeout time.Duration) *api.Client {
	t.Helper()
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.Proxy = nil
	client, err := api.NewClient(&api.Config{
		Address:    addr,
		Scheme:     "http",
		Transport:  transport,
		HttpClient: &http.Client{Transport: transport, Timeout: timeout},
	})
	if err != nil {
		t.Fatalf("testenv: creating consul client for %s: %v", addr, err)
	}
	t.Cleanup(transport.CloseIdleConnections)
	return client
}

// consulLogLevel returns $MCRIB_TESTENV_CONSUL_LOG_LEVEL, or "warn" when it
// is unset. Set it to "debug" to see what the agents do in the logs that a
// failing test prints.
func consulLogLevel() string {
	if l := os.Getenv("MCRIB_TESTENV_CONSUL_LOG_LEVEL"); l != "" {
		return l
	}
	return "warn"
}

// newUUID returns a random RFC 4122 version 4 UUID.
func newUUID(t testing.TB) string {
	t.Helper()
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("testenv: generating a node ID: %v", err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
