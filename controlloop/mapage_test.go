package controlloop

import (
	"context"
	"testing"
	"time"
)

// TestSlotMapReadAt: the map served is fresh as of the start of the last
// successful read of the store (or write); a failed read leaves it, so
// the map ages while Consul cannot be read.
func TestSlotMapReadAt(t *testing.T) {
	w := newWorld(t, 2)
	if at := w.loop.SlotMapReadAt(); !at.IsZero() {
		t.Fatalf("SlotMapReadAt before any read = %v, want zero", at)
	}
	w.seed(1, []string{"mc-1", "mc-2"}, nil)
	w.answer("mc-1", "mc-2")
	ctx := context.Background()
	first := w.clk.Now()
	if _, err := w.loop.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if at := w.loop.SlotMapReadAt(); !at.Equal(first) {
		t.Fatalf("after a pass: SlotMapReadAt = %v, want %v", at, first)
	}
	w.clk.Advance(3 * time.Second)
	w.store.mu.Lock()
	w.store.failReads = 1
	w.store.mu.Unlock()
	if _, err := w.loop.Reconcile(ctx); err == nil {
		t.Fatal("a pass over a failing read succeeded")
	}
	if at := w.loop.SlotMapReadAt(); !at.Equal(first) {
		t.Fatalf("after a failed read: SlotMapReadAt = %v, want it kept at %v", at, first)
	}
	w.clk.Advance(time.Second)
	again := w.clk.Now()
	if _, err := w.loop.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if at := w.loop.SlotMapReadAt(); !at.Equal(again) {
		t.Fatalf("after the next pass: SlotMapReadAt = %v, want %v", at, again)
	}
}
