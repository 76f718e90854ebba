// Package dst is the deterministic simulation of a whole mcrib pool, in
// the manner of FoundationDB's simulator and TigerBeetle's VOPR: from a
// seed it builds a pool of replicas, memcached nodes and application
// clients over a simulated network, runs mcrib's real code in it while
// faults drawn from the seed strike, checks the pool's promises after
// every step and the clients' history at the end, and replays any failure
// exactly from its seed.
//
// # What is real
//
// Each replica is a real controlloop.Loop, built with controlloop.New and
// the settings of mcrib serve (--hold drawn from 10 s to 20 s and
// --flush-after-unreachable from {0s, 10s} by the seed, --warm-for 1m so
// that warmings start and end within short runs), with its ReplicaID and
// its host's clock. Its Store is the real controlloop.ConsulStore on a real
// *api.Client, and its discovery the real cachenodes.ConsulSource (Fetch);
// the client's HTTP transport is an http.RoundTripper into the simulated
// Consul, so every KV read, check-and-set transaction, lock acquire and
// session renewal is encoded, sent and decoded by the real
// hashicorp/consul/api code, synchronously on the caller's goroutine. The
// loop is driven on one goroutine, never by Loop.Run: Loop.Observe with
// each changed Consul answer, Loop.ProbeNode for each node every probe
// interval (each replica probing each node at a phase of its own, as the
// real probe loop spreads its probes), Loop.Reconcile every probe interval
// and when a term begins or the health index moves.
//
// Leadership is controlloop.Leadership implemented here, because
// leader.Elector's campaign runs goroutines; it follows the elector's
// protocol through the real client: a service with a TTL check on the
// host's agent, a session tied to it and to serfHealth (lock delay 3 s,
// release behaviour, TTL 10 s), the lock taken with KV acquire, kept by
// refreshing the check and renewing the session every second, watched by
// reading the key. Lease is leader.NewLease, Confirm is leader.Held, and
// the slot map's check-and-set is leader.Lease.CAS inside ConsulStore.
//
// Each application client is a real mcclient.Client whose Options.Dial
// returns an mcclient.Conn over the simulated network; it takes slot maps
// with SetSlotMap from a random replica's Loop.SlotMap when the network
// lets it reach that replica, and does gets, sets (each with a value of
// its own) and deletes on 64 keys. Now and then a call of one operation
// runs a second operation of the same client from inside it, before its
// request leaves or after its answer came: two goroutines of one process
// interleaved at a point the seed chooses. The client runs with a replay
// backoff of 1 ms, so the backoff's jitter (math/rand) never decides
// anything: client operations are whole milliseconds apart.
//
// # What is simulated
//
// Consul: the catalog and health of the memcached service (serfHealth of
// each host's agent, the agent's check of each memcached every 5 s,
// maintenance mode); per-host agents that restart, their services absent
// and then critical for a while; KV with ModifyIndex, LockIndex and
// sessions, check-and-set, acquire and release, transactions (set, cas,
// get, check-index, check-not-exists, check-session, delete, delete-cas,
// all or nothing); sessions invalidated when a check turns critical or
// their TTL runs out twice over, their locks released and held back for
// the lock delay. Its faults: an answer lost after its write committed,
// plain 500 errors, and servers without a leader.
//
// Memcached: items with value, flags and expiry (by the node host's
// clock), get, set, add, replace, delete, flush_all and stats (pid,
// uptime, curr_items, get_hits, get_misses, cmd_flush); restarts (a new
// pid, empty), pauses (no answer, contents kept), deaths.
//
// The network: hosts (Consul's, the replicas', the memcached hosts', the
// clients'), with per-direction cuts, losses and slowness between any two.
// A call is synchronous and takes no simulated time; a message on an
// impaired direction is lost (cut or by chance) or slowed beyond the
// caller's timeout, in which case the request may or may not have been
// carried out; an answer lost on the way back means the request was
// carried out. Each host's clock is the simulated time plus its skew,
// within ±500 ms (so any two are at most 1 s apart), and steps now and
// then.
//
// Every fault decision inside a call is a hash of the seed, the step, the
// hosts, the operation and its key (and how many times that very call was
// made in the step), never the next draw of a shared generator, so the
// order in which the driven code makes its calls does not change what
// happens to them. Where the real code's iteration order leaked into the
// order of its calls (the flushes of returning slot holders), the real code
// sorts now. The same Config gives the same trace, byte for byte
// (TestDeterminism).
//
// The faults (faults.go, outages.go, operator.go): a replica's crash and
// restart at any point (a new Loop, memory lost, Load from KV), a rolling
// restart of every replica, a replica cut off from Consul, cuts, losses
// and slowness between any two hosts, an observer blip (a replica losing
// every memcached host), an agent restart on a memcached host and a
// rollout of a zone's agents, memcached restarts, pauses (many near
// --flush-after-unreachable, where vantage points disagree) and deaths, a
// host losing power, new nodes joining as spares, an operator's freeze and
// unfreeze, replaces and maintenance, zone drains and undrains (most of
// them of a zone that half-fails meanwhile, its nodes pausing one after
// another: why operators drain), clock steps, Consul's errors, lost
// answers and lost leader, and a memcached registered again under a second
// service ID (most often a warm source's). Mix weighs them and sets their
// pace (one every 5 s on average by default).
//
// Boots: every replica process runs mcrib serve's own boot gate and
// limiter (limiter.go: the real bootgate.Gate in front of a real
// ratelimit.Service over the pool's boot-limit document, read every second
// and ticked every stats interval with Loop.HitCounters), with a low limit
// (20 boots/s) against some 50 offered. Callers POST /v1/boot to random
// replicas; some cut their body short, send more than 64 KiB, hang up, or
// forge the forwarded mark. A forward between replicas goes over the
// simulated network as a real transport sends it.
//
// # The checker
//
// After every step the checker asserts what can be asserted then, from
// the simulation's ground truth (which memcached ran, which link was
// impaired, what Consul listed) and the pool's documents and status:
//
//   - slotmap-valid: the stored slot map parses, and no memcached appears
//     twice in it (by address, whatever its ID), each at its own address.
//   - generation-order: the stored map's generation never goes back, rises
//     by one exactly when a slot changes hands, and no replica serves a
//     lower generation than it served before.
//   - client-generation-order: no client's map goes back in generation
//     (section 7).
//   - inv1-replaced-while-answering: no slot is taken from its holder for
//     its hold (not a drain or return step, a replace or maintenance) while
//     its memcached answered throughout the hold. "Throughout" tolerates
//     what cannot make a node count as unreachable: disturbances (the
//     memcached not running, or any link between its host and a live
//     replica's impaired) merged across gaps under a probe interval, each
//     shorter than the hold less two probe intervals and the clocks' 1 s
//     (how far a replica's measure can run ahead of the truth), or than a
//     probe interval less 1 s.
//   - inv2-placement-unflushed: a node enters a slot only when it was
//     flushed or restarted since it last held a slot or warmed one (the
//     first fill aside).
//   - inv2-flush-undecided: a flush of a slot holder (not a placement)
//     happens only when the pool had decided it: the flushes document holds
//     the node (v4), or the leader of the moment, during its term, showed it
//     flush_pending (the decision the checker follows), or the flushing
//     leader decided it in this very pass. A follower's own decision,
//     carried out once it leads, breaks it.
//   - inv2-flush-forgotten: a decided flush is never forgotten: while the
//     node holds its slot and was neither flushed (cmd_flush) nor restarted
//     (pid), a leader settled in its term shows it flush_pending; two probe
//     intervals without are a violation.
//   - inv2-needless-flush: no flush of a slot holder whose memcached
//     answered throughout since it was last clean (ground truth, with the
//     tolerance above, for --flush-after-unreachable less two probe
//     intervals and 1 s).
//   - inv3-moved-while-frozen: no slot changes hands while an operator's
//     freeze is stored, and no slot is taken for a hold, a replace or
//     maintenance while more than --max-absent-fraction of the holders are
//     absent from Consul as the leader last read it (the automatic freeze).
//   - inv3-replaced-before-hold: a slot is taken for its hold only from a
//     node Consul did not list present for the hold (less the clocks' 1 s
//     and 1 s of watch delay).
//   - inv3-ceiling: at most --max-replacements-per-minute replacements
//     (holds, replaces, maintenance; not drain or return steps) in any
//     window of 59 s (a minute less the clocks' 1 s).
//   - inv7-flush-by-leader: only the process holding the leader lock
//     flushes.
//   - inv9-warm-from-owing: no slot moves warm from a node that owes a
//     flush.
//   - s7-copy-from-owing: no client reads a warm source (to copy into the
//     new holder) while the pool has it warm and owing a flush.
//   - s7-stale-read (the history): no read returns a value that a delete
//     or set completed before the read began had replaced. A read is judged
//     only against writes made under its own map generation: a client that
//     has not yet seen a cold move may still reach the old holder, and one
//     that has no longer does; that is the map's propagation, not a broken
//     promise. A write that failed is indeterminate (it may take effect at
//     any time after it began), so a value it wrote is never stale.
//   - inv8-admissions: the boots admitted from the pool's limit stay
//     within limit × time + burst, and each replica's admissions from its
//     share within the share of the limit it had in force (over windows of
//     1 s to 30 s, allowing 1 s of skew; where the limit changed, the
//     highest in force counts). With a test's own handler
//     (BootConfig.Handler), every admission counts against the limit.
//   - inv8-share-without-failure: a replica admits from its share only a
//     boot not marked forwarded, and only once its own connection to the
//     leader failed (within the gate's LeaderRetryAfter), or while it knows
//     no other leader.
//
// A rule that only one known fix keeps names that fix (Violation.Fix): a
// violation tells which known bug it is. Config.Reverted is the revert.Set
// handed to the packages' Options (controlloop, mcclient, the boot gate):
// the checker's self-test turns each fix off alone and must find it within
// the short seed set (TestDSTSelfTest, make dst-selftest; TestDSTKnownBugs
// keeps a seed for each). Config.Tolerate lists fixes whose violations are
// recorded (Result.Tolerated) while the run goes on: the self-test
// tolerates the other fixes' rules, and a clean run tolerates nothing.
//
// # Replaying a seed
//
// A failure prints the seed, the step, the simulated time, the rule and
// its message, and the last 60 lines of the trace. It replays exactly:
//
//	go test ./dst -run 'TestDST$' -dst.seed=N -dst.duration=5m -v
//
// with -dst.trace to print the whole trace, -dst.ops to trace every call,
// -dst.logs for the replicas' logs, and -dst.tolerate=all (or a list of fix
// names) to go on past known bugs. make dst DST_SEEDS=200 DST_DURATION=1h
// runs many seeds for long.
package dst
