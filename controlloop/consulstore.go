package controlloop

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/kvlayout"
	"github.com/mcrib/mcrib/leader"
	"github.com/mcrib/mcrib/mcribapi"
)

// ConsulStore is the Store of one pool in Consul KV, under
// <kv-prefix>/<pool>/ (docs/api.md, "Consul key layout"). Build it with
// NewConsulStore; it is safe for concurrent use.
type ConsulStore struct {
	client *api.Client
	keys   kvlayout.Pool
}

var (
	_ DrainStore  = (*ConsulStore)(nil)
	_ ResizeStore = (*ConsulStore)(nil)
	_ RollStore   = (*ConsulStore)(nil)
)

// KeepsResize reports that the store keeps the resize document.
func (s *ConsulStore) KeepsResize() bool { return true }

// KeepsRoll reports that the store keeps the roll document.
func (s *ConsulStore) KeepsRoll() bool { return true }

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
		flushesRaw []byte
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
		case kvlayout.Resize:
			st.ResizeIndex = p.ModifyIndex
			d, err := mcribapi.ParseStoredResize(p.Value)
			if err != nil {
				st.Corrupt, st.ResizeErr = append(st.Corrupt, kvlayout.Resize), err
				continue
			}
			st.Resize = d
		case kvlayout.Roll:
			st.RollIndex = p.ModifyIndex
			d, err := mcribapi.ParseStoredRoll(p.Value)
			if err != nil {
				st.Corrupt, st.RollErr = append(st.Corrupt, kvlayout.Roll), err
				continue
			}
			st.Roll = d
		case kvlayout.Flushes:
			st.FlushesIndex = p.ModifyIndex
			f, err := parseStoredFlushes(p.Value)
			if err != nil {
				st.Corrupt, st.FlushesErr, flushesRaw = append(st.Corrupt, kvlayout.Flushes), err, p.Value
				continue
			}
			st.Flushes = f
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
			if !isVote {
				continue
			}
			if p.Session == "" {
				// Its replica's session is gone: no vote, and the leader
				// deletes the key (deleteGoneVotes).
				if st.GoneVotes == nil {
					st.GoneVotes = make(map[string]uint64)
				}
				st.GoneVotes[replica] = p.ModifyIndex
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
	if flushesRaw != nil {
		st.Flushes = salvageFlushes(flushesRaw, st.SlotMap)
	}
	if slotMapErr != nil {
		return st, &CorruptError{Keys: st.Corrupt, Err: slotMapErr}
	}
	return st, nil
}

