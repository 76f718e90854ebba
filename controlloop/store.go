package controlloop

import (
	"context"
	"errors"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/leader"
	"github.com/mcrib/mcrib/mcribapi"
)

// ErrSlotCountMismatch is returned when the stored map of the pool has
// another number of slots than configured; the slot count is fixed for the
// life of a pool.
var ErrSlotCountMismatch = errors.New("controlloop: the stored slot map has another number of slots")

// Snapshot is one read of the pool's keys.
type Snapshot struct {
	// SlotMap is the stored slot map; nil when there is none.
	SlotMap *cachenodes.SlotMap
	// SlotMapIndex is the store's version of the slot map as read (Consul's
	// ModifyIndex); 0 when there is none.
	SlotMapIndex uint64
	// Freeze is the freeze document; nil when membership is not frozen.
	Freeze *mcribapi.FreezeDoc
	// FreezeIndex is the store's version of the freeze document as read.
	FreezeIndex uint64
	// LeaderID is the ID stored in the leader lock while a session holds
	// it; "" otherwise.
	LeaderID string
	// Replacements are the times of the slot replacements of the last
	// minute as the last leader stored them with the map, by its clock
	// (the loop places them on its own against the map's updated_at,
	// remoteclock.go); two at one instant are two replacements.
	Replacements []time.Time
	// Votes are the live replicas' votes, by replica ID: only those whose
	// key a session still holds (a dead replica's vote does not count).
	Votes map[string]Vote
	// Corrupt names the documents that did not parse ("freeze": Freeze
	// then stands for a freeze, the safe reading; "drain": Drain is nil
	// and the drains make no progress until it is fixed; "flushes": see
	// Flushes).
	Corrupt []string
	// Drain is the drain document (docs/api.md, "Drain document"); nil when no
	// zone is drained (or the document is corrupt).
	Drain *mcribapi.DrainDoc
	// DrainIndex is the store's version of the drain document as read; 0
	// when there is none.
	DrainIndex uint64
	// DrainErr says why the drain document does not parse (nil unless
	// Corrupt names "drain").
	DrainErr error
	// Flushes are the flushes the pool owes (invariant 2), as the leader
	// stored them; nil when none is owed. When the document is corrupt
	// (Corrupt names "flushes"), they are the slot holders its text names
	// (salvageFlushes), each owing a flush whose base is unknown.
	Flushes []OwedFlush
	// FlushesIndex is the store's version of the flushes document as
	// read; 0 when there is none.
	FlushesIndex uint64
	// FlushesErr says why the flushes document does not parse (nil unless
	// Corrupt names "flushes").
	FlushesErr error
	// Resize is the resize document (docs/api.md, "Growing the pool");
	// nil when there is none (or it is corrupt: Corrupt names "resize").
	Resize *mcribapi.ResizeDoc
	// ResizeIndex is the store's version of the resize document as read;
	// 0 when there is none.
	ResizeIndex uint64
	// ResizeErr says why the resize document does not parse.
	ResizeErr error
	// Roll is the roll document (docs/api.md, "Rolling restarts"); nil
	// when there is none (or it is corrupt: Corrupt names "roll").
	Roll *mcribapi.RollDoc
	// RollIndex is the store's version of the roll document as read; 0
	// when there is none.
	RollIndex uint64
	// RollErr says why the roll document does not parse.
	RollErr error
	// GoneVotes are the vote keys that no session holds any more (their
	// replica is gone), by replica ID, each at the version read: the
	// leader deletes them (Store.DeleteVote).
	GoneVotes map[string]uint64
}

