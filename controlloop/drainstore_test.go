package controlloop

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/leader"
	"github.com/mcrib/mcrib/mcribapi"
)

// TestConsulStoreDrain keeps the drain document in a real Consul: with
// check-and-set, in the slot map's transaction, removed when empty, and a
// corrupt one reported as such without failing the read.
func TestConsulStoreDrain(t *testing.T) {
	consul := testenv.StartConsul(t)
	ctx := context.Background()
	s := NewConsulStore(consul.Client, "mcrib", "p")
	doc := mcribapi.DrainDoc{Zones: map[string]*mcribapi.DrainEntry{"b": {Percent: 100, StepPercent: 10, StepInterval: "30s", Reason: "r", By: "ops", BaselineSlots: 2, State: "draining", Slots: 2}}}
	if ok, err := s.PutDrain(ctx, doc, 0); !ok || err != nil {
		t.Fatalf("first put: %v %v", ok, err)
	}
	if ok, err := s.PutDrain(ctx, doc, 0); ok || err != nil {
		t.Fatalf("a put of a document that changed since: %v %v", ok, err)
	}
	st, err := s.Read(ctx)
	if err != nil || st.Drain == nil || st.DrainIndex == 0 || st.Drain.Zones["b"].BaselineSlots != 2 {
		t.Fatalf("read: %+v %v", st.Drain, err)
	}
	if e := st.Drain.Zones["b"]; e.State != "" || e.Slots != 0 {
		t.Errorf("the answered fields were stored: %+v", e)
	}

	// In the slot map's transaction.
	m := slotMapOf(t, 1, []string{"a1", "b1"}, nil)
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	next := mcribapi.DrainDoc{Zones: map[string]*mcribapi.DrainEntry{"b": {Percent: 100, StepPercent: 10, StepInterval: "30s", Reason: "r", BaselineSlots: 2, LastStepAt: &at}}}
	if ok, err := s.WritePool(ctx, st, leader.Lease{}, PoolWrite{SlotMap: m, Drain: &next}); !ok || err != nil {
		t.Fatalf("write with the drain: %v %v", ok, err)
	}
	st2, err := s.Read(ctx)
	if err != nil || st2.SlotMap == nil || st2.Drain.Zones["b"].LastStepAt == nil || !st2.Drain.Zones["b"].LastStepAt.Equal(at) {
		t.Fatalf("read after the write: %v %+v %v", st2.SlotMap, st2.Drain, err)
	}
	// A stale drain index fails the whole write.
	if ok, err := s.WritePool(ctx, Snapshot{SlotMapIndex: st2.SlotMapIndex, DrainIndex: st.DrainIndex}, leader.Lease{}, PoolWrite{}); ok || err != nil {
		t.Fatalf("a write against a stale drain document: %v %v", ok, err)
	}
	// Empty: the key goes.
	if ok, err := s.PutDrain(ctx, mcribapi.DrainDoc{Zones: map[string]*mcribapi.DrainEntry{}}, st2.DrainIndex); !ok || err != nil {
		t.Fatalf("delete: %v %v", ok, err)
	}
	if p, _, _ := consul.Client.KV().Get("mcrib/p/drain", nil); p != nil {
		t.Fatalf("the drain key is still there: %s", p.Value)
	}
	// Corrupt: reported, the read goes on.
	if _, err := consul.Client.KV().Put(&api.KVPair{Key: "mcrib/p/drain", Value: []byte("{")}, nil); err != nil {
		t.Fatal(err)
	}
	st3, err := s.Read(ctx)
	if err != nil || st3.SlotMap == nil || st3.Drain != nil || st3.DrainIndex == 0 || !slices.Contains(st3.Corrupt, "drain") {
		t.Fatalf("read of a corrupt drain document: %+v %v", st3, err)
	}
}
