package sim

import (
	"context"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/controlloop"
	"github.com/mcrib/mcrib/leader"
	"github.com/mcrib/mcrib/mcribapi"
)

// The sim's store keeps the roll document as ConsulStore does: with the
// slot map's write, checked against the version read, read back as
// stored, and removed by a document without an entry; so the loop of a
// simulation may carry out a roll.
func TestMemStoreRollCAS(t *testing.T) {
	ctx := context.Background()
	s := &memStore{}
	var store controlloop.Store = s
	if rs, ok := store.(controlloop.RollStore); !ok || !rs.KeepsRoll() {
		t.Fatal("the sim's store keeps no roll document")
	}
	m, err := cachenodes.NewSlotMap(cachenodes.SlotMapSpec{Pool: "sim", Generation: 1, Slots: []cachenodes.Node{{ID: "n", Addr: "10.0.0.1:11211"}}})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := s.Read(ctx)
	if st.Roll != nil || st.RollIndex != 0 {
		t.Fatalf("an empty store reads a roll %+v at %d", st.Roll, st.RollIndex)
	}
	at := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	doc := &mcribapi.RollDoc{Roll: &mcribapi.RollEntry{Reason: "memcached 1.6.38", By: "ops", At: at, RestartTimeout: "10m", State: mcribapi.RollRolling,
		Nodes: []mcribapi.RollNode{{NodeID: "n", State: mcribapi.RollWaiting}}}}
	if ok, _ := s.WritePool(ctx, st, leader.Lease{}, controlloop.PoolWrite{SlotMap: m, Roll: doc}); !ok {
		t.Fatal("WritePool of a roll at the versions read refused")
	}
	doc.Roll.Nodes[0].State = mcribapi.RollReleased // the caller's copy, not the stored one
	read, _ := s.Read(ctx)
	if read.Roll == nil || read.Roll.Roll == nil || read.RollIndex == 0 || read.Roll.Roll.Nodes[0].State != mcribapi.RollWaiting || read.SlotMap != m {
		t.Fatalf("read back %+v at %d; want the stored entry with its node waiting", read.Roll, read.RollIndex)
	}
	read.Roll.Roll.Reason = "changed" // the reader's copy, not the stored one
	if again, _ := s.Read(ctx); again.Roll.Roll.Reason != "memcached 1.6.38" {
		t.Errorf("a reader's change reached the store: %q", again.Roll.Roll.Reason)
	}
	read, _ = s.Read(ctx)
	stale := read
	stale.RollIndex--
	if ok, _ := s.WritePool(ctx, stale, leader.Lease{}, controlloop.PoolWrite{Roll: &mcribapi.RollDoc{}}); ok {
		t.Error("WritePool went through with a stale roll version")
	}
	if ok, _ := s.WritePool(ctx, read, leader.Lease{}, controlloop.PoolWrite{Roll: &mcribapi.RollDoc{}}); !ok {
		t.Fatal("WritePool removing the roll at the versions read refused")
	}
	if st, _ := s.Read(ctx); st.Roll != nil || st.RollIndex != 0 {
		t.Errorf("after a write without an entry: roll %+v at %d; want none", st.Roll, st.RollIndex)
	}
}
