package leader

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/clock"
)

const (
	// serviceName is the Consul service under which each campaign registers
	// the TTL check its session is tied to.
	serviceName = "mcrib-leader"
	// deregisterCriticalAfter lets the agent remove the service of a
	// campaign whose process died (1 minute is Consul's minimum).
	deregisterCriticalAfter = "1m"
	// sessionCreateTimeout bounds the retries of session creation while the
	// agent syncs the freshly registered check to the catalog.
	sessionCreateTimeout = 3 * time.Second
	// cleanupTimeout bounds releasing the lock, destroying the session and
	// removing the check at the end of a campaign.
	cleanupTimeout = 3 * time.Second
)

// campaignResult tells Run how a campaign ended.
type campaignResult struct {
	// err says why the campaign ended, or is nil after StepDown or the end
	// of Run's context.
	err error
	// led reports that the campaign held the lock for a while; Run then
	// starts its backoff over.
	led bool
	// steppedDown reports that the term ended through StepDown or because
	// lead returned; the next campaign does not take the lock for LockDelay.
	steppedDown bool
}

// campaign registers a TTL check, creates a session tied to it, follows
// the lock key until the lock is free (and holdOff has passed), acquires it
// and leads until the term ends. It removes everything it created before it
// returns.
func (e *Elector) campaign(ctx context.Context, lead func(context.Context, string), holdOff time.Time) campaignResult {
	serviceID := serviceName + "-" + randomHex()
	checkID := serviceID + "-ttl"
	var (
		session  string
		acquired bool
	)
	// Deferred first so that it runs last, after the keepalive stopped.
	defer func() { e.cleanup(ctx, serviceID, session, acquired) }()

	cctx, fail := context.WithCancelCause(ctx)
	defer fail(nil)

	if err := e.registerCheck(cctx, serviceID, checkID); err != nil {
		return campaignResult{err: fmt.Errorf("registering leader check: %w", err)}
	}
	var err error
	session, err = e.createSession(cctx, checkID)
	if err != nil {
		return campaignResult{err: fmt.Errorf("creating session: %w", err)}
	}
	e.opts.Logger.Debug("leader: campaigning", "key", e.opts.Key, "session", session, "check", checkID)
	e.setMember(session)
	defer e.setMember("")

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		e.keepalive(cctx, fail, checkID, session)
	}()
	defer func() {
		fail(nil)
		wg.Wait()
	}()

	maybeHeld, err := e.acquire(cctx, session, holdOff)
	acquired = maybeHeld
	switch {
	case ctx.Err() != nil:
		return campaignResult{}
	case cctx.Err() != nil:
		return campaignResult{err: context.Cause(cctx)}
	case err != nil:
		return campaignResult{err: err}
	}
	return e.term(ctx, cctx, session, lead)
}

// term leads: it calls lead and watches the lock key until the lock is
// lost, StepDown is called, lead returns or ctx ends.
func (e *Elector) term(ctx, cctx context.Context, session string, lead func(context.Context, string)) campaignResult {
	mctx, stop := context.WithCancel(cctx)
	defer stop()
	// The lead context is cancelled only after IsLeader turned false.
	lctx, endTerm := context.WithCancel(context.WithoutCancel(cctx))
	defer endTerm()

	now := e.opts.Clock.Now()
	e.mu.Lock()
	e.session = session
	e.renewed = now // the acquire that began the term proved the session valid
	e.leaderID = e.opts.ID
	e.stepDown = stop
	e.steppedDown = false
	e.mu.Unlock()
	e.opts.Logger.Info("leader: leading", "key", e.opts.Key, "id", e.opts.ID, "session", session)

	done := make(chan struct{})
	go func() {
		// done closes before stop ends the watch, so that a lead that
		// returned on its own is told apart from a lost lock.
		defer stop()
		defer close(done)
		lead(lctx, session)
	}()

	err := e.watchHeld(mctx, session)

	e.mu.Lock()
	stepped := e.steppedDown
	e.session = ""
	e.stepDown = nil
	e.steppedDown = false
	if e.leaderID == e.opts.ID {
		e.leaderID = ""
	}
	e.mu.Unlock()
	returned := false
	select {
	case <-done:
		returned = true
	default:
	}
	endTerm()
	<-done

	switch {
	case ctx.Err() != nil:
		e.opts.Logger.Info("leader: shutting down", "key", e.opts.Key)
		return campaignResult{led: true}
	case stepped:
		e.opts.Logger.Info("leader: stepped down", "key", e.opts.Key)
		return campaignResult{led: true, steppedDown: true}
	case cctx.Err() != nil:
		return campaignResult{err: fmt.Errorf("lost leadership: %w", context.Cause(cctx)), led: true}
	case returned:
		e.opts.Logger.Warn("leader: lead returned while leading; stepping down", "key", e.opts.Key)
		return campaignResult{led: true, steppedDown: true}
	default:
		return campaignResult{err: fmt.Errorf("lost leadership: %w", err), led: true}
	}
}

