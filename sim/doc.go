// Package sim is mcrib's cache-tier simulator (mcrib sim): a discrete-event
// simulation on a simulated clock (clock.Fake, moved by the event
// loop) that runs mcrib's own code against a simulated fleet, so that
// "what happens to the hit rate and the database if a quarter of the
// Consul agents restart at peak?" has an answer before it happens.
//
// What is real: controlloop.Loop, built with controlloop.New and the
// default flags of mcrib serve, with flapdamp inside it; it is driven on
// one goroutine (Loop.Observe for each Consul answer, Loop.ProbeNode for
// each node every probe interval, then Loop.Reconcile), never Loop.Run,
// so a run is deterministic. The boot limit is mcrib serve's own
// pipeline, a ratelimit.Limiter (the hit-rate meters, the slow start, the
// controller and the admitter), given the counters of Loop.HitCounters
// every stats interval and each boot as it is asked for; a static:N
// policy is an operator's manual limit of N boots/s.
//
// What is simulated: Consul's answers (every node listed, passing or not);
// memcached nodes (an LRU of a fixed item count, get_hits, get_misses,
// cmd_flush, flush_all) reached through a controlloop.Prober; client
// processes reading Zipf-distributed keys (math/rand/v2, seeded) routed
// by the slot map, a sample of the reads simulated one by one and each
// standing for the rest; client boots that each read a burst of keys, asked
// for once a second per waiting client; and a database with a fixed
// capacity a second, beyond which queries fail and fill nothing, and a
// boot whose reads fail boots again. The caches start at the contents an
// LRU settles at under the workload.
//
// The nodes are spread round-robin over zones a, b and c (the az Consul's
// answers carry). The zone-drain scenario drains zone b through
// Loop.Drain, the drain document kept by the simulated store with
// check-and-set as ConsulStore keeps it; while a slot warms the clients
// read its new holder, then on a miss its old holder, add what it had to
// the new one and send their sets to both, as mcrib's Go client does.
// The policy "mcrib-cold" runs the loop with --warm-for 0s.
//
// The baseline policy "immediate" is the 2022 behaviour mcrib replaced:
// replace a slot holder as soon as Consul stops listing it as passing,
// flush a node Consul lists again, no boot limit.
//
// The same Config (seed included) always gives the same Result, the wall
// time aside.
package sim
