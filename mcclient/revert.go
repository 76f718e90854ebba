package mcclient

import "github.com/mcrib/mcrib/internal/revert"

// The simulation's self-test turns fixes off with revert.Apply (see
// package revert): revert.WarmWriteDurable brings back the warm writes
// that answered success without the old holder, and
// revert.GenerationOrder lets a Client's SetSlotMap, and an HTTPFollower,
// take a map of a lower generation.
func init() {
	revert.Register(func(obj any, s revert.Set) bool {
		switch o := obj.(type) {
		case *Client:
			o.durable, o.order = !s.Reverted(revert.WarmWriteDurable), !s.Reverted(revert.GenerationOrder)
		case *HTTPFollower:
			o.order = !s.Reverted(revert.GenerationOrder)
		default:
			return false
		}
		return true
	})
}
