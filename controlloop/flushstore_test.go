package controlloop

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/leader"
)

// TestConsulStoreFlushesInTheSlotMapTransaction keeps the flushes
// document in a real Consul: written by the lock's holder only, in one
// transaction with the slot map that checks the lock's session and the
// map's version, rewriting the map only when it changes, setting and
// deleting the flushes with check-and-set on their own version; a corrupt
// document is reported and read the safe way.
func TestConsulStoreFlushesInTheSlotMapTransaction(t *testing.T) {
	consul := testenv.StartConsul(t)
	c := consul.Client
	ctx := context.Background()
	s := NewConsulStore(c, "mcrib", "p")
	session := func() string {
		t.Helper()
		id, _, err := c.Session().Create(&api.SessionEntry{TTL: "30s"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	mine, other := session(), session()
	if ok, _, err := c.KV().Acquire(&api.KVPair{Key: "mcrib/p/leader", Value: []byte("me"), Session: mine}, nil); err != nil || !ok {
		t.Fatalf("acquiring the lock: %v %v", ok, err)
	}
	lease, deposed := leader.NewLease("mcrib/p/leader", mine), leader.NewLease("mcrib/p/leader", other)
	read := func() Snapshot {
		t.Helper()
		st, err := s.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	index := func(key string) uint64 {
		t.Helper()
		p, _, err := c.KV().Get(key, nil)
		if err != nil {
			t.Fatal(err)
		}
		if p == nil {
			return 0
		}
		return p.ModifyIndex
	}
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	a := OwedFlush{NodeID: "a", Addr: cacheNode("a").Addr, CmdFlush: 3, PID: 4242, StartedAt: at.Add(-time.Hour), Since: at, Reason: "r"}
	b := OwedFlush{NodeID: "b", Addr: cacheNode("b").Addr, CmdFlush: 1, PID: 7, Since: at, Reason: "r"}

	// The map, two replacements at one instant and an owed flush: one step.
	m := slotMapOf(t, 1, []string{"a", "b"}, nil)
	if ok, err := s.WritePool(ctx, read(), lease, PoolWrite{SlotMap: m, Replacements: []time.Time{at, at}, Flushes: flushesDoc([]OwedFlush{a})}); !ok || err != nil {
		t.Fatalf("the first write: %v %v", ok, err)
	}
	st := read()
	if st.SlotMap == nil || len(st.Flushes) != 1 || st.Flushes[0] != a || st.FlushesIndex == 0 || len(st.Replacements) != 2 || !st.Replacements[1].Equal(at) {
		t.Fatalf("read back: map %v, flushes %+v at %d, replacements %v", st.SlotMap, st.Flushes, st.FlushesIndex, st.Replacements)
	}
	var raw struct {
		Flushes []map[string]any `json:"flushes"`
	}
	p, _, _ := c.KV().Get("mcrib/p/flushes", nil)
	if err := json.Unmarshal(p.Value, &raw); err != nil || len(raw.Flushes) != 1 {
		t.Fatalf("the stored document %s: %v", p.Value, err)
	}
	for _, field := range []string{"node_id", "addr", "cmd_flush", "pid", "started_at", "since", "reason"} {
		if _, ok := raw.Flushes[0][field]; !ok {
			t.Errorf("the stored entry %s has no %q", p.Value, field)
		}
	}

	// The flushes alone: the map is checked, not rewritten, nor are the
	// replacements.
	mapAt, timesAt := index("mcrib/p/slotmap"), index("mcrib/p/replacements")
	if ok, err := s.WritePool(ctx, st, lease, PoolWrite{Flushes: flushesDoc([]OwedFlush{b, a})}); !ok || err != nil {
		t.Fatalf("a write of the flushes alone: %v %v", ok, err)
	}
	st2 := read()
	if index("mcrib/p/slotmap") != mapAt || index("mcrib/p/replacements") != timesAt || len(st2.Flushes) != 2 || st2.Flushes[0].NodeID != "a" {
		t.Fatalf("after the flushes alone: map index %d (was %d), replacements %d (was %d), flushes %+v", index("mcrib/p/slotmap"), mapAt, index("mcrib/p/replacements"), timesAt, st2.Flushes)
	}

	// Refused, changing nothing: a deposed leader, a map or a flushes
	// document changed since the read.
	stale := st2
	stale.SlotMapIndex++
	for name, try := range map[string]func() (bool, error){
		"a session that does not hold the lock": func() (bool, error) {
			return s.WritePool(ctx, st2, deposed, PoolWrite{Flushes: &FlushesDoc{}})
		},
		"a map changed since":   func() (bool, error) { return s.WritePool(ctx, stale, lease, PoolWrite{Flushes: &FlushesDoc{}}) },
		"flushes changed since": func() (bool, error) { return s.WritePool(ctx, st, lease, PoolWrite{Flushes: &FlushesDoc{}}) },
	} {
		if ok, err := try(); ok || err != nil {
			t.Errorf("%s: the write went through (%v, %v)", name, ok, err)
		}
	}
	if got := read().Flushes; len(got) != 2 {
		t.Fatalf("a refused write changed the flushes: %+v", got)
	}

	// None owed: the key goes.
	if ok, err := s.WritePool(ctx, st2, lease, PoolWrite{Flushes: &FlushesDoc{}}); !ok || err != nil {
		t.Fatalf("deleting the flushes: %v %v", ok, err)
	}
	if index("mcrib/p/flushes") != 0 {
		t.Fatal("the flushes key is still there with none owed")
	}

	// Corrupt: reported, and every slot holder its text names owes a
	// flush of unknown base.
	if _, err := c.KV().Put(&api.KVPair{Key: "mcrib/p/flushes", Value: []byte(`{"flushes": [{"node_id": "b", "cmd_fl`)}, nil); err != nil {
		t.Fatal(err)
	}
	st3 := read()
	if !slices.Contains(st3.Corrupt, "flushes") || st3.FlushesErr == nil || st3.FlushesIndex == 0 || len(st3.Flushes) != 1 || st3.Flushes[0].NodeID != "b" || st3.Flushes[0].PID != 0 {
		t.Fatalf("read of a corrupt flushes document: corrupt %v (%v), flushes %+v at %d", st3.Corrupt, st3.FlushesErr, st3.Flushes, st3.FlushesIndex)
	}
	if ok, err := s.WritePool(ctx, st3, lease, PoolWrite{Flushes: flushesDoc(st3.Flushes)}); !ok || err != nil {
		t.Fatalf("replacing the corrupt document: %v %v", ok, err)
	}
	if st4 := read(); len(st4.Corrupt) != 0 || len(st4.Flushes) != 1 {
		t.Fatalf("after the leader's rewrite: corrupt %v, flushes %+v", st4.Corrupt, st4.Flushes)
	}
}

// TestConsulStoreVotes keeps the replicas' votes in a real Consul: a vote
// carries its writer's at, a vote of an older mcrib (without at) still
// reads, and the key of a replica whose session is gone is listed as gone
// and deleted with check-and-set on its version.
func TestConsulStoreVotes(t *testing.T) {
	consul := testenv.StartConsul(t)
	c := consul.Client
	ctx := context.Background()
	s := NewConsulStore(c, "mcrib", "p")
	newSession := func() string {
		t.Helper()
		id, _, err := c.Session().Create(&api.SessionEntry{TTL: "30s"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	r1, r2 := newSession(), newSession()
	if err := s.PutVote(ctx, "r1:7070", Vote{Unreachable: map[string]time.Time{"a": at.Add(-time.Second)}, At: at}, leader.NewLease("", r1)); err != nil {
		t.Fatal(err)
	}
	old := []byte(`{"unreachable": {"a": "2026-12-01T09:59:58Z"}}`)
	if ok, _, err := c.KV().Acquire(&api.KVPair{Key: "mcrib/p/unreachable/r2:7070", Value: old, Session: r2}, nil); err != nil || !ok {
		t.Fatalf("acquiring r2's vote: %v %v", ok, err)
	}
	st, err := s.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v := st.Votes["r1:7070"]; !v.At.Equal(at) || v.Session != r1 || !v.Unreachable["a"].Equal(at.Add(-time.Second)) {
		t.Fatalf("r1's vote read back as %+v", v)
	}
	if v, ok := st.Votes["r2:7070"]; !ok || !v.At.IsZero() || len(v.Unreachable) != 1 {
		t.Fatalf("r2's vote without at read back as %+v (%v)", v, ok)
	}
	if len(st.GoneVotes) != 0 {
		t.Fatalf("gone votes %v while both sessions live", st.GoneVotes)
	}

	// r2 goes: its key stays, held by no session.
	if _, err := c.Session().Destroy(r2, nil); err != nil {
		t.Fatal(err)
	}
	st, err = s.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	idx, gone := st.GoneVotes["r2:7070"]
	if _, counted := st.Votes["r2:7070"]; !gone || counted || idx == 0 {
		t.Fatalf("after r2's session ended: votes %v, gone %v", st.Votes, st.GoneVotes)
	}
	if ok, err := s.DeleteVote(ctx, "r2:7070", idx-1); ok || err != nil {
		t.Fatalf("a delete at an older version went through: %v %v", ok, err)
	}
	if ok, err := s.DeleteVote(ctx, "r2:7070", idx); !ok || err != nil {
		t.Fatalf("deleting the gone vote: %v %v", ok, err)
	}
	if p, _, _ := c.KV().Get("mcrib/p/unreachable/r2:7070", nil); p != nil {
		t.Fatalf("the gone vote key is still there: %s", p.Value)
	}
}
