package leader_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/leader"
)

func TestCASWithSession(t *testing.T) {
	consul := testenv.StartConsul(t)
	client := consul.Client
	const (
		heldLock = "mcrib/cas/leader"
		freeLock = "mcrib/cas-free/leader"
	)
	newSession := func() string {
		t.Helper()
		id, _, err := client.Session().Create(&api.SessionEntry{Behavior: api.SessionBehaviorRelease}, nil)
		if err != nil {
			t.Fatalf("creating session: %v", err)
		}
		t.Cleanup(func() { _, _ = client.Session().Destroy(id, nil) })
		return id
	}
	holder, other := newSession(), newSession()
	if ok, _, err := client.KV().Acquire(&api.KVPair{Key: heldLock, Value: []byte("me"), Session: holder}, nil); err != nil || !ok {
		t.Fatalf("acquiring %s: ok %v, err %v", heldLock, ok, err)
	}
	if _, err := client.KV().Put(&api.KVPair{Key: freeLock, Value: []byte("nobody")}, nil); err != nil {
		t.Fatalf("writing %s: %v", freeLock, err)
	}

	// put writes key twice and returns the index of the first (stale) and
	// the second (current) version.
	put := func(key string) (stale, current uint64) {
		t.Helper()
		var idx [2]uint64
		for i, v := range []string{"old", "current"} {
			if _, err := client.KV().Put(&api.KVPair{Key: key, Value: []byte(v)}, nil); err != nil {
				t.Fatalf("writing %s: %v", key, err)
			}
			kv, _, err := client.KV().Get(key, nil)
			if err != nil || kv == nil {
				t.Fatalf("reading %s: %v", key, err)
			}
			idx[i] = kv.ModifyIndex
		}
		return idx[0], idx[1]
	}

	tests := []struct {
		name      string
		lockKey   string
		session   string
		exists    bool
		index     string // "zero", "current" or "stale"
		wantOK    bool
		wantErr   error
		wantValue string // "" means the key must not exist afterwards
		check     string // when set, an extra check that this key does not exist
	}{
		{"create when absent", heldLock, holder, false, "zero", true, nil, "new", ""},
		{"update at current index", heldLock, holder, true, "current", true, nil, "new", ""},
		{"stale index", heldLock, holder, true, "stale", false, nil, "current", ""},
		{"index 0 when the key exists", heldLock, holder, true, "zero", false, nil, "current", ""},
		{"session that does not hold the lock", heldLock, other, true, "current", false, nil, "current", ""},
		{"session that does not hold the lock, key absent", heldLock, other, false, "zero", false, nil, "", ""},
		{"lock held by nobody", freeLock, holder, true, "current", false, nil, "current", ""},
		{"lock key absent", "mcrib/cas-none/leader", holder, true, "current", false, nil, "current", ""},
		{"no session", heldLock, "", true, "current", false, leader.ErrNotLeader, "current", ""},
		{"extra check passes", heldLock, holder, true, "current", true, nil, "new", "mcrib/cas/absent"},
		{"extra check fails", heldLock, holder, true, "current", false, nil, "current", freeLock},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := "mcrib/cas/data/" + tt.name
			var index uint64
			if tt.exists {
				stale, current := put(key)
				switch tt.index {
				case "current":
					index = current
				case "stale":
					index = stale
				}
			}
			var checks []*api.KVTxnOp
			if tt.check != "" {
				checks = append(checks, &api.KVTxnOp{Verb: api.KVCheckNotExists, Key: tt.check})
			}
			ok, err := leader.CASWithSession(t.Context(), client, tt.lockKey, tt.session, key, []byte("new"), index, checks...)
			if ok != tt.wantOK || !errors.Is(err, tt.wantErr) {
				t.Fatalf("CASWithSession = %v, %v; want %v, %v", ok, err, tt.wantOK, tt.wantErr)
			}
			kv, _, err := client.KV().Get(key, nil)
			if err != nil {
				t.Fatalf("reading %s: %v", key, err)
			}
			switch {
			case tt.wantValue == "" && kv != nil:
				t.Errorf("%s = %q, want absent", key, kv.Value)
			case tt.wantValue != "" && (kv == nil || string(kv.Value) != tt.wantValue):
				t.Errorf("%s = %+v, want %q", key, kv, tt.wantValue)
			}
		})
	}

	t.Run("consul not answering", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		ok, err := leader.CASWithSession(ctx, client, heldLock, holder, "mcrib/cas/data/cancelled", []byte("new"), 0)
		if ok || err == nil {
			t.Fatalf("CASWithSession with a cancelled context = %v, %v; want false and an error", ok, err)
		}
	})
}
