package flapdamp

import "time"

// Hold is the replacement hold: a slot-holding node that is absent from
// Consul and unreachable by mcrib's own probes, both continuously, for
// Duration is due for replacement. A node that still answers probes is never
// due, however long Consul misses it, and a node that Consul lists as
// present is never due either, however long probes fail.
//
// The hold counts from the later of the two times: the moment the node was
// both absent and unreachable. The zero value (Duration 0) makes a node due
// as soon as it is both; a negative Duration counts as 0. Hold is a value
// with no state and is safe for concurrent use.
type Hold struct {
	// Duration is how long the node must be absent and unreachable
	// (mcrib serve --hold).
	Duration time.Duration
}

// Due reports whether the node is due for replacement at now. absentSince is
// when the node was last seen to leave Consul and unreachableSince when its
// probes started failing; each is the zero Time while the node is present or
// reachable, and then Due is false. Due is true from exactly
// later(absentSince, unreachableSince) + Duration on.
func (h Hold) Due(absentSince, unreachableSince, now time.Time) bool {
	left, counting := h.Remaining(absentSince, unreachableSince, now)
	return counting && left == 0
}

// Remaining returns how long until Due turns true, and whether the hold is
// counting at all. It returns (0, false) when the node is present or
// reachable, (0, true) when the node is due, and otherwise the time left,
// which is at most Duration (a now before the start, from a clock that went
// backwards, counts as the start).
func (h Hold) Remaining(absentSince, unreachableSince, now time.Time) (time.Duration, bool) {
	if absentSince.IsZero() || unreachableSince.IsZero() {
		return 0, false
	}
	start := absentSince
	if unreachableSince.After(start) {
		start = unreachableSince
	}
	elapsed := max(now.Sub(start), 0)
	return max(h.Duration-elapsed, 0), true
}
