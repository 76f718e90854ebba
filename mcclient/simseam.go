package mcclient

import "github.com/mcrib/mcrib/internal/simseam"

// The deterministic simulation fixes an HTTPFollower's jitter (the
// spacing of its reads and its retry backoff) with simseam.SetJitter
// before its Run, so that a run replays from its seed.
func init() {
	simseam.Register(func(obj any, jitter func() float64) bool {
		f, ok := obj.(*HTTPFollower)
		if ok {
			f.watch.Jitter = jitter
			f.watch.Backoff.Jitter = jitter
		}
		return ok
	})
}
