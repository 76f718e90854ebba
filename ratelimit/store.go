package ratelimit

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hashicorp/consul/api"
)

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
	return s.get(ctx, 0, 0)
}

// Watch is Load as a blocking query: it returns when the key's index moves
// past waitIndex, or after about wait (Consul adds jitter), or when ctx
// ends. A Snapshot whose LastIndex equals waitIndex changed nothing.
func (s *Store) Watch(ctx context.Context, waitIndex uint64, wait time.Duration) (Snapshot, error) {
	return s.get(ctx, waitIndex, wait)
}

func (s *Store) get(ctx context.Context, waitIndex uint64, wait time.Duration) (Snapshot, error) {
	q := (&api.QueryOptions{WaitIndex: waitIndex, WaitTime: wait}).WithContext(ctx)
	pair, meta, err := s.kv.Get(s.key, q)
	if err != nil {
		return Snapshot{}, fmt.Errorf("reading %s from consul: %w", s.key, err)
	}
	snap := Snapshot{LastIndex: meta.LastIndex}
	if pair == nil {
		return snap, nil
	}
	snap.Found = true
	snap.ModifyIndex = pair.ModifyIndex
	doc, err := ParseDocument(pair.Value)
	if err != nil {
		return snap, fmt.Errorf("reading %s from consul: %w", s.key, err)
	}
	snap.Doc = doc
	return snap, nil
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
