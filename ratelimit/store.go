package ratelimit

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hashicorp/consul/api"
)

// DocumentStore keeps the boot-limit document under one key, written with
// check-and-set. *Store implements it over Consul KV; a simulation
// supplies its own (ServiceOptions.Store). Implementations are safe for
// concurrent use.
type DocumentStore interface {
	// Key returns the key the document is kept under.
	Key() string
	// Load reads the document now, as Store.Load does: a stored value that
	// is not a valid document returns the Snapshot (Found and ModifyIndex
	// set) and an error wrapping ErrBadDocument.
	Load(ctx context.Context) (Snapshot, error)
	// CAS writes doc if the key's ModifyIndex still equals index (0: only
	// if the key does not exist); ok is false when someone else wrote
	// first.
	CAS(ctx context.Context, doc Document, index uint64) (ok bool, err error)
}

var _ DocumentStore = (*Store)(nil)

// Store keeps the boot-limit document in Consul KV under one key. Writes
// use check-and-set on the key's ModifyIndex, so concurrent writers (the
// leader's controller, operators on any replica) never overwrite each
// other's changes unseen.
//
// The zero value is not usable; build one with NewStore. A Store is safe
// for concurrent use.
type Store struct {
	kv  *api.KV
	key string
}

// NewStore returns a Store for key (see Key) in the KV store of client.
func NewStore(client *api.Client, key string) *Store {
	return &Store{kv: client.KV(), key: key}
}

// Key returns the KV key the Store reads and writes.
func (s *Store) Key() string { return s.key }

// Snapshot is one reading of the key; a plain value.
type Snapshot struct {
	// Doc is the document; it is the zero Document when Found is false or
	// the stored value could not be parsed.
	Doc Document
	// Found reports whether the key exists.
	Found bool
	// ModifyIndex is the key's ModifyIndex (0 when not found): the index
	// to pass to CAS to replace exactly this version.
	ModifyIndex uint64
	// LastIndex is the X-Consul-Index of the answer, for blocking queries.
	LastIndex uint64
}

// Load reads the document now. A stored value that is not a valid document
// returns the Snapshot (Found, ModifyIndex and LastIndex set, so the caller
// may overwrite it with CAS) and an error wrapping ErrBadDocument.
func (s *Store) Load(ctx context.Context) (Snapshot, error) {
	snap, _, err := s.get((&api.QueryOptions{}).WithContext(ctx))
	return snap, err
}

// get reads the key with q (a blocking query when q.WaitIndex is set). The
// metadata is nil only when Consul could not be read.
func (s *Store) get(q *api.QueryOptions) (Snapshot, *api.QueryMeta, error) {
	pair, meta, err := s.kv.Get(s.key, q)
	if err != nil {
		return Snapshot{}, nil, fmt.Errorf("reading %s from consul: %w", s.key, err)
	}
	snap := Snapshot{LastIndex: meta.LastIndex}
	if pair == nil {
		return snap, meta, nil
	}
	snap.Found = true
	snap.ModifyIndex = pair.ModifyIndex
	doc, err := ParseDocument(pair.Value)
	if err != nil {
		return snap, meta, fmt.Errorf("reading %s from consul: %w", s.key, err)
	}
	snap.Doc = doc
	return snap, meta, nil
}

// CAS writes doc if the key's ModifyIndex still equals index (0: only if
// the key does not exist yet). ok is false when someone else wrote first;
// re-read and decide again.
func (s *Store) CAS(ctx context.Context, doc Document, index uint64) (ok bool, err error) {
	if err := doc.Validate(); err != nil {
		return false, fmt.Errorf("writing %s: %w", s.key, err)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return false, fmt.Errorf("encoding %s: %w", s.key, err)
	}
	ok, _, err = s.kv.CAS(&api.KVPair{Key: s.key, Value: b, ModifyIndex: index}, (&api.WriteOptions{}).WithContext(ctx))
	if err != nil {
		return false, fmt.Errorf("writing %s to consul: %w", s.key, err)
	}
	return ok, nil
}
