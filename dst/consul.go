package dst

import (
	"fmt"
	"time"

	"github.com/hashicorp/consul/api"
)

// consulHost is the host name of the simulated Consul servers.
const consulHost = "consul"

// Consul's timings as the simulation models them.
const (
	// serfDetect is how long a host's agent must be out of touch with the
	// servers before its node's serfHealth check turns critical.
	serfDetect = 3 * time.Second
	// sessionTTLFactor: Consul invalidates a session not renewed for twice
	// its TTL.
	sessionTTLFactor = 2
	// agentCheckEvery is how often a memcached host's agent runs the
	// service checks of its memcached instances.
	agentCheckEvery = 5 * time.Second
)

// session is one Consul session.
type session struct {
	entry     api.SessionEntry
	lastRenew time.Duration
	ttl       time.Duration
}

// ttlCheck is the TTL check of a replica's leader campaign, registered on
// its host's agent.
type ttlCheck struct {
	id, serviceID, node string
	ttl                 time.Duration
	lastPass            time.Duration
	passing             bool
}

// service is one memcached instance registered on its host's agent.
type service struct {
	id, host string
	port     int
	zone     string
	// listed is false while the agent has not (re)registered it.
	listed bool
	// passing is the last result of the agent's check of it.
	passing bool
	// maintenance is set while an operator put it in maintenance mode.
	maintenance bool
}

// agent is the Consul agent of one host.
type agent struct {
	host string
	up   bool
	// lastContact is when the agent last reached the servers (gossip).
	lastContact time.Duration
	serfOK      bool
}

// consulSim is the simulated Consul: its servers' state (KV with indexes,
// sessions and locks, the catalog and health of the memcached service)
// and the agents of every host. It is changed only on the simulation's
// goroutine.
type consulSim struct {
	w        *world
	index    uint64
	kv       map[string]*kvEntry
	sessions map[string]*session
	// lockDelay holds, per key, until when (simulated) a lock released by
	// an invalidated session may not be acquired again.
	lockDelay map[string]time.Duration
	agents    map[string]*agent
	checks    map[string]*ttlCheck
	services  map[string]*service
	sessionN  int
	// healthIndex is the index of the last change of the service's health.
	healthIndex uint64
	// unavailable is set while the servers have no leader: every request
	// fails with a 500 and changes nothing.
	unavailable int
	// errRate and lostRate are the chances that a request is refused with
	// a plain error, or carried out with its answer lost (the "answer lost
	// after its write committed" fault).
	errRate, lostRate float64
	// mapReads holds, per host, when (simulated) Consul last answered it
	// a read of the slot map, or a write of the pool documents checked
	// against it, successfully and the answer arrived: the ground truth of
	// each replica's X-Mcrib-Map-Age (freshcheck.go).
	mapReads map[string]time.Duration
	// history is the KV store's recent past, for the reads of agents
	// whose server lags (consullag.go).
	history kvHistory
}

func newConsul(w *world) *consulSim {
	return &consulSim{w: w, kv: map[string]*kvEntry{}, sessions: map[string]*session{}, lockDelay: map[string]time.Duration{},
		agents: map[string]*agent{}, checks: map[string]*ttlCheck{}, services: map[string]*service{}, mapReads: map[string]time.Duration{}, index: 10}
}

// bump returns the next raft index.
func (c *consulSim) bump() uint64 { c.index++; return c.index }

// touchHealth records a change of the service's health.
func (c *consulSim) touchHealth() { c.healthIndex = c.bump(); c.w.truth++ }

// addAgent starts the agent of host.
func (c *consulSim) addAgent(host string) {
	c.agents[host] = &agent{host: host, up: true, serfOK: true, lastContact: c.w.now}
}

// tick advances Consul's own clockwork: gossip, TTL checks, session
// invalidation.
func (c *consulSim) tick() {
	now := c.w.now
	c.recordKV()
	for _, h := range sortedKeys(c.agents) {
		a := c.agents[h]
		if a.up && c.w.net.send(h, consulHost, "gossip", "") == delivered {
			a.lastContact = now
		}
		ok := a.up && now-a.lastContact < serfDetect
		if ok != a.serfOK {
			a.serfOK = ok
			c.touchHealth()
			c.w.tr.add(now, "consul: serfHealth of %s %s", h, passingWord(ok))
		}
	}
	for _, id := range sortedKeys(c.checks) {
		ch := c.checks[id]
		if ch.passing && now-ch.lastPass > ch.ttl {
			ch.passing = false
			c.w.tr.add(now, "consul: check %s on %s expired", id, ch.node)
		}
	}
	if c.unavailable > 0 {
		// Without a leader the servers invalidate nothing; the next leader
		// starts every session's TTL afresh.
		for _, s := range c.sessions {
			s.lastRenew = now
		}
		return
	}
	for _, id := range sortedKeys(c.sessions) {
		s := c.sessions[id]
		if why := c.invalid(s); why != "" {
			c.destroy(id, why)
		}
	}
}

// invalid says why session s no longer holds ("" while it does).
func (c *consulSim) invalid(s *session) string {
	if s.ttl > 0 && c.w.now-s.lastRenew > sessionTTLFactor*s.ttl {
		return "its TTL ran out"
	}
	for _, nc := range s.entry.NodeChecks {
		if nc == "serfHealth" {
			if a := c.agents[s.entry.Node]; a == nil || !a.serfOK {
				return "serfHealth of " + s.entry.Node + " is critical"
			}
		}
	}
	for _, sc := range s.entry.ServiceChecks {
		if ch := c.checks[sc.ID]; ch == nil || !ch.passing {
			return "check " + sc.ID + " is critical"
		}
	}
	return ""
}

