package leader_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcrib/mcrib/leader"
)

// TestLeaseAndConfirm checks the lease an Elector hands out: it writes
// while its term holds the lock, Confirm vouches for it, and once the lock
// is gone Confirm reports ErrNotLeader, the term ends and the old lease
// writes nothing.
func TestLeaseAndConfirm(t *testing.T) {
	consul := startConsul(t)
	client := consul.Client
	const key, data = "mcrib/lease/leader", "mcrib/lease/slotmap"
	a := startCandidate(t, consul, key, "127.0.0.1:7001")
	leaderOf(t, 15*time.Second, a)

	lease, ok := a.e.Lease()
	if !ok || lease.IsZero() {
		t.Fatalf("Lease() = %v, %v while leading", lease, ok)
	}
	if lease != leader.NewLease(key, a.e.Session()) {
		t.Errorf("the lease is not that of the term's session")
	}
	confirmed, err := a.e.Confirm(t.Context())
	if err != nil || confirmed != lease {
		t.Fatalf("Confirm while holding the lock = %v, %v", confirmed, err)
	}
	for _, tc := range []struct {
		name  string
		lease leader.Lease
		want  bool
	}{
		{"the term's lease", lease, true},
		{"another session", leader.NewLease(key, "not-a-session"), false},
		{"another lock", leader.NewLease("mcrib/other/leader", a.e.Session()), false},
		{"the zero lease", leader.Lease{}, false},
	} {
		held, err := leader.Held(t.Context(), client, tc.lease)
		if err != nil || held != tc.want {
			t.Errorf("Held(%s) = %v, %v; want %v", tc.name, held, err, tc.want)
		}
	}
	if ok, err := lease.CAS(t.Context(), client, data, []byte("v1"), 0); err != nil || !ok {
		t.Fatalf("CAS with the term's lease: %v, %v", ok, err)
	}
	if ok, err := (leader.Lease{}).CAS(t.Context(), client, data, []byte("v0"), 0); ok || !errors.Is(err, leader.ErrNotLeader) {
		t.Fatalf("CAS with the zero lease: %v, %v; want ErrNotLeader", ok, err)
	}
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := a.e.Confirm(cancelled); err == nil || errors.Is(err, leader.ErrNotLeader) {
		t.Fatalf("Confirm without an answer from Consul = %v; want an error other than ErrNotLeader", err)
	}
	if !a.e.IsLeader() {
		t.Fatal("a Confirm that got no answer ended the term")
	}

	// The lock is gone (an operator deleted it, or Consul lost its KV).
	if _, err := client.KV().Delete(key, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := a.e.Confirm(t.Context()); !errors.Is(err, leader.ErrNotLeader) {
		t.Fatalf("Confirm after the lock was deleted = %v; want ErrNotLeader", err)
	}
	if a.e.IsLeader() {
		t.Fatal("still leading after Confirm found the lock lost")
	}
	if _, ok := a.e.Lease(); ok {
		t.Fatal("Lease() still hands out a lease")
	}
	kv, _, err := client.KV().Get(data, nil)
	if err != nil || kv == nil {
		t.Fatalf("reading %s: %v", data, err)
	}
	if ok, err := lease.CAS(t.Context(), client, data, []byte("stale"), kv.ModifyIndex); ok || err != nil {
		t.Fatalf("CAS with the lost lease = %v, %v; want false, nil", ok, err)
	}
}
