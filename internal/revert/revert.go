// Package revert names the fixes that the deterministic simulation (dst)
// proves itself against. A simulation that cannot find the bugs we already
// know is no checker: its self-test turns one fix off at a time, through a
// Set passed in the options of the package that holds the fix, and expects
// the checker to find the fault within the short seed set.
//
// Production code never sets a Set: the zero value keeps every fix in
// place. A Set is a plain value, safe for concurrent use.
package revert

import (
	"fmt"
	"strings"
)

// Fix is one fix that a Set may turn off.
type Fix uint32

// The fixes the simulation's self-test reverts, one at a time.
const (
	// FollowerFlush: only the leader decides that a node owes a flush
	// (stored in the flushes document); a follower never decides one.
	FollowerFlush Fix = 1 << iota
	// ForgottenFlush: an owed flush is pool state in Consul KV, so a
	// restarted process carries it out.
	ForgottenFlush
	// WarmFromOwing: a move off a holder that owes a flush is cold;
	// nothing copies from it.
	WarmFromOwing
	// WarmWriteDurable: a client's delete or set of a key in a warming
	// slot succeeds only when no client can read the replaced value
	// through the old holder afterwards.
	WarmWriteDurable
	// CeilingAfterTakeover: replacements at the same instant count twice,
	// so a new leader honours --max-replacements-per-minute.
	CeilingAfterTakeover
	// CallerErrorNotLeaderDown: a follower counts the leader as
	// unreachable only when its own connection to the leader fails, never
	// because of its caller.
	CallerErrorNotLeaderDown
	// GenerationOrder: a client never takes a slot map of a lower
	// generation than one it took.
	GenerationOrder
	// ForwardedNeverShared: a replica that does not lead never admits a
	// boot marked forwarded.
	ForwardedNeverShared
	// Tombstones: from a slot's announce until its warming object is
	// removed, a client's delete leaves a tombstone in the incoming node
	// or new holder, never a delete.
	Tombstones
	// FreshWarmReads: a client whose map is not fresh reads no warm
	// source.
	FreshWarmReads
	// EndedWarmingGrace: after a warming's reads end (ended_at, or
	// until) clients still send the slot's writes to the old holder for
	// the write grace, and the leader keeps the warming object as long.
	EndedWarmingGrace
)

// names are the fixes' names, as the simulation's report prints them.
var names = []struct {
	f    Fix
	name string
}{
	{FollowerFlush, "follower-flush"},
	{ForgottenFlush, "forgotten-flush"},
	{WarmFromOwing, "warm-from-owing"},
	{WarmWriteDurable, "warm-write-durable"},
	{CeilingAfterTakeover, "ceiling-after-takeover"},
	{CallerErrorNotLeaderDown, "caller-error-not-leader-down"},
	{GenerationOrder, "generation-order"},
	{ForwardedNeverShared, "forwarded-never-shared"},
	{Tombstones, "tombstones"},
	{FreshWarmReads, "fresh-warm-reads"},
	{EndedWarmingGrace, "ended-warming-grace"},
}

// All lists every fix, in the order of the constants.
func All() []Fix {
	out := make([]Fix, len(names))
	for i, n := range names {
		out[i] = n.f
	}
	return out
}

// String returns the fix's name ("follower-flush").
func (f Fix) String() string {
	for _, n := range names {
		if n.f == f {
			return n.name
		}
	}
	return fmt.Sprintf("fix(%#x)", uint32(f))
}

// Parse returns the fix named name.
func Parse(name string) (Fix, error) {
	for _, n := range names {
		if n.name == name {
			return n.f, nil
		}
	}
	return 0, fmt.Errorf("revert: no fix is named %q", name)
}

// Set is a set of reverted fixes. The zero Set reverts nothing.
type Set uint32

// Of returns the Set that reverts fs.
func Of(fs ...Fix) Set {
	var s Set
	for _, f := range fs {
		s |= Set(f)
	}
	return s
}

// Reverted reports whether s turns f off.
func (s Set) Reverted(f Fix) bool { return s&Set(f) != 0 }

// String lists the reverted fixes' names, comma-separated ("" for none).
func (s Set) String() string {
	var parts []string
	for _, n := range names {
		if s.Reverted(n.f) {
			parts = append(parts, n.name)
		}
	}
	return strings.Join(parts, ",")
}
