package leader

import (
	"time"

	"github.com/mcrib/mcrib/internal/revert"
)

// A leader holds the lock as far as it knows until it notices otherwise,
// which may take up to sessionTTL while Consul's servers cannot be reached.
// Consul may have invalidated its session meanwhile (its node's serfHealth
// failed, its check expired) and another process may lead LockDelay later.
// Writes and flushes are safe all the same (check-and-set on the lock's
// session, Confirm before a flush); an action that Consul does not guard,
// such as admitting boots from the pool's limit (invariant 8), is taken
// only while the leader is assured: its session was renewed within the
// lock delay less one renewal timeout. The session was valid when the
// servers took that renewal, no more than a renewal timeout before its
// answer arrived; had Consul invalidated it right after, no other process
// could take the lock before that moment plus the lock delay.

// Assured reports whether a leader whose session was last renewed (or
// whose lock was acquired) at lastRenewed, with lock delay lockDelay, is
// sure at now that no other process holds the lock. It is a pure function.
func Assured(lastRenewed, now time.Time, lockDelay time.Duration) bool {
	return !lastRenewed.IsZero() && now.Sub(lastRenewed) < lockDelay-renewEvery
}

// IsAssured reports whether this process leads and is sure that no other
// process holds the lock (see Assured): its session was renewed within the
// lock delay less one renewal timeout. (With revert.AssuredLimit it is
// assured whenever it leads, as it once was.)
func (e *Elector) IsAssured() bool {
	now := e.opts.Clock.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.session != "" && (e.reverted.Reverted(revert.AssuredLimit) || Assured(e.renewed, now, e.opts.LockDelay))
}

// renewedAt records a successful renewal of the session (or the acquire of
// the lock) at now.
func (e *Elector) renewedAt(now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if now.After(e.renewed) {
		e.renewed = now
	}
}
