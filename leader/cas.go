package leader

import (
	"context"
	"fmt"

	"github.com/hashicorp/consul/api"
)

// CASWithSession writes value at key with check-and-set at index (0 means
// only if the key does not exist) in one Consul transaction that also checks
// that lockKey is held by session, and any further checks the caller adds
// (check-index, check-not-exists, … ops on other keys). It returns ok=false
// and no error when any check fails, so a deposed leader can never overwrite a newer value;
// an error means the outcome is unknown (Consul could not be asked or gave
// no verdict). An empty session is refused with ErrNotLeader.
func CASWithSession(ctx context.Context, client *api.Client, lockKey, session, key string, value []byte, index uint64, checks ...*api.KVTxnOp) (ok bool, err error) {
	if session == "" {
		return false, ErrNotLeader
	}
	ops := api.TxnOps{{KV: &api.KVTxnOp{Verb: api.KVCheckSession, Key: lockKey, Session: session}}}
	for _, c := range checks {
		ops = append(ops, &api.TxnOp{KV: c})
	}
	ops = append(ops, &api.TxnOp{KV: &api.KVTxnOp{Verb: api.KVCAS, Key: key, Value: value, Index: index}})
	ok, _, _, err = client.Txn().Txn(ops, (&api.QueryOptions{}).WithContext(ctx))
	if err != nil {
		return false, fmt.Errorf("writing %s with check-and-set: %w", key, err)
	}
	return ok, nil
}

// CAS writes value at key with check-and-set at index, in one transaction
// that also checks that l still holds its lock and any further checks the
// caller adds, as CASWithSession does. The zero Lease is refused with
// ErrNotLeader.
func (l Lease) CAS(ctx context.Context, client *api.Client, key string, value []byte, index uint64, checks ...*api.KVTxnOp) (ok bool, err error) {
	return CASWithSession(ctx, client, l.key, l.session, key, value, index, checks...)
}
