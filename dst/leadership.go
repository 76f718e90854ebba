package dst

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/controlloop"
	"github.com/mcrib/mcrib/internal/revert"
	"github.com/mcrib/mcrib/leader"
)

// The campaign's timings: leader.Elector's defaults.
const (
	lockDelay  = leader.DefaultLockDelay
	checkTTL   = leader.DefaultCheckTTL
	sessionTTL = 10 * time.Second
	// campaignEvery is how often a campaign is driven: the TTL check's
	// refresh (CheckTTL/3) and the session's renewal (sessionTTL/10).
	campaignEvery = time.Second
)

// campaign is a replica's controlloop.Leadership, driven by the
// simulation instead of leader.Elector's goroutines, with the same
// protocol through the real *api.Client: a service with a TTL check on
// the host's agent, a session tied to it and to serfHealth (lock delay,
// release behaviour), the lock taken with KV acquire, kept by refreshing
// the check and renewing the session, watched by reading the key. Lease
// is leader.NewLease; Confirm asks leader.Held; the slot map's
// check-and-set is the real leader.Lease.CAS inside ConsulStore.
type campaign struct {
	p *replicaProc
	// key and id are the lock key and this replica's leader ID.
	key, id string
	// serviceID and checkID are the campaign's service and check; "" while
	// none is registered.
	serviceID, checkID string
	// session is the campaign's session ("" none); leading is set while it
	// holds the lock, since termStart.
	session   string
	leading   bool
	termStart time.Duration
	// lastRefresh and lastRenew are when the check and the session were
	// last kept alive (simulated time).
	lastRefresh, lastRenew time.Duration
	// renewedAt is the host's time of the last renewal or acquire, for
	// leader.Assured.
	renewedAt time.Time
	// holdOff: no acquire before it (after a step-down).
	holdOff time.Duration
	// retryAt: no new campaign before it (after a failed one).
	retryAt  time.Duration
	failures int
	leaderID string
	n        int
}

var _ controlloop.Leadership = (*campaign)(nil)

func (c *campaign) Lease() (leader.Lease, bool) {
	if !c.leading {
		return leader.Lease{}, false
	}
	return leader.NewLease(c.key, c.session), true
}

func (c *campaign) Confirm(ctx context.Context) (leader.Lease, error) {
	lease, ok := c.Lease()
	if !ok {
		return leader.Lease{}, leader.ErrNotLeader
	}
	held, err := leader.Held(ctx, c.p.consul, lease)
	if err != nil {
		return lease, err
	}
	if held {
		return lease, nil
	}
	c.stepDown("Confirm found the lock held by another session or none")
	return leader.Lease{}, fmt.Errorf("%w: the lock %s is no longer held by this process", leader.ErrNotLeader, c.key)
}

// Assured reports whether the process leads and is sure no other process
// does (leader.Assured), as leader.Elector.IsAssured, which the campaign
// stands in for: with revert.AssuredLimit, whenever it leads.
func (c *campaign) Assured() bool {
	if c.p.wl().cfg.Reverted.Reverted(revert.AssuredLimit) {
		return c.leading
	}
	return c.leading && leader.Assured(c.renewedAt, c.p.clock().Now(), lockDelay)
}

func (c *campaign) LeaderID() string {
	if c.leading {
		return c.id
	}
	return c.leaderID
}

func (c *campaign) Member() (leader.Lease, bool) {
	if c.session == "" {
		return leader.Lease{}, false
	}
	return leader.NewLease("", c.session), true
}

// stepDown ends the term: the next acquire waits the lock delay.
func (c *campaign) stepDown(why string) {
	if !c.leading {
		return
	}
	c.leading = false
	c.holdOff = c.p.wl().now + lockDelay
	c.p.wl().tr.add(c.p.wl().now, "%s steps down: %s", c.p.name(), why)
}

// end ends the campaign after an error (as Elector.campaign returns): the
// term ends, the lock is released and the session destroyed if Consul can
// be reached, and a new campaign starts after a backoff.
func (c *campaign) end(why string) {
	w := c.p.wl()
	c.stepDown(why)
	w.tr.add(w.now, "%s campaign ends: %s", c.p.name(), why)
	ctx := context.Background()
	wo := (&api.WriteOptions{}).WithContext(ctx)
	if c.session != "" {
		_, _, _ = c.p.consul.KV().Release(&api.KVPair{Key: c.key, Session: c.session}, wo)
		_, _ = c.p.consul.Session().Destroy(c.session, wo)
	}
	if c.serviceID != "" {
		_ = c.p.consul.Agent().ServiceDeregisterOpts(c.serviceID, (&api.QueryOptions{}).WithContext(ctx))
	}
	c.session, c.serviceID, c.checkID = "", "", ""
	c.failures++
	// Elector.Run's backoff: 250ms doubling to 5s (without its jitter).
	c.retryAt = w.now + min(250*time.Millisecond<<min(c.failures-1, 5), 5*time.Second)
}

