package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/testenv"
)

// TestServeSlotsOfAResizedPool: on a pool resized from 4 to 8 slots,
// `mcrib serve --slots 16` exits 2 with one line naming --slots and both
// counts, and `--slots 4` (the count it was resized from) serves the 8
// slots with a warning.
func TestServeSlotsOfAResizedPool(t *testing.T) {
	consul := testenv.StartConsul(t)
	spec := cachenodes.SlotMapSpec{Pool: "default", Generation: 3, UpdatedAt: time.Now()}
	for i := range 4 {
		spec.Slots = append(spec.Slots, cachenodes.Node{ID: fmt.Sprintf("mc-%d", i), Addr: fmt.Sprintf("127.0.0.1:%d", 30000+i)})
	}
	m, err := cachenodes.NewSlotMap(spec)
	if err != nil {
		t.Fatal(err)
	}
	if m, err = m.Double(time.Now()); err != nil {
		t.Fatal(err)
	}
	body, err := cachenodes.EncodeStoredSlotMap(m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := consul.Client.KV().Put(&api.KVPair{Key: "mcrib/default/slotmap", Value: body}, nil); err != nil {
		t.Fatal(err)
	}
	listen := func() string { return fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t)) }

	code, _, stderr := runCLI(t, nil, "serve", "--consul", consul.HTTPAddr, "--slots", "16", "--listen", listen())
	if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 ||
		!strings.Contains(stderr, "--slots") || !strings.Contains(stderr, "has 8 slots") || !strings.Contains(stderr, "--slots is 16") {
		t.Fatalf("serve --slots 16 on a resized pool: exit %d, stderr %q", code, stderr)
	}

	cfg, err := parseServeConfig([]string{"--consul", consul.HTTPAddr, "--slots", "4", "--listen", listen(), "--probe-interval", "200ms"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	logs := &testenv.SyncBuffer{}
	done := make(chan error, 1)
	go func() { done <- runServe(ctx, cfg, logs, logs) }()
	testenv.Eventually(t, 20*time.Second, "the warning that the pool was resized", func() bool {
		return strings.Contains(logs.String(), "the pool was resized")
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve --slots 4 on a pool resized from 4: %v", err)
	}
}
