package controlloop

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/leader"
	"github.com/mcrib/mcrib/mcribapi"
)

// TestConsulStoreResize keeps the resize document in a real Consul: in the
// slot map's transaction with check-and-set, removed by an empty document,
// and a corrupt one reported as such without failing the read.
func TestConsulStoreResize(t *testing.T) {
	consul := testenv.StartConsul(t)
	ctx := context.Background()
	s := NewConsulStore(consul.Client, "mcrib", "p")
	st, err := s.Read(ctx)
	if err != nil || st.Resize != nil || st.ResizeIndex != 0 {
		t.Fatalf("empty read: %+v %v", st.Resize, err)
	}
	m, err := slotMapOf(t, 1, []string{"a1", "b1"}, nil).Double(time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC)
	doc := mcribapi.ResizeDoc{Resize: &mcribapi.ResizeEntry{From: 2, To: 4, Reason: "r", By: "ops", At: at, StepPercent: 10, StepInterval: "30s",
		LastStepAt: &at, Twins: 2, State: mcribapi.ResizeSplitting}}
	if ok, err := s.WritePool(ctx, st, leader.Lease{}, PoolWrite{SlotMap: m, Resize: &doc}); !ok || err != nil {
		t.Fatalf("the first write: %v %v", ok, err)
	}
	st2, err := s.Read(ctx)
	if err != nil || st2.SlotMap.NumTwins() != 2 || st2.Resize == nil || st2.ResizeIndex == 0 || !st2.Resize.Resize.LastStepAt.Equal(at) {
		t.Fatalf("read after the write: %v %+v %v", st2.SlotMap, st2.Resize, err)
	}
	// A stale resize index fails the whole write.
	if ok, err := s.WritePool(ctx, Snapshot{SlotMapIndex: st2.SlotMapIndex}, leader.Lease{}, PoolWrite{}); ok || err != nil {
		t.Fatalf("a write against a stale resize document: %v %v", ok, err)
	}
	if ok, err := s.WritePool(ctx, st2, leader.Lease{}, PoolWrite{Resize: &mcribapi.ResizeDoc{}}); !ok || err != nil {
		t.Fatalf("the removal: %v %v", ok, err)
	}
	if p, _, _ := consul.Client.KV().Get("mcrib/p/resize", nil); p != nil {
		t.Fatalf("the resize key is still there: %s", p.Value)
	}
	if _, err := consul.Client.KV().Put(&api.KVPair{Key: "mcrib/p/resize", Value: []byte("{not json")}, nil); err != nil {
		t.Fatal(err)
	}
	st3, err := s.Read(ctx)
	if err != nil || st3.Resize != nil || st3.ResizeErr == nil || st3.ResizeIndex == 0 {
		t.Fatalf("corrupt: %+v %v %v", st3.Resize, st3.ResizeErr, err)
	}
}
