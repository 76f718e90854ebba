package consulwatch

// nextIndex returns the WaitIndex of the query after an answer whose
// X-Consul-Index is got, when the answer before it (if seen) had index
// prev. It is the whole index rule of a watch, from Consul's documentation
// of blocking queries:
//
//   - An index that goes backwards (got < prev) starts over from 0. Consul
//     restarted with a lost or restored state, or a KV key was deleted and
//     written again: its indexes no longer relate to ours, and a query with
//     our old, higher index would block for the whole wait time before it
//     answered. Index 0 answers at once with the new truth.
//   - An index of 0 after an answer becomes 1. Consul should never answer
//     0, but some versions have; a WaitIndex of 0 does not block, so every
//     query would answer at once and the watch would turn into a busy loop
//     that loads the client and the servers. Waiting on index 1 is always
//     safe, even for data that does not exist yet.
//
// It is a pure function.
func nextIndex(prev, got uint64, seen bool) uint64 {
	switch {
	case seen && got < prev:
		return 0
	case got == 0:
		return 1
	default:
		return got
	}
}
