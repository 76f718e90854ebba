// Package revert names the fixes that the deterministic simulation (dst)
// proves itself against. A simulation that cannot find the bugs we already
// know is no checker: its self-test turns one fix off at a time and
// expects the checker to find the fault within the short seed set.
//
// The switch is no part of any public API. Each package that holds fixes
// keeps an unexported Set on its objects and registers, in its init, a
// hook with Register; code of this module (the simulation, the packages'
// tests) turns fixes off on an object with Apply, after building it and
// before using it. Being internal, this package cannot be imported from
// outside the module, so no application can turn a fix off, and
// production code never calls Apply: every object's Set is zero, which
// keeps every fix in place. A Set is a plain value, safe for concurrent
// use.
package revert

import (
	"fmt"
	"strings"
	"sync"
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
	// WarmingUntilKept: a warming's until is written once and kept as
	// written by whichever leader rewrites the map (clients compare it
	// with their own clocks); it is never moved onto the writer's clock.
	WarmingUntilKept
	// RestartEndsCleanOnly: a restart of a node's memcached ends its owed
	// flush only when the new process has not stopped answering since it
	// started (one that restarted, took writes and stopped answering
	// again may have missed deletes).
	RestartEndsCleanOnly
	// FlushBaseCounted: the cmd_flush base of an owed flush comes only
	// from a reading that counts every flush a leader made of the node
	// (after its placement and after its last owed flush ended); any
	// other base is cmd_flush_unknown, read again before the flush.
	FlushBaseCounted
	// VotesLagPlacement: an episode whose votes began before the node was
	// placed into its slot, with none of this process's probes failing
	// since, owes no flush (the votes lag the probes).
	VotesLagPlacement
	// VotesLagFlush: an episode whose votes began before this process's
	// last flush of the node (or the end of its owed flush), with none of
	// its probes failing since, owes no flush.
	VotesLagFlush
	// AssuredLimit: a leader admits boots from the pool's limit only
	// while it is sure no other process leads (leader.Assured);
	// otherwise its share.
	AssuredLimit
	// ShareNotAlone: a replica's share of the boot limit divides by the
	// most replicas seen in the last 10 minutes, and by at least 2 while
	// another replica leads, never by a count that just restarted.
	ShareNotAlone
	// ListedOnce: one memcached (one address) is listed once in the slot
	// map, whatever service IDs it is registered under.
	ListedOnce
	// LostWritePending: the owed flushes of a write whose answer was lost
	// stay shown flush_pending until a read of the store says otherwise.
	LostWritePending
	// StoredBeforeFlush: a flush decided in a pass for a node that answers
	// already is stored first and carried out by a later pass, never in
	// the pass that decides it.
	StoredBeforeFlush
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
	{WarmingUntilKept, "warming-until-kept"},
	{RestartEndsCleanOnly, "restart-ends-clean-only"},
	{FlushBaseCounted, "flush-base-counted"},
	{VotesLagPlacement, "votes-lag-placement"},
	{VotesLagFlush, "votes-lag-flush"},
	{AssuredLimit, "assured-limit"},
	{ShareNotAlone, "share-not-alone"},
	{ListedOnce, "listed-once"},
	{LostWritePending, "lost-write-pending"},
	{StoredBeforeFlush, "stored-before-flush"},
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

// hooks are the packages' hooks (Register), in the order registered.
var hooks struct {
	mu  sync.Mutex
	all []func(obj any, s Set) bool
}

// Register adds a package's hook, from its init: hook turns the fixes of s
// off in obj and reports true when obj is one of the package's objects,
// or reports false and changes nothing.
func Register(hook func(obj any, s Set) bool) {
	hooks.mu.Lock()
	defer hooks.mu.Unlock()
	hooks.all = append(hooks.all, hook)
}

// Apply turns the fixes of s off in obj, an object that a package holding
// fixes built (a *controlloop.Loop, a *mcclient.Client, ...), replacing
// what an earlier Apply set. Call it after building obj and before using
// it: it is not safe concurrently with obj's methods. It panics when no
// registered package knows obj, which is a mistake of the caller.
func Apply(obj any, s Set) {
	hooks.mu.Lock()
	all := hooks.all
	hooks.mu.Unlock()
	for _, h := range all {
		if h(obj, s) {
			return
		}
	}
	panic(fmt.Sprintf("revert: no package holds fixes of a %T", obj))
}
