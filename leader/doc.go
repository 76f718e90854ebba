// Package leader elects one leader among several mcrib serve processes that
// manage the same pool, through a Consul session lock on the key
// <kv-prefix>/<pool>/leader. The lock's value is the leader's ID (its operator
// API address), so followers can tell who leads.
//
// Consul enforces a session TTL of at least 10 s, and only invalidates an
// expired session after up to twice that, which is too slow to notice a
// leader that was killed. An Elector therefore ties each session to a health
// check of type TTL that it refreshes every CheckTTL/3: when the process dies
// the check turns critical after CheckTTL and Consul invalidates the session,
// which frees the lock. The check belongs to a small service named
// "mcrib-leader" registered on the local agent, not to the node, so that a
// critical check never marks the node's other services (memcached) unhealthy;
// Consul removes the service a minute after it turned critical. The session
// also carries the agent's serfHealth check and a 10 s TTL that is renewed as
// a backstop.
//
// Run campaigns until its context ends. It follows the lock key with
// blocking queries (internal/consulwatch), and times every wait (the
// keepalive, the retries after errors, the hold-off after StepDown) on
// Options.Clock. While it leads it watches the lock key and gives up
// leadership as soon as the key shows another session or none (someone
// invalidated the session), when the check can no longer be refreshed, or
// when StepDown is called. A clean shutdown releases the lock before
// destroying the session, so a follower takes over at once; a dead or
// deposed leader's lock is held back by Consul for the session's LockDelay.
//
// Leadership is advisory for everything except Consul KV: a leader that has
// been deposed but has not noticed yet could still act. CASWithSession closes
// that gap for KV writes: it writes with check-and-set in one transaction
// that also checks that the lock is still held by the writer's session.
// An Elector hands out each term as an opaque Lease (Elector.Lease), whose
// CAS is that write; Elector.Confirm is the one call that asks the lock
// itself, before an action only the leader may take, and steps down when
// the lock is lost.
package leader
