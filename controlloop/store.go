package controlloop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/leader"
)

// Keys under <kv-prefix>/<pool>/ (CONTRACT.md section 2).
const (
	KeySlotMap   = "slotmap"
	KeyFreeze    = "freeze"
	KeyBootLimit = "bootlimit"
	KeyLeader    = "leader"
)

// ErrSlotCountMismatch is returned when the stored map of the pool has
// another number of slots than configured; the slot count is fixed for the
// life of a pool.
var ErrSlotCountMismatch = errors.New("controlloop: the stored slot map has another number of slots")

// PoolPrefix returns "<kv-prefix>/<pool>/".
func PoolPrefix(kvPrefix, pool string) string {
	return strings.Trim(kvPrefix, "/") + "/" + pool + "/"
}

// stored is one read of the pool's keys.
type stored struct {
	slotMap     *cachenodes.SlotMap
	slotIndex   uint64 // ModifyIndex of slotmap; 0 when absent
	freeze      *FreezeDoc
	freezeIndex uint64
	leaderID    string // value of the leader key while a session holds it
}

// store reads and writes the pool's keys in Consul KV. It is safe for
// concurrent use.
type store struct {
	client *api.Client
	prefix string
}

func (s *store) key(name string) string { return s.prefix + name }

// read returns the pool's keys in one round trip.
func (s *store) read(ctx context.Context) (stored, error) {
	pairs, _, err := s.client.KV().List(s.prefix, (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return stored{}, fmt.Errorf("reading %s from consul: %w", s.prefix, err)
	}
	var st stored
	for _, p := range pairs {
		switch strings.TrimPrefix(p.Key, s.prefix) {
		case KeySlotMap:
			m, err := cachenodes.ParseSlotMap(p.Value)
			if err != nil {
				return stored{}, fmt.Errorf("reading %s: %w", p.Key, err)
			}
			st.slotMap, st.slotIndex = m, p.ModifyIndex
		case KeyFreeze:
			var f FreezeDoc
			if err := json.Unmarshal(p.Value, &f); err != nil {
				return stored{}, fmt.Errorf("reading %s: %w", p.Key, err)
			}
			f.Frozen = true
			st.freeze, st.freezeIndex = &f, p.ModifyIndex
		case KeyLeader:
			if p.Session != "" {
				st.leaderID = string(p.Value)
			}
		}
	}
	return st, nil
}

// writeSlotMap stores m with check-and-set against slotIndex (0: only if
// absent), in one transaction that also checks that the freeze key is as
// read (so a freeze that lands mid-pass fails the write) and, when session
// is not empty, that the leader key is still held by session (so a deposed
// leader can never overwrite a newer map). ok is false when a check failed.
func (s *store) writeSlotMap(ctx context.Context, m *cachenodes.SlotMap, st stored, session string) (ok bool, err error) {
	body, err := json.Marshal(m)
	if err != nil {
		return false, fmt.Errorf("encoding the slot map: %w", err)
	}
	freeze := &api.KVTxnOp{Verb: api.KVCheckNotExists, Key: s.key(KeyFreeze)}
	if st.freeze != nil {
		freeze = &api.KVTxnOp{Verb: api.KVCheckIndex, Key: s.key(KeyFreeze), Index: st.freezeIndex}
	}
	if session != "" {
		return leader.CASWithSession(ctx, s.client, s.key(KeyLeader), session, s.key(KeySlotMap), body, st.slotIndex, freeze)
	}
	// No leadership configured (a single process): the same write without
	// the session check.
	ops := api.TxnOps{
		{KV: freeze},
		{KV: &api.KVTxnOp{Verb: api.KVCAS, Key: s.key(KeySlotMap), Value: body, Index: st.slotIndex}},
	}
	ok, _, _, err = s.client.Txn().Txn(ops, (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return false, fmt.Errorf("writing %s: %w", s.key(KeySlotMap), err)
	}
	return ok, nil
}

// putFreeze stores the freeze document.
func (s *store) putFreeze(ctx context.Context, f FreezeDoc) error {
	body, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("encoding the freeze document: %w", err)
	}
	_, err = s.client.KV().Put(&api.KVPair{Key: s.key(KeyFreeze), Value: body}, (&api.WriteOptions{}).WithContext(ctx))
	if err != nil {
		return fmt.Errorf("writing %s: %w", s.key(KeyFreeze), err)
	}
	return nil
}

// deleteFreeze removes the freeze document.
func (s *store) deleteFreeze(ctx context.Context) error {
	if _, err := s.client.KV().Delete(s.key(KeyFreeze), (&api.WriteOptions{}).WithContext(ctx)); err != nil {
		return fmt.Errorf("deleting %s: %w", s.key(KeyFreeze), err)
	}
	return nil
}
