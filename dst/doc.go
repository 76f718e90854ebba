// Package dst is the deterministic simulation of a whole mcrib pool, in
// the manner of FoundationDB's simulator and TigerBeetle's VOPR: from a
// seed it builds a pool of replicas, memcached nodes and application
// clients over a simulated network, runs mcrib's real code in it while
// faults drawn from the seed strike, checks the pool's promises after
// every step and the clients' history at the end, and replays any failure
// exactly from its seed.
//
// What it promises: the same seed gives the same run, byte for byte (the
// trace's hash), whatever order Go's maps iterate in; after every step the
// checker asserts each rule of rules.go as far as the ground truth lets it
// be judged, and at the end the clients' history is checked for stale
// reads; a failure names its seed, step, simulated time and rule, and
// replays exactly; with a known fix turned off (internal/revert), the
// short seed set finds it.
//
// What is real, what is simulated, each rule of the checker and how to
// replay a seed: docs/simulation.md, "How it is built".
package dst
