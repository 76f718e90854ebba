// Package controlloop keeps the slot map of one memcached pool in step with
// the cache tier, level-based: every pass reads the whole state (the slot
// map and freeze in Consul KV, the last accepted Consul answer, mcrib's own
// probes), computes the desired map as a pure function of (previous map,
// membership, damping verdicts, freeze) with package slotplan (Decide and
// Build), and writes the difference with check-and-set. An error means
// backoff and retry, never exit.
//
// The invariants it keeps are those of docs/invariants.md: a node that
// still answers keeps its slot however long Consul misses it; freeing comes
// before placing; a spare is flushed as part of its placement, which is
// announced as the slot's incoming node 12 s before it serves (announce.go
// keeps what this process knows of the announces beyond the map); a slot
// holder that was unreachable for long enough owes a flush, one decision of
// the leader stored with the map (the flushes document, owedflush.go) and
// carried out by whichever leader comes next when it answers; nothing
// copies from a node that owes a flush; an empty or sharply shrunken Consul
// answer is a fault of discovery; nothing moves while frozen. No instant
// written by another host is compared with this process's clock
// (remoteclock.go).
//
// Loop.Reconcile is one pass, and reads as one: decide (reconcile.go: read
// the pool's keys, then take them in and decide under the loop's mutex,
// without I/O), write (write.go: the vote, the flushes of actions.go and
// owedflush.go, the pool's documents with check-and-set) and publish
// (publish.go: the one step that tells the logs, events, metrics, traces,
// router configs and watchers of Changed, with no lock held). Loop.Run
// (loop.go) only schedules passes: on kicks, on the ticks of the probe
// interval, through a pass limiter, with a backoff after a failed pass,
// all on the clock of Options.Clock. The probe loop
// (probe.go) reads every node's stats once a probe interval; the boot
// limiter takes its hit counters from there (Loop.HitCounters). The loop
// meets the outside world through small interfaces: Store (the pool's keys,
// ConsulStore in Consul KV), Leadership (the leader lock, *leader.Elector),
// Discovery (*cachenodes.ConsulSource) and Prober (*cachenodes.Prober).
package controlloop
