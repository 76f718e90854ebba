package hitrate

// What applications see of a warming slot (the hit rate during warm
// moves). While a slot warms, a client reads its new holder and, on a
// miss, its warm source (the old holder). The memcached counters of the
// two nodes then count one application get twice and one application hit
// as a miss:
//
//   - The new holder counts every get of the slot: a hit, or a miss that
//     the client forwards to the warm source.
//   - The warm source counts each forwarded get as a hit or a miss. On a
//     hit, mcrib's Go client (mcclient.warmGet, then fill) copies the value
//     into the new holder with add and, when the add stored it, reads the
//     warm source again to check that no delete raced with the copy: a
//     second get of the warm source, nearly always a hit (a miss only when
//     a delete of the key came in between). mcrouter's WarmUpRoute reads
//     the warm source once. The add is a store, counted by neither
//     get_hits nor get_misses.
//
// So an application's get of a warming slot is one get of the new holder;
// it missed, for the application, exactly when the new holder missed and
// the warm source missed too, which is a miss of the warm source either
// way (the re-check of a copy is a hit, not a miss). With the increases of
// one interval, H and M of the new holder and Gw (gets) and Mw (misses)
// of its warm source:
//
//	gets   = H + M
//	misses = min(M, Mw + max(0, M − Gw))
//	hits   = gets − misses
//
// The second term counts the new holder's misses that cannot all have
// been forwarded (Gw < M): a client that stopped reading the warm source
// (its own until passed, a write to it failed) or a router that does not
// warm (twemproxy) serves those misses as misses. mcclient's re-checks
// raise Gw only, so they never turn a hit into a miss; in the one case
// where a client stops forwarding while the map still warms (its until
// passed a little before the leader's, or its writes to the warm source
// failed), they may hide as many of its unforwarded misses as copies it
// re-checked, for the interval or two until the warming ends. The warm
// source's own gets are never counted again. A get of an application still on the
// previous map reaches the old holder as the slot's holder: it is counted
// among the warm source's, which can only make this estimate lower, and
// lasts only until that client takes the new map.

// pairDelta is one interval's increase of a node's counters.
type pairDelta struct {
	hits, misses uint64
}

// applicationView returns the hits and misses applications saw of a
// warming slot in one interval: holder is the new holder's increase,
// source its warm source's (see above).
func applicationView(holder, source pairDelta) (hits, misses uint64) {
	gets := holder.hits + holder.misses
	srcGets := source.hits + source.misses
	misses = source.misses
	if holder.misses > srcGets {
		misses += holder.misses - srcGets
	}
	misses = min(misses, holder.misses)
	return gets - misses, misses
}

// A split's warm source (docs/api.md, "Growing the pool") is slot s's
// holder, which keeps serving slot s while it warms the node its twin went
// to: its counters hold slot s's own gets as well as those forwarded to
// it. Its gets then count, except for the new holder's misses it was
// forwarded (which the new holder counted already); its misses are all
// the applications' (of slot s, or of the twin's keys it did not hold).
// With the increases of one interval, H and M of the new holder and Gw and
// Mw of the source:
//
//	gets   = H + M + max(0, Gw − M)
//	misses = min(gets, Mw + max(0, M − Gw))
//	hits   = gets − misses
//
// (so a split whose every get hits reads 1.00, not the 0.50 of counting
// the forwarded gets as misses of the new holder and hits of the source).
// A client's re-check of a copy is a get of the source that cannot be
// told from one of slot s: it counts as a hit of slot s, so the estimate
// errs high by at most the copies re-checked in the interval.

// splitView returns the hits and misses applications saw of a split's
// twin and of the slot s its warm source holds, in one interval: holder
// is the twin's new holder's increase, source slot s's holder's.
func splitView(holder, source pairDelta) (hits, misses uint64) {
	srcGets := source.hits + source.misses
	gets := holder.hits + holder.misses
	if srcGets > holder.misses {
		gets += srcGets - holder.misses
	}
	misses = source.misses
	if holder.misses > srcGets {
		misses += holder.misses - srcGets
	}
	misses = min(misses, gets)
	return gets - misses, misses
}
