package mcclient

import "github.com/mcrib/mcrib/internal/revert"

// The simulation's self-test turns fixes off with revert.Apply (see
// package revert): revert.WarmWriteDurable brings back the warm writes
// that answered success without the old holder, and
// revert.GenerationOrder lets a Client's SetSlotMap, and an HTTPFollower,
// take a map of a lower generation; revert.Tombstones deletes where a
// tombstone is set; revert.FreshWarmReads reads warm sources whatever the
// map's age; revert.EndedWarmingGrace stops the writes to a warm source
// when its reads end.
func init() {
	revert.Register(func(obj any, s revert.Set) bool {
		switch o := obj.(type) {
		case *Client:
			o.durable, o.order = !s.Reverted(revert.WarmWriteDurable), !s.Reverted(revert.GenerationOrder)
			o.tombstones, o.freshReads = !s.Reverted(revert.Tombstones), !s.Reverted(revert.FreshWarmReads)
			o.writeGrace = !s.Reverted(revert.EndedWarmingGrace)
		case *HTTPFollower:
			o.order = !s.Reverted(revert.GenerationOrder)
		default:
			return false
		}
		return true
	})
}
