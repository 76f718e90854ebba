// Package kvlayout is the one place that names mcrib's keys in Consul KV
// (docs/api.md, "Consul key layout"): all the state of a pool lives under
// <kv-prefix>/<pool>/, one key per document.
package kvlayout

import "strings"

// Names of the keys under <kv-prefix>/<pool>/.
const (
	// SlotMap holds the slot map document, written by the leader only.
	SlotMap = "slotmap"
	// Freeze holds the freeze document while membership is frozen.
	Freeze = "freeze"
	// BootLimit holds the boot-limit document.
	BootLimit = "bootlimit"
	// Drain holds the drain document while a zone is drained.
	Drain = "drain"
	// Leader is the leader lock, a Consul session lock.
	Leader = "leader"
	// Unreachable is the folder of the replicas' votes: one key per replica
	// (its leader ID), held by its session, listing the nodes it cannot
	// reach (invariant 7). A key whose session is gone is no vote.
	Unreachable = "unreachable"
	// Replacements holds the times of the slot replacements of the last
	// minute, written with the slot map, so that a new leader honours
	// --max-replacements-per-minute across a takeover.
	Replacements = "replacements"
	// Flushes holds the flushes the pool owes (invariant 2): one entry per
	// node that must be flushed before it serves again, written by the
	// leader in the same transaction as the slot map.
	Flushes = "flushes"
	// Resize holds the resize document while a resize has an entry.
	Resize = "resize"
	// Roll holds the roll document while a roll has an entry.
	Roll = "roll"
)

// Checked returns the names of the documents that a read of the pool's
// keys parses and reports when one does not (the status's
// corrupt_documents, the gauge mcrib_kv_corrupt_documents{key}, each
// label created at 0): every document above but the leader lock and the
// votes (held by sessions, read for their holders only), the replacement
// times (unreadable times are none) and the boot limit (the limiter keeps
// its last good document). A document added here is checked everywhere.
func Checked() []string {
	return []string{SlotMap, Freeze, Drain, Flushes, Resize, Roll}
}

// Pool names the keys of one pool. The zero value names keys under "/";
// build one with For. A Pool is a plain value, safe for concurrent use.
type Pool struct {
	prefix string
}

// For returns the keys of pool under kvPrefix; slashes around kvPrefix are
// ignored.
func For(kvPrefix, pool string) Pool {
	return Pool{prefix: strings.Trim(kvPrefix, "/") + "/" + pool + "/"}
}

// Prefix returns "<kv-prefix>/<pool>/", the prefix of every key of the pool.
func (p Pool) Prefix() string { return p.prefix }

// Key returns the full key of name, one of the names above.
func (p Pool) Key(name string) string { return p.prefix + name }

// Name returns the name of key under the pool's prefix and whether key is
// under it.
func (p Pool) Name(key string) (string, bool) { return strings.CutPrefix(key, p.prefix) }

// SlotMap returns the key of the slot map document.
func (p Pool) SlotMap() string { return p.Key(SlotMap) }

// Freeze returns the key of the freeze document.
func (p Pool) Freeze() string { return p.Key(Freeze) }

// BootLimit returns the key of the boot-limit document.
func (p Pool) BootLimit() string { return p.Key(BootLimit) }

// Drain returns the key of the drain document.
func (p Pool) Drain() string { return p.Key(Drain) }

// Leader returns the key of the leader lock.
func (p Pool) Leader() string { return p.Key(Leader) }

// Vote returns the key of replica's vote: <prefix>/<pool>/unreachable/<replica>.
func (p Pool) Vote(replica string) string { return p.Key(Unreachable + "/" + replica) }

// VoteReplica returns the replica whose vote key is name (a name relative to
// the pool's prefix, as Name returns it) and whether name is a vote key.
func (p Pool) VoteReplica(name string) (string, bool) {
	r, ok := strings.CutPrefix(name, Unreachable+"/")
	return r, ok && r != ""
}

// Flushes returns <prefix>/<pool>/flushes.
func (p Pool) Flushes() string { return p.Key(Flushes) }

// Resize returns <prefix>/<pool>/resize.
func (p Pool) Resize() string { return p.Key(Resize) }

// Roll returns <prefix>/<pool>/roll.
func (p Pool) Roll() string { return p.Key(Roll) }

// Replacements returns <prefix>/<pool>/replacements.
func (p Pool) Replacements() string { return p.Key(Replacements) }
