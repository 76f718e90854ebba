package mcclient

import (
	"fmt"
	"testing"

	"github.com/bradfitz/gomemcache/memcache"
)

// TestClientAfterDoubling checks that the Go client reads, after the first
// write of a resize, every one of 100,000 keys it stored before it: each
// twin names slot s's node, so no key reaches another memcached.
func TestClientAfterDoubling(t *testing.T) {
	tc := newTestClient(t, Options{})
	m := slotMap(t, 3, []string{"a", "b", "c", "d", "e", "f", "g", "h"}, "s")
	if err := tc.SetSlotMap(m); err != nil {
		t.Fatal(err)
	}
	const keys = 100_000
	for i := range keys {
		if err := tc.Set(&memcache.Item{Key: fmt.Sprintf("user:%d", i), Value: []byte("v")}); err != nil {
			t.Fatal(err)
		}
	}
	d, err := m.Double(tc.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := tc.SetSlotMap(d); err != nil {
		t.Fatalf("SetSlotMap(doubled): %v", err)
	}
	for i := range keys {
		key := fmt.Sprintf("user:%d", i)
		if _, err := tc.Get(key); err != nil {
			t.Fatalf("Get(%q) after the doubling: %v", key, err)
		}
	}
}
