package cachenodes

import "time"

// SlotMapReading is one successful read of the slot map by a follower:
// the map read and when the answering side last read that document from
// Consul, on the follower's clock (docs/api.md, "Fresh maps"). For a
// follower of mcrib's API it is the time the answer arrived less its
// X-Mcrib-Map-Age; for a follower of Consul KV, the time its own query's
// answer arrived. A zero ReadAt means the age is unknown (an answer
// without the header): the map is not fresh.
//
// A follower delivers a reading on every successful read, whether the map
// changed or not, so that a client that routes by the map knows how fresh
// it is.
type SlotMapReading struct {
	Map    *SlotMap
	ReadAt time.Time
}

// Fresh reports whether a map read at readAt is still fresh at now: under
// FreshFor old. A zero readAt is never fresh.
func Fresh(readAt, now time.Time) bool {
	return !readAt.IsZero() && now.Sub(readAt) < FreshFor
}
