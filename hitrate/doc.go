// Package hitrate measures a memcached pool's hit rate from the nodes'
// cumulative get_hits and get_misses: Meter turns successive readings of
// the nodes' Counters into a smoothed hit rate. It is a leaf: it imports
// only the standard library and does no I/O; the reader of the counters
// gives each reading and its time.
//
// What it promises:
//
//   - The rate stays in [0, 1] whatever the counters say (restarts,
//     counters going back, values near 2^64).
//   - A restart (a new pid, a smaller uptime or smaller counters) counts
//     the new counters from zero; a node seen for the first time, or again
//     after 10 readings without it, only sets a baseline.
//   - An interval without gets is no reading: the smoothed value is kept,
//     and Observe says so, so an idle pool never reads as a cold cache.
//   - The hit rate is the one the database behind the pool sees: a slot
//     with no live holder (vacant, or its holder unreachable by the pool's
//     verdict) counts as all misses for its share of the gets (Slots);
//     a served slot whose holder could not be read is only left out.
//   - A warming slot is counted as applications see it: a get its warm
//     source answered is a hit, and the warm source's own gets are not
//     counted again (warmpair.go gives the formula).
//   - A meter that leaves planned moves out (Meter.LeavesOutPlanned) never
//     counts what the nodes marked Planned counted, even once they are
//     counted again, and counts such a node again only once an interval's
//     hit rate of it came within 0.02 of the others' (or 10 minutes after
//     its mark ended).
//
// The boot limiter (package ratelimit) reads the pool's hit rate through
// a Meter, and the control loop each zone's. The smoothing is explained in
// the repository's docs/concepts.md, section "Hit rate".
package hitrate
