package dst

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/consul/api"
)

// kvEntry is one key of the simulated KV store.
type kvEntry struct {
	value                               []byte
	flags                               uint64
	createIndex, modifyIndex, lockIndex uint64
	session                             string
}

func (e *kvEntry) pair(key string) *api.KVPair {
	return &api.KVPair{Key: key, CreateIndex: e.createIndex, ModifyIndex: e.modifyIndex, LockIndex: e.lockIndex,
		Flags: e.flags, Value: slices.Clone(e.value), Session: e.session}
}

// list returns the keys under prefix, sorted.
func (c *consulSim) list(prefix string) []*api.KVPair {
	var out []*api.KVPair
	for _, k := range sortedKeys(c.kv) {
		if strings.HasPrefix(k, prefix) {
			out = append(out, c.kv[k].pair(k))
		}
	}
	return out
}

// put stores value at key (a plain write).
func (c *consulSim) put(key string, value []byte, flags uint64, idx uint64) {
	e := c.kv[key]
	if e == nil {
		e = &kvEntry{createIndex: idx}
		c.kv[key] = e
	}
	e.value, e.flags, e.modifyIndex = slices.Clone(value), flags, idx
}

// acquire takes key for session s, as KV acquire does.
func (c *consulSim) acquire(key string, value []byte, flags uint64, s string) (bool, error) {
	if c.sessions[s] == nil {
		return false, fmt.Errorf("invalid session %q", s)
	}
	e := c.kv[key]
	if e != nil && e.session != "" && e.session != s {
		return false, nil
	}
	if until, ok := c.lockDelay[key]; ok && c.w.now < until && (e == nil || e.session != s) {
		return false, nil
	}
	idx := c.bump()
	held := e != nil && e.session == s
	c.put(key, value, flags, idx)
	e = c.kv[key]
	if !held {
		e.lockIndex++
	}
	e.session = s
	return true, nil
}

// release frees key if session s holds it.
func (c *consulSim) release(key string, value []byte, flags uint64, s string) bool {
	e := c.kv[key]
	if e == nil || e.session != s {
		return false
	}
	c.put(key, value, flags, c.bump())
	e.session = ""
	return true
}

// txn runs a transaction of KV operations: all or nothing. It returns the
// failed operations' errors (none: committed).
func (c *consulSim) txn(ops api.TxnOps) (api.TxnResults, api.TxnErrors) {
	type staged struct {
		key string
		e   *kvEntry // nil: deleted
	}
	view := func(st []staged, key string) *kvEntry {
		for i := len(st) - 1; i >= 0; i-- {
			if st[i].key == key {
				return st[i].e
			}
		}
		return c.kv[key]
	}
	var (
		st   []staged
		errs api.TxnErrors
		res  api.TxnResults
	)
	fail := func(i int, format string, args ...any) {
		errs = append(errs, &api.TxnError{OpIndex: i, What: fmt.Sprintf(format, args...)})
	}
	for i, op := range ops {
		kv := op.KV
		if kv == nil {
			fail(i, "only KV operations are simulated")
			continue
		}
		cur := view(st, kv.Key)
		write := func() {
			n := &kvEntry{value: slices.Clone(kv.Value), flags: kv.Flags}
			if cur != nil {
				n.createIndex, n.lockIndex, n.session = cur.createIndex, cur.lockIndex, cur.session
			}
			st = append(st, staged{key: kv.Key, e: n})
			res = append(res, &api.TxnResult{KV: &api.KVPair{Key: kv.Key}})
		}
		switch kv.Verb {
		case api.KVSet:
			write()
		case api.KVCAS:
			if (kv.Index == 0 && cur != nil) || (kv.Index != 0 && (cur == nil || cur.modifyIndex != kv.Index)) {
				fail(i, "failed to set key %q, index is stale", kv.Key)
				continue
			}
			write()
		case api.KVGet:
			if cur == nil {
				fail(i, "key %q doesn't exist", kv.Key)
				continue
			}
			res = append(res, &api.TxnResult{KV: cur.pair(kv.Key)})
		case api.KVCheckIndex:
			if cur == nil || cur.modifyIndex != kv.Index {
				fail(i, "current modify index %v for key %q does not match %d", modifyOf(cur), kv.Key, kv.Index)
			}
		case api.KVCheckNotExists:
			if cur != nil {
				fail(i, "key %q exists", kv.Key)
			}
		case api.KVCheckSession:
			if cur == nil || cur.session != kv.Session {
				fail(i, "key %q is not locked by session %q", kv.Key, kv.Session)
			}
		case api.KVDelete:
			st = append(st, staged{key: kv.Key})
		case api.KVDeleteCAS:
			if cur == nil || cur.modifyIndex != kv.Index {
				fail(i, "failed to delete key %q, index is stale", kv.Key)
				continue
			}
			st = append(st, staged{key: kv.Key})
		default:
			fail(i, "verb %q is not simulated", kv.Verb)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if len(st) > 0 {
		idx := c.bump()
		for _, s := range st {
			if s.e == nil {
				delete(c.kv, s.key)
				continue
			}
			if s.e.createIndex == 0 {
				s.e.createIndex = idx
			}
			s.e.modifyIndex = idx
			c.kv[s.key] = s.e
		}
	}
	return res, nil
}

func modifyOf(e *kvEntry) uint64 {
	if e == nil {
		return 0
	}
	return e.modifyIndex
}
