package leader

import (
	"context"
	"sync"
	"time"

	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/internal/backoff"
	"github.com/mcrib/mcrib/internal/revert"
)

// Elector campaigns for the leader lock of one pool and reports who leads.
// Create it with New; the zero value is not usable. All methods are safe for
// concurrent use, but Run must not run more than once at a time.
type Elector struct {
	opts Options
	// reverted are the fixes the simulation's self-test turned off
	// (revert.go); zero in production.
	reverted revert.Set

	mu       sync.Mutex
	running  bool
	session  string // set while leading
	member   string // the campaign's session, set while campaigning
	leaderID string // last known leader ID
	// stepDown ends the current term; non-nil only while leading.
	stepDown func()
	// steppedDown records that StepDown ended the current term.
	steppedDown bool
	// renewed is when the campaign's session was last renewed, or its
	// lock acquired (IsAssured).
	renewed time.Time
}

// New returns an Elector for opts. It fails with ErrInvalidOptions when a
// required field is missing or a duration is out of range; see Options for
// the defaults of the optional fields. New does not contact Consul.
func New(opts Options) (*Elector, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Elector{opts: o}, nil
}

// IsLeader reports whether this process holds the lock right now, as far as
// it knows. It turns false before the lead context of Run is cancelled.
func (e *Elector) IsLeader() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.session != ""
}

// Session returns the Consul session that holds the lock while this process
// leads, and "" otherwise.
func (e *Elector) Session() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.session
}

// LeaderID returns the ID of the last known leader: this process's own ID
// while it leads, the lock's value as last seen by the watch on the key
// while another process leads, and "" when the lock is free or nothing has
// been seen yet. While Consul cannot be reached it keeps the last value
// seen.
func (e *Elector) LeaderID() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leaderID
}

// StepDown gives up leadership: it cancels the lead context, releases the
// lock and lets Run campaign again, without trying to take the lock for
// LockDelay, so that another process may take over; meanwhile it keeps
// LeaderID fresh. The controller calls it when a check-and-set write fails
// because the lock was lost. It does nothing when this process does not
// lead.
func (e *Elector) StepDown() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stepDown != nil {
		e.steppedDown = true
		e.stepDown()
		e.session = "" // IsLeader turns false now, before the term winds down
	}
}

// Run campaigns for the lock until ctx ends and then returns; it never gives
// up on errors. Each time it wins it calls lead, in a new goroutine, with a
// context that is cancelled when leadership is lost, StepDown is called or
// ctx ends, and with the session that holds the lock (for CASWithSession).
// lead should return soon after its context is cancelled: Run waits for it
// before it releases the lock and campaigns again or returns. After ctx ends
// Run releases the lock, destroys its session and removes its check; with a
// lead that returns promptly it returns within about 3 s even when Consul
// does not answer.
//
// Leadership is lost when the lock key shows a session other than ours (the
// session was invalidated, e.g. destroyed by an operator), when the health
// check cannot be refreshed for CheckTTL (Consul unreachable) or is unknown
// to the agent (Consul restarted), or when Consul no longer knows the
// session. Run then campaigns again, at once after a lost lock and with a
// capped exponential backoff after errors.
func (e *Elector) Run(ctx context.Context, lead func(ctx context.Context, session string)) {
	e.mu.Lock()
	if e.running {
		e.mu.Unlock()
		e.opts.Logger.Error("leader: Run called while already running", "key", e.opts.Key)
		return
	}
	e.running = true
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.running = false
		e.mu.Unlock()
	}()

	clk := e.opts.Clock
	bo := retryBackoff()
	// holdOff keeps this process from taking the lock again right after it
	// stepped down, so that another process may take over.
	var holdOff time.Time
	for ctx.Err() == nil {
		start := clk.Now()
		res := e.campaign(ctx, lead, holdOff)
		if ctx.Err() != nil {
			return
		}
		if res.led || clk.Now().Sub(start) >= stableCampaign {
			bo.Reset()
		}
		var wait time.Duration
		switch {
		case res.err != nil:
			wait = bo.Next()
		case res.steppedDown:
			holdOff = clk.Now().Add(e.opts.LockDelay)
		}
		if res.err != nil {
			e.opts.Logger.Warn("leader: campaign ended", "key", e.opts.Key, "err", res.err, "retry_in", wait)
		}
		if !clock.Sleep(ctx, clk, wait) {
			return
		}
	}
}

// Retry delays after failed campaigns and failed reads of the lock key:
// the ceiling starts at minRetryDelay, doubles with each failure in a row
// and is capped at maxRetryDelay; each wait is drawn from the upper half
// of its ceiling (internal/backoff), so that electors that failed together
// do not retry in step.
const (
	minRetryDelay = 250 * time.Millisecond
	maxRetryDelay = 5 * time.Second
)

// retryBackoff returns the backoff of one retry loop.
func retryBackoff() backoff.Backoff {
	return backoff.Backoff{Min: minRetryDelay, Max: maxRetryDelay}
}

// stableCampaign is how long a campaign must have lasted for Run to start
// its backoff over after it ended with an error.
const stableCampaign = 2 * maxRetryDelay