// Vote is what one replica publishes of the nodes it probes: the nodes it
// cannot reach (for a whole probe interval) and since when, by its own
// clock, with the moment it wrote the vote (At) by the same clock, so that
// a reader carries durations rather than instants across hosts
// (remoteclock.go). It is tied to the replica's session, so it counts only
// while the replica lives.
type Vote struct {
	// Session is the session holding the vote's key.
	Session string `json:"-"`
	// Unreachable maps node IDs to when the replica's probes began to fail.
	Unreachable map[string]time.Time `json:"unreachable"`
	// At is when the replica wrote the vote, by its clock; zero in a vote
	// of an older mcrib, which is read as written when first read.
	At time.Time `json:"at,omitzero"`
}

// PoolWrite is what one pass of the leader stores, in one step
// (Store.WritePool).
type PoolWrite struct {
	// SlotMap is the next slot map, nil when it does not change (the step
	// then checks that the stored one is still the one read).
	SlotMap *cachenodes.SlotMap
	// Replacements are the replacement times of the last minute (this
	// write's included), stored with the slot map when SlotMap is set, so
	// that a new leader honours the ceiling; two at one instant are two.
	Replacements []time.Time
	// Flushes, when not nil, replaces the flushes document with
	// check-and-set against the version read (the key is removed when it
	// holds no entry); nil leaves it as read, and checks that it is.
	Flushes *FlushesDoc
	// Drain, when not nil, replaces the drain document (removed when it
	// has no zones), for a store that keeps it (DrainStore); nil leaves it
	// as read, and checks that it is. A drain's pace is stored with the
	// moves it made.
	Drain *mcribapi.DrainDoc
	// Resize, when not nil, replaces the resize document (removed when it
	// has no entry), for a store that keeps it (ResizeStore); nil leaves
	// it as read, and checks that it is. The first write of a resize and
	// each split are stored with their entry.
	Resize *mcribapi.ResizeDoc
	// Roll, when not nil, replaces the roll document (removed when it has
	// no entry), for a store that keeps it (RollStore); nil leaves it as
	// read, and checks that it is. Each roll move is stored with the
	// entry that says so.
	Roll *mcribapi.RollDoc
}

// Store keeps the pool's documents: the slot map, the freeze, the flushes
// owed, the replicas' votes. *ConsulStore keeps them in Consul KV.
// Implementations are safe for concurrent use.
type Store interface {
	// Read returns the pool's keys in one read.
	Read(ctx context.Context) (Snapshot, error)
	// WritePool stores w with check-and-set against read, the snapshot
	// the pass decided from: in one step that fails (ok false, no error)
	// when the slot map, the freeze, the flushes or (for a DrainStore) the
	// drain document changed since read, or when lease no longer holds the
	// leader lock, so that neither a freeze that lands mid-pass nor a
	// deposed leader is overridden. The zero lease checks no lock (a
	// process that leads alone). An error means the outcome is unknown.
	WritePool(ctx context.Context, read Snapshot, lease leader.Lease, w PoolWrite) (ok bool, err error)
	// PutFreeze stores the freeze document.
	PutFreeze(ctx context.Context, f mcribapi.FreezeDoc) error
	// DeleteFreeze removes the freeze document.
	DeleteFreeze(ctx context.Context) error
	// PutVote publishes replica's vote, held by the member lease (the
	// replica's session) so that it stops counting when the replica goes.
	PutVote(ctx context.Context, replica string, v Vote, member leader.Lease) error
	// DeleteVote removes the vote key of replica, a key no session holds,
	// with check-and-set against index (its version as read), so that a
	// replica that just acquired it again keeps it. ok is false when the
	// key changed since.
	DeleteVote(ctx context.Context, replica string, index uint64) (ok bool, err error)
}

// DrainStore is a Store that also keeps the drain document (docs/api.md,
// "Drain document"); *ConsulStore implements it. With a Store that does not, a
// drain is refused.
type DrainStore interface {
	Store
	// PutDrain stores doc with check-and-set against index, the version
	// read (0: only if there is none); a document without zones removes
	// the key. ok is false when the document changed since.
	PutDrain(ctx context.Context, doc mcribapi.DrainDoc, index uint64) (ok bool, err error)
}
