package ratelimit

import "time"

// Clock tells the time. Service and Client read it for every admission and
// every controller step; tests pass a fake. The real clock's readings carry
// Go's monotonic reading, so wall-clock jumps do not mint or lose tokens.
type Clock interface {
	Now() time.Time
}

// realClock is the Clock of the running system.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }
