// Package controlloop keeps the slot map of one memcached pool in step with
// the cache tier, level-based: every pass reads the whole state (the slot
// map and freeze in Consul KV, the last accepted Consul answer, mcrib's own
// probes), computes the desired map as a pure function of (previous map,
// membership, damping verdicts, freeze) in Decide and Build, and writes the
// difference with check-and-set. An error means backoff and retry, never
// exit.
//
// The invariants it keeps are those of CONTRACT.md section 6: a node that
// still answers keeps its slot however long Consul misses it; freeing comes
// before placing; a spare is flushed as part of its placement; a node that
// was unreachable is flushed when it answers again; an empty or sharply
// shrunken Consul answer is a fault of discovery; nothing moves while frozen.
package controlloop
