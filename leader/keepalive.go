package leader

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/consul/api"
)

// sessionTTL is the TTL of every session, Consul's minimum. It is only a
// backstop: the TTL check notices a dead process much sooner.
const sessionTTL = 10 * time.Second

// renewEvery is how often the session is renewed. A renewal goes through
// the local agent to the Consul servers, so it is what notices a process
// cut off from the servers while its agent still answers (the agent takes
// the TTL check's refresh alone): renewing often lets such a leader step
// down within sessionTTL plus one renewal.
const renewEvery = sessionTTL / 10

// keepalive refreshes the campaign's TTL check every CheckTTL/3 and renews
// the session every renewEvery, on the elector's clock, until ctx ends.
// It ends the campaign through fail when the agent rejects the refresh (the
// check is gone, e.g. Consul restarted), when no refresh succeeded for
// CheckTTL (the check has expired and the session with it), when Consul
// no longer knows the session, or when no renewal succeeded for sessionTTL:
// the servers cannot be reached, the session may already be gone there, and
// a leader that cannot prove its lock must not act as one (invariant 7).
func (e *Elector) keepalive(ctx context.Context, fail context.CancelCauseFunc, checkID, session string) {
	clk := e.opts.Clock
	every := e.opts.CheckTTL / 3
	refresh := clk.NewTicker(every)
	defer refresh.Stop()
	renew := clk.NewTicker(renewEvery)
	defer renew.Stop()
	lastOK := clk.Now()
	lastRenewed := lastOK
	for {
		select {
		case <-ctx.Done():
			return
		case <-refresh.C():
			err := e.refreshCheck(ctx, checkID, every)
			if ctx.Err() != nil {
				return
			}
			now := clk.Now()
			var rejected api.StatusError
			switch {
			case err == nil:
				lastOK = now
			case errors.As(err, &rejected):
				fail(fmt.Errorf("refreshing leader check %s: %w", checkID, err))
				return
			case checkExpired(lastOK, now, e.opts.CheckTTL):
				fail(fmt.Errorf("refreshing leader check %s for %v: %w", checkID, now.Sub(lastOK).Round(time.Millisecond), err))
				return
			default:
				e.opts.Logger.Debug("leader: refreshing leader check", "check", checkID, "err", err)
			}
		case <-renew.C():
			rctx, cancel := context.WithTimeout(ctx, renewEvery)
			entry, _, err := e.opts.Client.Session().Renew(session, (&api.WriteOptions{}).WithContext(rctx))
			cancel()
			if ctx.Err() != nil {
				return
			}
			now := clk.Now()
			switch {
			case err == nil && entry == nil:
				fail(errSessionGone)
				return
			case err == nil:
				lastRenewed = now
				e.renewedAt(now)
			case now.Sub(lastRenewed) >= sessionTTL:
				fail(fmt.Errorf("renewing session for %v: %w", now.Sub(lastRenewed).Round(time.Millisecond), err))
				return
			default:
				e.opts.Logger.Debug("leader: renewing session", "session", session, "err", err)
			}
		}
	}
}

// refreshCheck sets the TTL check to passing, waiting at most timeout.
func (e *Elector) refreshCheck(ctx context.Context, checkID string, timeout time.Duration) error {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return e.opts.Client.Agent().UpdateTTLOpts(checkID, "", api.HealthPassing, (&api.QueryOptions{}).WithContext(rctx))
}

// checkExpired reports whether a TTL check last refreshed at lastOK has
// expired at now, so that Consul has probably turned it critical and
// invalidated the session tied to it. It is a pure function.
func checkExpired(lastOK, now time.Time, ttl time.Duration) bool {
	return now.Sub(lastOK) >= ttl
}
