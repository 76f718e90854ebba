// Package simseam lets the deterministic simulation (dst) take the chance
// out of the objects it drives: the jitter of a follower's read spacing
// and retry backoff comes from math/rand, which no seed fixes, so a run
// that drives a real follower would not replay. The seam is no part of
// any public API: each package whose objects draw jitter registers, in
// its init, a hook with Register, and the simulation sets an object's
// jitter with SetJitter after building it and before running it.
// Being internal, the package cannot be imported from outside the module;
// production code never calls SetJitter, so every object keeps drawing
// from math/rand.
package simseam

import (
	"fmt"
	"sync"
)

var (
	mu    sync.Mutex
	hooks []func(obj any, jitter func() float64) bool
)

// Register adds a hook that sets the jitter source of the objects it
// knows and reports whether it knew obj.
func Register(hook func(obj any, jitter func() float64) bool) {
	mu.Lock()
	defer mu.Unlock()
	hooks = append(hooks, hook)
}

// SetJitter makes obj draw every jitter from jitter (a number in [0, 1)).
// It panics when no package registered a hook for obj's type: a
// simulation that believes it fixed the chance and did not would not
// replay.
func SetJitter(obj any, jitter func() float64) {
	mu.Lock()
	hs := hooks
	mu.Unlock()
	for _, h := range hs {
		if h(obj, jitter) {
			return
		}
	}
	panic(fmt.Sprintf("simseam: no hook sets the jitter of a %T", obj))
}