// destroy invalidates session id: its locks are released (behaviour
// release) and held back for its lock delay, or deleted (behaviour delete).
func (c *consulSim) destroy(id, why string) {
	s := c.sessions[id]
	if s == nil {
		return
	}
	delete(c.sessions, id)
	idx := c.bump()
	for _, key := range sortedKeys(c.kv) {
		e := c.kv[key]
		if e.session != id {
			continue
		}
		if s.entry.Behavior == api.SessionBehaviorDelete {
			delete(c.kv, key)
			continue
		}
		e.session, e.modifyIndex = "", idx
		if s.entry.LockDelay > 0 {
			c.lockDelay[key] = c.w.now + s.entry.LockDelay
		}
	}
	c.w.tr.add(c.w.now, "consul: session %s of %s invalidated: %s", id, s.entry.Node, why)
}

// createSession creates a session for node, checking its checks as Consul
// does.
func (c *consulSim) createSession(node string, e api.SessionEntry) (string, error) {
	if e.Node == "" {
		e.Node = node
	}
	for _, nc := range e.NodeChecks {
		if nc == "serfHealth" {
			if a := c.agents[e.Node]; a == nil || !a.serfOK {
				//lint:ignore ST1005 the simulated agent answers in Consul's own words
				return "", fmt.Errorf("Check 'serfHealth' is in critical state")
			}
		}
	}
	for _, sc := range e.ServiceChecks {
		ch := c.checks[sc.ID]
		if ch == nil || ch.node != e.Node {
			//lint:ignore ST1005 the simulated agent answers in Consul's own words
			return "", fmt.Errorf("Missing check '%s' registration", sc.ID)
		}
		if !ch.passing {
			//lint:ignore ST1005 the simulated agent answers in Consul's own words
			return "", fmt.Errorf("Check '%s' is in critical state", sc.ID)
		}
	}
	ttl := time.Duration(0)
	if e.TTL != "" {
		d, err := time.ParseDuration(e.TTL)
		if err != nil {
			//lint:ignore ST1005 the simulated agent answers in Consul's own words
			return "", fmt.Errorf("Invalid Session TTL '%s'", e.TTL)
		}
		ttl = d
	}
	if e.Behavior == "" {
		e.Behavior = api.SessionBehaviorRelease
	}
	c.sessionN++
	e.ID = fmt.Sprintf("%08x-0000-4000-8000-%012x", c.w.cfg.Seed&0xffffffff, c.sessionN)
	e.CreateIndex = c.bump()
	c.sessions[e.ID] = &session{entry: e, lastRenew: c.w.now, ttl: ttl}
	return e.ID, nil
}

// registerCheck registers a replica's campaign service and its TTL check.
func (c *consulSim) registerCheck(node string, reg api.AgentServiceRegistration) error {
	if reg.Check == nil || reg.Check.TTL == "" {
		return fmt.Errorf("only TTL checks are simulated")
	}
	ttl, err := time.ParseDuration(reg.Check.TTL)
	if err != nil {
		return err
	}
	id := reg.Check.CheckID
	if id == "" {
		id = "service:" + reg.ID
	}
	c.checks[id] = &ttlCheck{id: id, serviceID: reg.ID, node: node, ttl: ttl, lastPass: c.w.now, passing: reg.Check.Status == api.HealthPassing}
	c.bump()
	return nil
}

// deregister removes a replica's campaign service and its checks.
func (c *consulSim) deregister(node, serviceID string) {
	for _, id := range sortedKeys(c.checks) {
		if ch := c.checks[id]; ch.serviceID == serviceID && ch.node == node {
			delete(c.checks, id)
		}
	}
	c.bump()
}

// updateTTL sets a TTL check passing; an unknown check is an error.
func (c *consulSim) updateTTL(node, id, status string) error {
	ch := c.checks[id]
	if ch == nil || ch.node != node {
		//lint:ignore ST1005 the simulated agent answers in Consul's own words
		return fmt.Errorf("Unknown check ID %q", id)
	}
	ch.passing = status == api.HealthPassing
	if ch.passing {
		ch.lastPass = c.w.now
	}
	return nil
}

// health returns the entries of the memcached service, as the health
// endpoint answers them.
func (c *consulSim) health(serviceName string) []*api.ServiceEntry {
	var out []*api.ServiceEntry
	if serviceName != memcachedService {
		return out
	}
	for _, id := range sortedKeys(c.services) {
		s := c.services[id]
		if !s.listed {
			continue
		}
		a := c.agents[s.host]
		h := c.w.hosts[s.host]
		serf := &api.HealthCheck{Node: s.host, CheckID: "serfHealth", Name: "Serf Health Status", Status: api.HealthPassing}
		if a == nil || !a.serfOK {
			serf.Status = api.HealthCritical
		}
		svc := &api.HealthCheck{Node: s.host, CheckID: "service:" + id, ServiceID: id, ServiceName: memcachedService, Status: api.HealthCritical}
		if s.passing && c.w.now >= c.w.plant.absent[id] {
			svc.Status = api.HealthPassing
		}
		checks := api.HealthChecks{serf, svc}
		if s.maintenance {
			checks = append(checks, &api.HealthCheck{Node: s.host, CheckID: "_service_maintenance:" + id, ServiceID: id, Status: api.HealthCritical})
		}
		out = append(out, &api.ServiceEntry{
			Node:    &api.Node{Node: s.host, Address: s.host, Meta: map[string]string{"az": h.zone}},
			Service: &api.AgentService{ID: id, Service: memcachedService, Address: s.host, Port: s.port, Meta: map[string]string{"az": s.zone}},
			Checks:  checks,
		})
	}
	return out
}

// passingWord names a check state.
func passingWord(ok bool) string {
	if ok {
		return "passing"
	}
	return "critical"
}