// WritePool stores w in one Consul transaction that checks the leader
// lock (the pool's leader key held by lease's session, unless lease is
// zero), the freeze key as read, and the slot map at the version read:
// the map is written with check-and-set (with the replacement times) only
// when w.SlotMap is set, and checked otherwise; the flushes document is
// set or deleted with check-and-set on its own version, or checked; the
// drain, resize and roll documents likewise.
func (s *ConsulStore) WritePool(ctx context.Context, read Snapshot, lease leader.Lease, w PoolWrite) (ok bool, err error) {
	var ops api.TxnOps
	add := func(op *api.KVTxnOp) { ops = append(ops, &api.TxnOp{KV: op}) }
	if !lease.IsZero() {
		// The check of leader.Lease.CAS, on the pool's lock key.
		add(&api.KVTxnOp{Verb: api.KVCheckSession, Key: s.keys.Leader(), Session: lease.Session()})
	}
	if read.Freeze != nil {
		add(&api.KVTxnOp{Verb: api.KVCheckIndex, Key: s.keys.Freeze(), Index: read.FreezeIndex})
	} else {
		add(&api.KVTxnOp{Verb: api.KVCheckNotExists, Key: s.keys.Freeze()})
	}
	if w.SlotMap != nil {
		body, err := cachenodes.EncodeStoredSlotMap(w.SlotMap)
		if err != nil {
			return false, err
		}
		times, err := json.Marshal(w.Replacements)
		if err != nil {
			return false, fmt.Errorf("encoding the replacement times: %w", err)
		}
		add(&api.KVTxnOp{Verb: api.KVCAS, Key: s.keys.SlotMap(), Value: body, Index: read.SlotMapIndex})
		add(&api.KVTxnOp{Verb: api.KVSet, Key: s.keys.Replacements(), Value: times})
	} else {
		add(checkOp(s.keys.SlotMap(), read.SlotMapIndex))
	}
	flushes, err := s.flushesOp(w.Flushes, read.FlushesIndex)
	if err != nil {
		return false, err
	}
	add(flushes)
	drain, err := s.drainOp(w.Drain, read.DrainIndex)
	if err != nil {
		return false, err
	}
	add(drain)
	resize, err := s.resizeOp(w.Resize, read.ResizeIndex)
	if err != nil {
		return false, err
	}
	add(resize)
	roll, err := s.rollOp(w.Roll, read.RollIndex)
	if err != nil {
		return false, err
	}
	add(roll)
	ok, _, _, err = s.client.Txn().Txn(ops, (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return false, fmt.Errorf("writing %s in one transaction: %w", s.keys.Prefix(), err)
	}
	return ok, nil
}

// checkOp is the transaction operation that checks key is at index (0:
// that it does not exist).
func checkOp(key string, index uint64) *api.KVTxnOp {
	if index == 0 {
		return &api.KVTxnOp{Verb: api.KVCheckNotExists, Key: key}
	}
	return &api.KVTxnOp{Verb: api.KVCheckIndex, Key: key, Index: index}
}

// flushesOp is the transaction operation on the flushes key: a check that
// it is as read (doc nil), or its check-and-set replacement by doc (a
// delete when doc has no entry).
func (s *ConsulStore) flushesOp(doc *FlushesDoc, index uint64) (*api.KVTxnOp, error) {
	key := s.keys.Flushes()
	switch {
	case doc == nil || (len(doc.Flushes) == 0 && index == 0):
		return checkOp(key, index), nil
	case len(doc.Flushes) == 0:
		return &api.KVTxnOp{Verb: api.KVDeleteCAS, Key: key, Index: index}, nil
	}
	body, err := encodeFlushes(doc)
	if err != nil {
		return nil, err
	}
	return &api.KVTxnOp{Verb: api.KVCAS, Key: key, Value: body, Index: index}, nil
}

// drainOp is the transaction operation on the drain key: a check that it
// is as read (doc nil), or its check-and-set replacement by doc (a delete
// when doc has no zones).
func (s *ConsulStore) drainOp(doc *mcribapi.DrainDoc, index uint64) (*api.KVTxnOp, error) {
	key := s.keys.Drain()
	switch {
	case doc == nil || (len(doc.Zones) == 0 && index == 0):
		return checkOp(key, index), nil
	case len(doc.Zones) == 0:
		return &api.KVTxnOp{Verb: api.KVDeleteCAS, Key: key, Index: index}, nil
	}
	body, err := json.Marshal(storedDrain(*doc))
	if err != nil {
		return nil, fmt.Errorf("encoding the drain document: %w", err)
	}
	return &api.KVTxnOp{Verb: api.KVCAS, Key: key, Value: body, Index: index}, nil
}

// resizeOp is the transaction operation on the resize key: a check that
// it is as read (doc nil), or its check-and-set replacement by doc (a
// delete when doc has no entry).
func (s *ConsulStore) resizeOp(doc *mcribapi.ResizeDoc, index uint64) (*api.KVTxnOp, error) {
	key := s.keys.Resize()
	switch {
	case doc == nil || (doc.Resize == nil && index == 0):
		return checkOp(key, index), nil
	case doc.Resize == nil:
		return &api.KVTxnOp{Verb: api.KVDeleteCAS, Key: key, Index: index}, nil
	}
	body, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encoding the resize document: %w", err)
	}
	return &api.KVTxnOp{Verb: api.KVCAS, Key: key, Value: body, Index: index}, nil
}

// rollOp is the transaction operation on the roll key: a check that it
// is as read (doc nil), or its check-and-set replacement by doc (a delete
// when doc has no entry).
func (s *ConsulStore) rollOp(doc *mcribapi.RollDoc, index uint64) (*api.KVTxnOp, error) {
	key := s.keys.Roll()
	switch {
	case doc == nil || (doc.Roll == nil && index == 0):
		return checkOp(key, index), nil
	case doc.Roll == nil:
		return &api.KVTxnOp{Verb: api.KVDeleteCAS, Key: key, Index: index}, nil
	}
	body, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encoding the roll document: %w", err)
	}
	return &api.KVTxnOp{Verb: api.KVCAS, Key: key, Value: body, Index: index}, nil
}

// PutDrain stores doc with check-and-set against index (a delete when doc
// has no zones).
func (s *ConsulStore) PutDrain(ctx context.Context, doc mcribapi.DrainDoc, index uint64) (bool, error) {
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

// PutFreeze stores the freeze document.
func (s *ConsulStore) PutFreeze(ctx context.Context, f mcribapi.FreezeDoc) error {
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

// DeleteVote deletes the vote key of replica with check-and-set against
// index.
func (s *ConsulStore) DeleteVote(ctx context.Context, replica string, index uint64) (bool, error) {
	ok, _, err := s.client.KV().DeleteCAS(&api.KVPair{Key: s.keys.Vote(replica), ModifyIndex: index}, (&api.WriteOptions{}).WithContext(ctx))
	if err != nil {
		return false, fmt.Errorf("deleting %s: %w", s.keys.Vote(replica), err)
	}
	return ok, nil
}
