package cachenodes

import "github.com/mcrib/mcrib/internal/revert"

// The simulation's self-test turns fixes off with revert.Apply (see
// package revert): with revert.GenerationOrder a SlotMapFollower takes a
// map of a lower generation too.
func init() {
	revert.Register(func(obj any, s revert.Set) bool {
		switch o := obj.(type) {
		case *SlotMapFollower:
			o.order = !s.Reverted(revert.GenerationOrder)
		default:
			return false
		}
		return true
	})
}
