package apiserver

import "github.com/mcrib/mcrib/internal/revert"

// The simulation's self-test turns fixes off with revert.Apply (see
// package revert), on a Server before it serves: the fixes of its boot
// gate (internal/bootgate).
func init() {
	revert.Register(func(obj any, s revert.Set) bool {
		a, ok := obj.(*Server)
		if ok {
			revert.Apply(a.gate, s)
		}
		return ok
	})
}
