package testenv

import (
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
)

// Registration describes how Register puts a memcached into Consul. The zero
// value registers service "memcached" with the ID "" (which Consul replaces
// by the service name), so set at least ID.
type Registration struct {
	// Service is the service name; "" means "memcached".
	Service string
	// ID is the service ID, the cache node's identity in mcrib.
	ID string
	// Tags and Meta are copied to the service as they are.
	Tags []string
	Meta map[string]string
	// CheckInterval is how often Consul runs the TCP check; 0 means 1s,
	// Consul's minimum.
	CheckInterval time.Duration
}

// checkTimeout is the timeout of the TCP check that Register adds.
const checkTimeout = 500 * time.Millisecond

// Register registers m as a service on the agent that c talks to (a client
// agent's Client, or the server's Client): m's address and port, r's
// tags and meta, and one TCP check on m.Addr, passing until its first run.
// Registering the same ID again replaces the service and its checks, so
// Register is idempotent.
func Register(t testing.TB, c *api.Client, m *Memcached, r Registration) {
	t.Helper()
	name := r.Service
	if name == "" {
		name = "memcached"
	}
	interval := r.CheckInterval
	if interval == 0 {
		interval = time.Second
	}
	reg := &api.AgentServiceRegistration{
		ID:      r.ID,
		Name:    name,
		Address: m.IP,
		Port:    m.Port,
		Tags:    r.Tags,
		Meta:    r.Meta,
		Check: &api.AgentServiceCheck{
			Name:     "memcached tcp " + m.Addr,
			TCP:      m.Addr,
			Interval: interval.String(),
			Timeout:  checkTimeout.String(),
			Status:   api.HealthPassing,
		},
	}
	if err := c.Agent().ServiceRegisterOpts(reg, api.ServiceRegisterOpts{ReplaceExistingChecks: true}); err != nil {
		t.Fatalf("testenv: registering service %s (%s) for memcached %s: %v", r.ID, name, m.Addr, err)
	}
}
