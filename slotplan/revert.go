package slotplan

import "github.com/mcrib/mcrib/internal/revert"

// The simulation's self-test turns fixes off with revert.Apply (see
// package revert), on an *Input before Decide and Build: with
// revert.WarmingUntilKept Build writes each warming it keeps with its
// until moved onto the clock of Now (until + PrevShift), and with
// revert.ListedOnce it lists as spares the nodes at an address the map
// names already (the same memcached under a second service ID).
func init() {
	revert.Register(func(obj any, s revert.Set) bool {
		in, ok := obj.(*Input)
		if ok {
			in.reverted = s
		}
		return ok
	})
}