// tick drives the campaign one second on: start one, keep it alive,
// take the free lock, watch the held one.
func (c *campaign) tick() {
	w := c.p.wl()
	ctx := context.Background()
	if c.session == "" {
		if w.now < c.retryAt {
			return
		}
		c.start(ctx)
		return
	}
	// Keepalive: the check's refresh and the session's renewal.
	err := c.p.consul.Agent().UpdateTTLOpts(c.checkID, "", api.HealthPassing, (&api.QueryOptions{}).WithContext(ctx))
	var rejected api.StatusError
	switch {
	case err == nil:
		c.lastRefresh = w.now
	case errors.As(err, &rejected):
		c.end(fmt.Sprintf("refreshing the leader check: %v", err))
		return
	case w.now-c.lastRefresh >= checkTTL:
		c.end(fmt.Sprintf("the leader check not refreshed for %v: %v", w.now-c.lastRefresh, err))
		return
	}
	entry, _, err := c.p.consul.Session().Renew(c.session, (&api.WriteOptions{}).WithContext(ctx))
	switch {
	case err == nil && entry == nil:
		c.end("Consul no longer knows the session")
		return
	case err == nil:
		c.lastRenew, c.renewedAt = w.now, c.p.clock().Now()
	case w.now-c.lastRenew >= sessionTTL:
		c.end(fmt.Sprintf("the session not renewed for %v: %v", w.now-c.lastRenew, err))
		return
	}
	// The watch on the lock key, then the acquire of a free lock.
	kv, _, err := c.p.consul.KV().Get(c.key, (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return // the keepalive decides when Consul has been away too long
	}
	c.leaderID = ""
	if kv != nil && kv.Session != "" {
		c.leaderID = string(kv.Value)
	}
	switch {
	case c.leading && (kv == nil || kv.Session != c.session):
		c.stepDown("the lock key no longer carries this session")
		return
	case c.leading:
		return
	case kv != nil && kv.Session == c.session:
		c.takeTerm() // an acquire whose answer got lost
		return
	case kv != nil && kv.Session != "":
		return
	case w.now < c.holdOff:
		return
	}
	ok, _, err := c.p.consul.KV().Acquire(&api.KVPair{Key: c.key, Value: []byte(c.id), Session: c.session}, (&api.WriteOptions{}).WithContext(ctx))
	if err == nil && ok {
		c.takeTerm()
	}
}

// takeTerm begins a term.
func (c *campaign) takeTerm() {
	w := c.p.wl()
	c.leading, c.termStart, c.leaderID, c.failures = true, w.now, c.id, 0
	c.renewedAt = c.p.clock().Now() // the acquire proved the session valid
	w.tr.add(w.now, "%s leads (session %s)", c.p.name(), c.session)
	c.p.kick()
}

// start registers the campaign's check and creates its session.
func (c *campaign) start(ctx context.Context) {
	w := c.p.wl()
	c.n++
	serviceID := fmt.Sprintf("mcrib-leader-%s-%d-%d", c.p.r.host.name, c.p.inc, c.n)
	checkID := serviceID + "-ttl"
	reg := &api.AgentServiceRegistration{
		ID: serviceID, Name: "mcrib-leader",
		Meta: map[string]string{"lock_key": c.key, "leader_id": c.id},
		Check: &api.AgentServiceCheck{CheckID: checkID, Name: "mcrib leader liveness", TTL: checkTTL.String(),
			Status: api.HealthPassing, DeregisterCriticalServiceAfter: "1m"},
	}
	if err := c.p.consul.Agent().ServiceRegisterOpts(reg, api.ServiceRegisterOpts{}.WithContext(ctx)); err != nil {
		c.failures++
		c.retryAt = w.now + min(250*time.Millisecond<<min(c.failures-1, 5), 5*time.Second)
		return
	}
	c.serviceID, c.checkID = serviceID, checkID
	id, _, err := c.p.consul.Session().Create(&api.SessionEntry{
		Name: fmt.Sprintf("mcrib leader %s for %s", c.id, c.key), LockDelay: lockDelay,
		Behavior: api.SessionBehaviorRelease, TTL: sessionTTL.String(),
		NodeChecks: []string{"serfHealth"}, ServiceChecks: []api.ServiceCheck{{ID: checkID}},
	}, (&api.WriteOptions{}).WithContext(ctx))
	if err != nil {
		c.end(fmt.Sprintf("creating a session: %v", err))
		return
	}
	c.session, c.lastRefresh, c.lastRenew = id, w.now, w.now
	w.tr.add(w.now, "%s campaigns with session %s", c.p.name(), id)
}
