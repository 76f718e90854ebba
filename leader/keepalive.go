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

// keepalive refreshes the campaign's TTL check every CheckTTL/3 and renews
// the session every sessionTTL/2, on the elector's clock, until ctx ends.
// It ends the campaign through fail when the agent rejects the refresh (the
// check is gone, e.g. Consul restarted), when no refresh succeeded for
// CheckTTL (the check has expired and the session with it), or when Consul
// no longer knows the session.
func (e *Elector) keepalive(ctx context.Context, fail context.CancelCauseFunc, checkID, session string) {
	clk := e.opts.Clock
	every := e.opts.CheckTTL / 3
	refresh := clk.NewTicker(every)
	defer refresh.Stop()
	renew := clk.NewTicker(sessionTTL / 2)
	defer renew.Stop()
	lastOK := clk.Now()
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
			rctx, cancel := context.WithTimeout(ctx, sessionTTL/2)
			entry, _, err := e.opts.Client.Session().Renew(session, (&api.WriteOptions{}).WithContext(rctx))
			cancel()
			if ctx.Err() != nil {
				return
			}
			if err == nil && entry == nil {
				fail(errSessionGone)
				return
			}
			if err != nil {
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