// registerCheck registers the campaign's service with its TTL check, passing
// from the start, on the local agent.
func (e *Elector) registerCheck(ctx context.Context, serviceID, checkID string) error {
	reg := &api.AgentServiceRegistration{
		ID:   serviceID,
		Name: serviceName,
		Meta: map[string]string{"lock_key": e.opts.Key, "leader_id": e.opts.ID},
		Check: &api.AgentServiceCheck{
			CheckID:                        checkID,
			Name:                           "mcrib leader liveness",
			TTL:                            e.opts.CheckTTL.String(),
			Status:                         api.HealthPassing,
			DeregisterCriticalServiceAfter: deregisterCriticalAfter,
		},
	}
	return e.opts.Client.Agent().ServiceRegisterOpts(reg, api.ServiceRegisterOpts{}.WithContext(ctx))
}

// createSession creates a session tied to the agent's serfHealth and the
// campaign's TTL check. The agent syncs a new check to the catalog
// asynchronously, so Consul may refuse the session for a moment ("Missing
// check"); such refusals are retried for sessionCreateTimeout.
func (e *Elector) createSession(ctx context.Context, checkID string) (string, error) {
	entry := &api.SessionEntry{
		Name:          fmt.Sprintf("mcrib leader %s for %s", e.opts.ID, e.opts.Key),
		LockDelay:     e.opts.LockDelay,
		Behavior:      api.SessionBehaviorRelease,
		TTL:           sessionTTL.String(),
		NodeChecks:    []string{"serfHealth"},
		ServiceChecks: []api.ServiceCheck{{ID: checkID}},
	}
	deadline := e.opts.Clock.Now().Add(sessionCreateTimeout)
	for {
		id, _, err := e.opts.Client.Session().Create(entry, (&api.WriteOptions{}).WithContext(ctx))
		if err == nil {
			return id, nil
		}
		var se api.StatusError
		if !errors.As(err, &se) || e.opts.Clock.Now().After(deadline) {
			return "", err
		}
		if !clock.Sleep(ctx, e.opts.Clock, 50*time.Millisecond) {
			return "", ctx.Err()
		}
	}
}

// cleanup releases the lock if the campaign took it, destroys the session
// and removes the check. It works on a context of its own, bounded by
// cleanupTimeout, because ctx may have ended already. Releasing before
// destroying keeps Consul from applying the lock delay, so that a follower
// takes over at once.
func (e *Elector) cleanup(ctx context.Context, serviceID, session string, acquired bool) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	w := (&api.WriteOptions{}).WithContext(cctx)
	log := e.opts.Logger.With("key", e.opts.Key, "session", session)
	if acquired && session != "" {
		if _, _, err := e.opts.Client.KV().Release(&api.KVPair{Key: e.opts.Key, Session: session}, w); err != nil {
			log.Debug("leader: releasing lock", "err", err)
		}
	}
	if session != "" {
		if _, err := e.opts.Client.Session().Destroy(session, w); err != nil {
			log.Debug("leader: destroying session", "err", err)
		}
	}
	if err := e.opts.Client.Agent().ServiceDeregisterOpts(serviceID, (&api.QueryOptions{}).WithContext(cctx)); err != nil {
		log.Debug("leader: removing leader check", "service", serviceID, "err", err)
	}
}

// randomHex returns 16 random hex digits.
func randomHex() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails.
	return hex.EncodeToString(b[:])
}
