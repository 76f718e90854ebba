package leader

import "github.com/mcrib/mcrib/internal/revert"

// The simulation's self-test turns fixes off with revert.Apply (see
// package revert), on an Elector before its Run: with revert.AssuredLimit
// IsAssured reports true whenever it leads, so a leader cut off from
// Consul's servers admits boots from the pool's limit.
func init() {
	revert.Register(func(obj any, s revert.Set) bool {
		e, ok := obj.(*Elector)
		if ok {
			e.reverted = s
		}
		return ok
	})
}
