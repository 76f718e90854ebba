package controlloop

import "github.com/mcrib/mcrib/internal/revert"

// The simulation's self-test turns fixes off with revert.Apply (see
// package revert), on a Loop before its Load and Run. The loop honours
// FollowerFlush, ForgottenFlush, WarmFromOwing, CeilingAfterTakeover,
// RestartEndsCleanOnly, FlushBaseCounted, VotesLagPlacement,
// VotesLagFlush, LostWritePending and StoredBeforeFlush, and hands
// WarmingUntilKept and ListedOnce to slotplan with each pass's Input.
func init() {
	revert.Register(func(obj any, s revert.Set) bool {
		l, ok := obj.(*Loop)
		if !ok {
			return false
		}
		l.reverted = s
		l.tr.cfg.LegacyFlush = s.Reverted(revert.FollowerFlush)
		l.tr.cfg.Reverted = s
		return true
	})
}
