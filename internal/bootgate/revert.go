package bootgate

import "github.com/mcrib/mcrib/internal/revert"

// The simulation's self-test turns fixes off with revert.Apply (see
// package revert), on a Gate before it serves. With
// revert.CallerErrorNotLeaderDown the body is not read before the forward
// (it streams to the leader) and any failed forward, the caller's doing
// included, takes the leader for down; with revert.ForwardedNeverShared a
// follower admits a boot marked forwarded from its share; with
// revert.ShareNotAlone a share divides by the replica count of the moment
// alone (a replica that just restarted may count itself alone).
func init() {
	revert.Register(func(obj any, s revert.Set) bool {
		g, ok := obj.(*Gate)
		if ok {
			g.reverted = s
		}
		return ok
	})
}
