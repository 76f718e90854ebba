package controlloop

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/kvlayout"
	"github.com/mcrib/mcrib/leader"
)

// ConsulStore is the Store of one pool in Consul KV, under
// <kv-prefix>/<pool>/ (CONTRACT.md section 2). Build it with
// NewConsulStore; it is safe for concurrent use.
type ConsulStore struct {
	client *api.Client
	keys   kvlayout.Pool
}

var _ DrainStore = (*ConsulStore)(nil)

// NewConsulStore returns the store of pool under kvPrefix in client's
// Consul.
func NewConsulStore(client *api.Client, kvPrefix, pool string) *ConsulStore {
	return &ConsulStore{client: client, keys: kvlayout.For(kvPrefix, pool)}
}

// Read returns the pool's keys in one round trip.
func (s *ConsulStore) Read(ctx context.Context) (Snapshot, error) {
	prefix := s.keys.Prefix()
	pairs, meta, err := s.client.KV().List(prefix, (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return Snapshot{}, fmt.Errorf("reading %s from consul: %w", prefix, err)
	}
	if meta != nil && meta.ResultsFilteredByACLs {
		return Snapshot{}, fmt.Errorf("reading %s from consul: %w", prefix, cachenodes.ErrACLHidden)
	}
	if len(pairs) == 0 {
		// Consul filters a listing by ACLs silently (for the anonymous
		// token without even a header): a read of one key is refused
		// instead, so a token that may not read the pool is told apart
		// from a pool with nothing stored yet.
		if _, _, err := s.client.KV().Get(s.keys.SlotMap(), (&api.QueryOptions{}).WithContext(ctx)); err != nil {
			return Snapshot{}, fmt.Errorf("reading %s from consul: %w", s.keys.SlotMap(), err)
		}
	}
	var (
		st         Snapshot
		slotMapErr error
	)
	for _, p := range pairs {
		name, _ := s.keys.Name(p.Key)
		switch name {
		case kvlayout.SlotMap:
			m, err := cachenodes.ParseSlotMap(p.Value)
			if err != nil {
				slotMapErr = err
				st.Corrupt = append(st.Corrupt, kvlayout.SlotMap)
				continue
			}
			st.SlotMap, st.SlotMapIndex = m, p.ModifyIndex
		case kvlayout.Freeze:
			f, err := parseStoredFreeze(p.Value)
			if err != nil {
				f = corruptFreeze(err)
				st.Corrupt = append(st.Corrupt, kvlayout.Freeze)
			}
			st.Freeze, st.FreezeIndex = f, p.ModifyIndex
		case kvlayout.Drain:
			st.DrainIndex = p.ModifyIndex
			d, err := parseStoredDrain(p.Value)
			if err != nil {
				st.Corrupt, st.DrainErr = append(st.Corrupt, kvlayout.Drain), err
				continue
			}
			st.Drain = d
		case kvlayout.Leader:
			if p.Session != "" {
				st.LeaderID = string(p.Value)
			}
		case kvlayout.Replacements:
			// Unreadable times are no times: the ceiling then counts only
			// what this process saw itself.
			_ = json.Unmarshal(p.Value, &st.Replacements)
		default:
			replica, isVote := s.keys.VoteReplica(name)
			if !isVote || p.Session == "" {
				continue
			}
			var v Vote
			if err := json.Unmarshal(p.Value, &v); err != nil {
				continue // a replica's vote that cannot be read is no vote
			}
			v.Session = p.Session
			if st.Votes == nil {
				st.Votes = make(map[string]Vote)
			}
			st.Votes[replica] = v
		}
	}
	if slotMapErr != nil {
		return st, &CorruptError{Keys: st.Corrupt, Err: slotMapErr}
	}
	return st, nil
}

// WriteSlotMap stores m with check-and-set against read.SlotMapIndex (0:
// only if absent), in one transaction that also checks that the freeze key
// is as read and, unless lease is zero, that lease still holds the leader
// lock (leader.Lease.CAS).
func (s *ConsulStore) WriteSlotMap(ctx context.Context, m *cachenodes.SlotMap, read Snapshot, lease leader.Lease, recent []time.Time) (ok bool, err error) {
	return s.writeSlotMap(ctx, m, read, lease, recent)
}

// WriteSlotMapDrain is WriteSlotMap with the drain document checked
// against read.DrainIndex, or replaced by drain, in the same transaction.
func (s *ConsulStore) WriteSlotMapDrain(ctx context.Context, m *cachenodes.SlotMap, read Snapshot, lease leader.Lease, recent []time.Time, drain *DrainDoc) (ok bool, err error) {
	op, err := s.drainOp(drain, read.DrainIndex)
	if err != nil {
		return false, err
	}
	return s.writeSlotMap(ctx, m, read, lease, recent, op)
}

// drainOp is the transaction operation on the drain key: a check that it
// is as read (doc nil), or its check-and-set replacement by doc (a delete
// when doc has no zones).
func (s *ConsulStore) drainOp(doc *DrainDoc, index uint64) (*api.KVTxnOp, error) {
	key := s.keys.Drain()
	switch {
	case doc == nil && index == 0:
		return &api.KVTxnOp{Verb: api.KVCheckNotExists, Key: key}, nil
	case doc == nil:
		return &api.KVTxnOp{Verb: api.KVCheckIndex, Key: key, Index: index}, nil
	case len(doc.Zones) == 0 && index == 0:
		return &api.KVTxnOp{Verb: api.KVCheckNotExists, Key: key}, nil
	case len(doc.Zones) == 0:
		return &api.KVTxnOp{Verb: api.KVDeleteCAS, Key: key, Index: index}, nil
	}
	body, err := json.Marshal(storedDrain(*doc))
	if err != nil {
		return nil, fmt.Errorf("encoding the drain document: %w", err)
	}
	return &api.KVTxnOp{Verb: api.KVCAS, Key: key, Value: body, Index: index}, nil
}

// PutDrain stores doc with check-and-set against index (a delete when doc
// has no zones).
func (s *ConsulStore) PutDrain(ctx context.Context, doc DrainDoc, index uint64) (bool, error) {
	op, err := s.drainOp(&doc, index)
	if err != nil {
		return false, err
	}
	ok, _, _, err := s.client.Txn().Txn(api.TxnOps{{KV: op}}, (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return false, fmt.Errorf("writing %s: %w", s.keys.Drain(), err)
	}
	return ok, nil
}

func (s *ConsulStore) writeSlotMap(ctx context.Context, m *cachenodes.SlotMap, read Snapshot, lease leader.Lease, recent []time.Time, extra ...*api.KVTxnOp) (ok bool, err error) {
	body, err := cachenodes.EncodeStoredSlotMap(m)
	if err != nil {
		return false, err
	}
	times, err := json.Marshal(recent)
	if err != nil {
		return false, fmt.Errorf("encoding the replacement times: %w", err)
	}
	record := &api.KVTxnOp{Verb: api.KVSet, Key: s.keys.Replacements(), Value: times}
	freeze := &api.KVTxnOp{Verb: api.KVCheckNotExists, Key: s.keys.Freeze()}
	if read.Freeze != nil {
		freeze = &api.KVTxnOp{Verb: api.KVCheckIndex, Key: s.keys.Freeze(), Index: read.FreezeIndex}
	}
	checks := append([]*api.KVTxnOp{freeze, record}, extra...)
	if !lease.IsZero() {
		return lease.CAS(ctx, s.client, s.keys.SlotMap(), body, read.SlotMapIndex, checks...)
	}
	// No leader lock (a process that leads alone): the same write without
	// the lock check.
	ops := make(api.TxnOps, 0, len(checks)+1)
	for _, c := range checks {
		ops = append(ops, &api.TxnOp{KV: c})
	}
	ops = append(ops, &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVCAS, Key: s.keys.SlotMap(), Value: body, Index: read.SlotMapIndex}})
	ok, _, _, err = s.client.Txn().Txn(ops, (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return false, fmt.Errorf("writing %s: %w", s.keys.SlotMap(), err)
	}
	return ok, nil
}

// PutFreeze stores the freeze document.
func (s *ConsulStore) PutFreeze(ctx context.Context, f FreezeDoc) error {
	body, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("encoding the freeze document: %w", err)
	}
	_, err = s.client.KV().Put(&api.KVPair{Key: s.keys.Freeze(), Value: body}, (&api.WriteOptions{}).WithContext(ctx))
	if err != nil {
		return fmt.Errorf("writing %s: %w", s.keys.Freeze(), err)
	}
	return nil
}

// DeleteFreeze removes the freeze document.
func (s *ConsulStore) DeleteFreeze(ctx context.Context) error {
	if _, err := s.client.KV().Delete(s.keys.Freeze(), (&api.WriteOptions{}).WithContext(ctx)); err != nil {
		return fmt.Errorf("deleting %s: %w", s.keys.Freeze(), err)
	}
	return nil
}

// PutVote stores replica's vote under unreachable/<replica>, acquired by the
// member lease's session.
func (s *ConsulStore) PutVote(ctx context.Context, replica string, v Vote, member leader.Lease) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding the vote: %w", err)
	}
	ok, err := member.Put(ctx, s.client, s.keys.Vote(replica), body)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("writing %s: held by another session (two replicas with the ID %q?)", s.keys.Vote(replica), replica)
	}
	return nil
}
