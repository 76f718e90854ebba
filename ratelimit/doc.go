// Package ratelimit is mcrib's boot limiter: it limits how many client
// boots (the most expensive request) the pool admits per second, so that a
// cold cache does not flood the database behind it, and lets the limit
// rise again only as fast as the cache refills.
//
// The parts:
//
//   - Package hitrate's Meter turns the memcached nodes' get_hits and
//     get_misses into the pool's smoothed hit rate (Counters, which Tick
//     and StatsFunc take, is its type).
//   - Controller is the adaptive controller: a pure state machine that
//     takes the hit rate and the time and moves the limit.
//   - SlowStart caps a boot surge until a hit-rate reading has judged the
//     cache.
//   - Admitter enforces a limit with a golang.org/x/time/rate token bucket.
//   - Limiter runs them as one pipeline, with the time as input and no
//     I/O: a stats reading goes through the meters, the slow start and the
//     controller (Observe), a boot through the slow start and the Admitter
//     (Admit). The simulator runs it as it is.
//   - Store keeps the boot-limit document in Consul KV with check-and-set.
//   - Service is mcrib serve's (POST /v1/boot, GET and PUT /v1/ratelimit):
//     a Limiter inside the stored document, its watch and the leader
//     check, which enforces a controller's change only once it is written.
//     Run drives it with goroutines; a simulation drives it on one
//     goroutine with its synchronous steps (Sync, Tick, Admit) over a
//     DocumentStore of its own.
//   - Client is embedded by applications: it follows the published
//     document and enforces the application's share locally.
//
// Service and Client take their time from a clock.Clock (package
// github.com/mcrib/mcrib/clock, nil for the real clock), so an application
// can move a clock.Fake in its own tests.
//
// What it promises:
//
//   - Admissions never exceed burst + limit × elapsed time; a cut lowers
//     the burst too, and the times passed to the token bucket never go
//     backwards (golang/go#65508: an older time would mint tokens).
//   - An interval without gets is no reading: the hit rate is unknown (a
//     nil HitRate, null in the documents) and the controller holds.
//   - The hit rate counts what applications see during warm moves, and the
//     controller's input leaves out the nodes a planned move touched
//     (Counters.Planned), so no planned move cuts the limit by itself.
//   - The hit rate and the controller's input are what the database sees:
//     the slots with no live holder count as all misses for their share
//     of the gets (Slots).
//   - The limit is never cut while the hit rate is at or above the target;
//     a collapse cuts to the floor only below it. A boot surge whose
//     reading fell fast but stays at or above the target is held by the
//     slow start (SurgeHeld) instead, rising on the raise schedule.
//   - Every change of the limit, by the controller or an operator, carries
//     one reason sentence.
//   - Manual mode is exact: the controller does not move the limit and no
//     slow start applies; a manual limit above the ceiling is refused.
//   - A process that does not lead keeps its slow start reset, so a newly
//     elected leader admits at the stored limit and burst from its first
//     boot.
//   - Client never lets the pool admit more because its count of the
//     application's instances is unknown, zero or late: it divides by the
//     largest count it saw in the last 10 minutes.
//
// How the limiter decides (the hit rate and its smoothing, the controller's
// rules and waits, the slow start, the modes, the stored document and the
// forwarding between replicas) is explained once, in the repository's
// docs/concepts.md, section "The boot limiter".
package ratelimit
