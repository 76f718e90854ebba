package controlloop

import (
	"context"
	"errors"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/leader"
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
	Freeze *FreezeDoc
	// FreezeIndex is the store's version of the freeze document as read.
	FreezeIndex uint64
	// LeaderID is the ID stored in the leader lock while a session holds
	// it; "" otherwise.
	LeaderID string
	// Replacements are the times of the slot replacements of the last
	// minute as the last leader stored them with the map.
	Replacements []time.Time
	// Votes are the live replicas' votes, by replica ID: only those whose
	// key a session still holds (a dead replica's vote does not count).
	Votes map[string]Vote
	// Corrupt names the documents that did not parse ("freeze": Freeze
	// then stands for a freeze, the safe reading; "drain": Drain is nil
	// and the drains make no progress until it is fixed).
	Corrupt []string
	// Drain is the drain document (CONTRACT.md section 7); nil when no
	// zone is drained (or the document is corrupt).
	Drain *DrainDoc
	// DrainIndex is the store's version of the drain document as read; 0
	// when there is none.
	DrainIndex uint64
	// DrainErr says why the drain document does not parse (nil unless
	// Corrupt names "drain").
	DrainErr error
}

// Vote is what one replica publishes of the nodes it probes: the nodes it
// cannot reach (for a whole probe interval) and since when. It is tied to
// the replica's session, so it counts only while the replica lives.
type Vote struct {
	// Session is the session holding the vote's key.
	Session string `json:"-"`
	// Unreachable maps node IDs to when the replica's probes began to fail.
	Unreachable map[string]time.Time `json:"unreachable"`
}

// Store keeps the pool's documents: the slot map and the freeze.
// *ConsulStore keeps them in Consul KV. Implementations are safe for
// concurrent use.
type Store interface {
	// Read returns the pool's keys in one read.
	Read(ctx context.Context) (Snapshot, error)
	// WriteSlotMap stores m with check-and-set against read, the snapshot
	// the pass decided from: in one step that fails (ok false, no error)
	// when the slot map or the freeze document changed since read, or when
	// lease no longer holds the leader lock, so that neither a freeze that
	// lands mid-pass nor a deposed leader is overridden. The zero lease
	// checks no lock (a process that leads alone). recent, the replacement
	// times of the last minute (this write's included), is stored in the
	// same step, so that a new leader honours the ceiling. An error means
	// the outcome is unknown.
	WriteSlotMap(ctx context.Context, m *cachenodes.SlotMap, read Snapshot, lease leader.Lease, recent []time.Time) (ok bool, err error)
	// PutFreeze stores the freeze document.
	PutFreeze(ctx context.Context, f FreezeDoc) error
	// DeleteFreeze removes the freeze document.
	DeleteFreeze(ctx context.Context) error
	// PutVote publishes replica's vote, held by the member lease (the
	// replica's session) so that it stops counting when the replica goes.
	PutVote(ctx context.Context, replica string, v Vote, member leader.Lease) error
}

// DrainStore is a Store that also keeps the drain document (CONTRACT.md
// section 7); *ConsulStore implements it. With a Store that does not, a
// drain is refused.
type DrainStore interface {
	Store
	// PutDrain stores doc with check-and-set against index, the version
	// read (0: only if there is none); a document without zones removes
	// the key. ok is false when the document changed since.
	PutDrain(ctx context.Context, doc DrainDoc, index uint64) (ok bool, err error)
	// WriteSlotMapDrain is WriteSlotMap that also, in the same step,
	// checks the drain document against read.DrainIndex and, when drain is
	// not nil, replaces it with *drain (removing the key when it has no
	// zones): a drain's pace is stored with the moves it made.
	WriteSlotMapDrain(ctx context.Context, m *cachenodes.SlotMap, read Snapshot, lease leader.Lease, recent []time.Time, drain *DrainDoc) (ok bool, err error)
}
