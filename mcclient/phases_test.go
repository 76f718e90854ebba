package mcclient

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"go.opentelemetry.io/otel/attribute"

	"github.com/mcrib/mcrib/cachenodes"
)

// The routing of a slot that changes holder (docs/clients.md, "Moves
// without a stale read"), phase by phase, on fake nodes. A is the slot's
// holder during an announce and its old holder while it warms, B the
// incoming node or the new holder.

// nodeOf is the Node of a test ID, at the address slotMap gives it.
func nodeOf(id string) cachenodes.Node {
	if id == "" {
		return cachenodes.Node{}
	}
	return cachenodes.Node{ID: id, Addr: "127.0.0.1:" + port(id)}
}

// phaseMap builds a map of holders by slot at generation gen and
// revision rev; slot 0 is announced to incoming (when not ""), or warms
// from source (when not "") until until, ended at endedAt (when not zero).
func phaseMap(t *testing.T, gen, rev uint64, slots []string, incoming, source string, until, endedAt time.Time) *cachenodes.SlotMap {
	t.Helper()
	spec := cachenodes.SlotMapSpec{Pool: "default", Generation: gen, Revision: rev}
	for _, id := range slots {
		spec.Slots = append(spec.Slots, nodeOf(id))
	}
	if incoming != "" {
		in := nodeOf(incoming)
		spec.Incoming = make([]*cachenodes.Incoming, len(slots))
		spec.Incoming[0] = &cachenodes.Incoming{NodeID: in.ID, Addr: in.Addr, ServesAt: until.Add(-10 * time.Second), Until: until}
	}
	if source != "" {
		src := nodeOf(source)
		spec.Warming = make([]*cachenodes.Warming, len(slots))
		spec.Warming[0] = &cachenodes.Warming{NodeID: src.ID, Addr: src.Addr, Until: until, EndedAt: endedAt}
	}
	m, err := cachenodes.NewSlotMap(spec)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// phaseBed is a client over two slots whose slot 0 changes holder from A
// to B, with a key of slot 0 and the nodes.
type phaseBed struct {
	*testClient
	a, b, c *fakeNode
	k       string
	until   time.Time
}

// phase names a slot's state in the client's map at the bed's clock.
type phase string

const (
	announce phase = "announce"     // slot 0 holder a, incoming b
	warming  phase = "warming"      // holder b, warming from a, before until
	ended    phase = "ended"        // holder b, warming from a with ended_at
	untilGon phase = "until passed" // holder b, warming from a, until passed by the client's clock
	late     phase = "writes over"  // holder b, warming object kept past ended_at + 12 s
	removed  phase = "removed"      // holder b, no warming object
)

// newPhaseBed returns a client routing by a map of phase p, its clock at
// the map's reading (fresh).
func newPhaseBed(t *testing.T, p phase) *phaseBed {
	t.Helper()
	tc := newTestClient(t, Options{})
	now := tc.clock.Now()
	pb := &phaseBed{testClient: tc, k: keysOfSlot(0, 2, 1)[0], until: now.Add(time.Minute)}
	pb.a, pb.b, pb.c = tc.fleet.node(nodeOf("a").Addr), tc.fleet.node(nodeOf("b").Addr), tc.fleet.node(nodeOf("c").Addr)
	var m *cachenodes.SlotMap
	switch p {
	case announce:
		m = phaseMap(t, 2, 5, []string{"a", "c"}, "b", "", pb.until, time.Time{})
	case warming:
		m = phaseMap(t, 3, 6, []string{"b", "c"}, "", "a", pb.until, time.Time{})
	case ended:
		m = phaseMap(t, 3, 7, []string{"b", "c"}, "", "a", pb.until, now.Add(-time.Second))
	case untilGon:
		pb.until = now.Add(-time.Second)
		m = phaseMap(t, 3, 7, []string{"b", "c"}, "", "a", pb.until, time.Time{})
	case late:
		m = phaseMap(t, 3, 7, []string{"b", "c"}, "", "a", pb.until, now.Add(-cachenodes.WarmWriteGrace))
	case removed:
		m = phaseMap(t, 3, 8, []string{"b", "c"}, "", "", pb.until, time.Time{})
	}
	if err := tc.SetSlotMap(m); err != nil {
		t.Fatal(err)
	}
	return pb
}

// holds returns what n holds for key: its value, "tombstone" or "".
func holds(n *fakeNode, key string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	v, ok := n.items[key]
	switch {
	case !ok:
		return ""
	case string(v) == cachenodes.TombstoneValue:
		return "tombstone"
	}
	return string(v)
}

// put stores value (or a tombstone, for "tombstone") in n under key.
func put(n *fakeNode, key, value string) {
	it := &memcache.Item{Key: key, Value: []byte(value)}
	if value == "tombstone" {
		it = cachenodes.TombstoneItem(key)
	}
	n.Set(it)
}

// TestPhaseGet: where a Get reads in each phase, fresh or not.
func TestPhaseGet(t *testing.T) {
	for _, tt := range []struct {
		p      phase
		stale  bool   // the map is FreshFor old
		a, b   string // what A and B hold
		want   string // what Get answers ("" a miss)
		readsA bool   // whether A is read
		fillB  string // what B holds afterwards
	}{
		{announce, false, "v", "x", "v", true, "x"},
		{announce, false, "tombstone", "x", "", true, "x"},
		{announce, true, "v", "", "v", true, ""},
		{warming, false, "v", "w", "w", false, "w"},
		{warming, false, "v", "", "v", true, "v"},
		{warming, false, "v", "tombstone", "", false, "tombstone"},
		{warming, false, "tombstone", "", "", true, ""},
		{warming, true, "v", "", "", false, ""},
		{warming, true, "v", "w", "w", false, "w"},
		{ended, false, "v", "", "", false, ""},
		{ended, false, "v", "w", "w", false, "w"},
		{untilGon, false, "v", "", "", false, ""},
		{late, false, "v", "tombstone", "", false, "tombstone"},
		{removed, false, "v", "w", "w", false, "w"},
		{removed, false, "v", "tombstone", "", false, "tombstone"},
	} {
		name := string(tt.p)
		if tt.stale {
			name += ", stale"
		}
		t.Run(name+", A "+tt.a+", B "+tt.b, func(t *testing.T) {
			for _, multi := range []bool{false, true} {
				pb := newPhaseBed(t, tt.p)
				if tt.a != "" {
					put(pb.a, pb.k, tt.a)
				}
				if tt.b != "" {
					put(pb.b, pb.k, tt.b)
				}
				if tt.stale {
					pb.clock.Advance(cachenodes.FreshFor)
					if pb.MapFresh() {
						t.Fatal("a map FreshFor old is fresh")
					}
				}
				calls := pb.a.calls
				var got string
				if multi {
					items, err := pb.GetMulti([]string{pb.k})
					if err != nil {
						t.Fatal(err)
					}
					if it := items[pb.k]; it != nil {
						got = string(it.Value)
					}
				} else {
					it, err := pb.Get(pb.k)
					switch {
					case err == nil:
						got = string(it.Value)
					case !errors.Is(err, memcache.ErrCacheMiss):
						t.Fatal(err)
					}
				}
				if got != tt.want {
					t.Errorf("GetMulti %v: read %q, want %q", multi, got, tt.want)
				}
				if read := pb.a.calls > calls; read != tt.readsA {
					t.Errorf("GetMulti %v: A read %v, want %v", multi, read, tt.readsA)
				}
				if fill := holds(pb.b, pb.k); fill != tt.fillB {
					t.Errorf("GetMulti %v: B holds %q afterwards, want %q", multi, fill, tt.fillB)
				}
			}
		})
	}
}

// TestPhaseWrites: what A and B get of a Set, Replace, Delete or Add in
// each phase, and what the write answers.
func TestPhaseWrites(t *testing.T) {
	for _, tt := range []struct {
		p      phase
		op     string
		a, b   string // before
		wantA  string // after
		wantB  string
		errIs  error // nil: success
		aCalls bool  // A is called at all
	}{
		{announce, "set", "old", "", "new", "tombstone", nil, true},
		{announce, "replace", "old", "", "new", "tombstone", nil, true},
		{announce, "delete", "old", "", "", "tombstone", nil, true},
		{announce, "delete", "", "", "", "tombstone", memcache.ErrCacheMiss, true},
		{announce, "add", "", "", "new", "", nil, true},
		{announce, "add", "tombstone", "", "new", "", nil, true},
		{announce, "add", "old", "", "old", "", memcache.ErrNotStored, true},
		{warming, "set", "old", "", "new", "new", nil, true},
		{warming, "replace", "old", "", "new", "new", nil, true},
		{warming, "delete", "old", "old", "", "tombstone", nil, true},
		{warming, "delete", "", "", "", "tombstone", nil, true},
		{warming, "add", "old", "", "old", "new", nil, false},
		{warming, "add", "", "tombstone", "", "new", nil, false},
		{warming, "add", "", "old", "", "old", memcache.ErrNotStored, false},
		{ended, "set", "old", "", "", "new", nil, true},
		{ended, "replace", "old", "old", "", "new", nil, true},
		{ended, "delete", "old", "old", "", "tombstone", nil, true},
		{ended, "add", "old", "tombstone", "old", "new", nil, false},
		{untilGon, "set", "old", "", "", "new", nil, true},
		{untilGon, "delete", "old", "old", "", "tombstone", nil, true},
		{late, "set", "old", "", "old", "new", nil, false},
		{late, "delete", "old", "old", "old", "tombstone", nil, false},
		{removed, "set", "old", "", "old", "new", nil, false},
		{removed, "delete", "old", "old", "old", "", nil, false},
		{removed, "delete", "old", "tombstone", "old", "", nil, false},
		{removed, "add", "", "tombstone", "", "new", nil, false},
	} {
		t.Run(string(tt.p)+", "+tt.op+", A "+tt.a+", B "+tt.b, func(t *testing.T) {
			pb := newPhaseBed(t, tt.p)
			if tt.a != "" {
				put(pb.a, pb.k, tt.a)
			}
			if tt.b != "" {
				put(pb.b, pb.k, tt.b)
			}
			calls := pb.a.calls
			it := &memcache.Item{Key: pb.k, Value: []byte("new")}
			var err error
			switch tt.op {
			case "set":
				err = pb.Set(it)
			case "replace":
				err = pb.Replace(it)
			case "delete":
				err = pb.Delete(pb.k)
			case "add":
				err = pb.Add(it)
			}
			if tt.errIs == nil && err != nil || tt.errIs != nil && !errors.Is(err, tt.errIs) {
				t.Errorf("%s: %v, want %v", tt.op, err, tt.errIs)
			}
			if got := holds(pb.a, pb.k); got != tt.wantA {
				t.Errorf("A holds %q, want %q", got, tt.wantA)
			}
			if got := holds(pb.b, pb.k); got != tt.wantB {
				t.Errorf("B holds %q, want %q", got, tt.wantB)
			}
			if called := pb.a.calls > calls; called != tt.aCalls {
				t.Errorf("A called %v, want %v", called, tt.aCalls)
			}
			if tt.p != removed && slices.Contains(pb.b.deletes, pb.k) {
				t.Errorf("B got a delete while the slot changes holder, want none (tombstones only)")
			}
		})
	}
}

// TestPhaseFailures: a write succeeds only when A took it and B took it or
// its tombstone; what either did not take is queued for it, and replayed
// to B as a tombstone.
func TestPhaseFailures(t *testing.T) {
	for _, tt := range []struct {
		p     phase
		op    string
		down  string // "a" or "b"
		errIs []error
	}{
		{announce, "set", "b", []error{ErrIncomingMissed, ErrQueued}},
		{announce, "delete", "b", []error{ErrIncomingMissed, ErrQueued}},
		{announce, "delete", "a", []error{ErrQueued}},
		{warming, "set", "a", []error{ErrWarmSourceMissed, ErrQueued}},
		{warming, "delete", "a", []error{ErrWarmSourceMissed, ErrQueued}},
		{warming, "delete", "b", []error{ErrQueued}},
		{ended, "set", "a", []error{ErrWarmSourceMissed, ErrQueued}},
		{ended, "delete", "a", []error{ErrWarmSourceMissed, ErrQueued}},
		{ended, "set", "b", []error{ErrQueued}},
	} {
		t.Run(string(tt.p)+", "+tt.op+", "+tt.down+" down", func(t *testing.T) {
			pb := newPhaseBed(t, tt.p)
			put(pb.a, pb.k, "old")
			down := map[string]*fakeNode{"a": pb.a, "b": pb.b}[tt.down]
			down.setDown(true)
			var err error
			if tt.op == "set" {
				err = pb.Set(&memcache.Item{Key: pb.k, Value: []byte("new")})
			} else {
				err = pb.Delete(pb.k)
			}
			for _, want := range tt.errIs {
				if !errors.Is(err, want) {
					t.Errorf("%s with %s down: %v, want it to wrap %v", tt.op, tt.down, err, want)
				}
			}
			if n := pb.QueueLen(tt.down); n != 1 {
				t.Fatalf("%d queued for %s, want 1", n, tt.down)
			}
			down.setDown(false)
			pb.clock.Advance(DefaultRetryMax)
			pb.Replay()
			if n := pb.QueueLen(tt.down); n != 0 {
				t.Fatalf("%d still queued for %s after it answered", n, tt.down)
			}
			switch got := holds(down, pb.k); {
			case tt.down == "b" && got != "tombstone":
				t.Errorf("the replay left B with %q, want the tombstone", got)
			case tt.down == "b" && slices.Contains(pb.b.deletes, pb.k):
				t.Errorf("the replay sent B a delete, want a tombstone")
			case tt.down == "a" && got != "":
				t.Errorf("the replay left A with %q, want the key deleted", got)
			}
		})
	}
}

// TestPhaseVacantAnnounced: a vacant slot announced to a node: a write
// has no holder to reach, but leaves its tombstone in the incoming node,
// which serves the slot next.
func TestPhaseVacantAnnounced(t *testing.T) {
	tc := newTestClient(t, Options{})
	m := phaseMap(t, 2, 3, []string{"", "c"}, "b", "", tc.clock.Now().Add(time.Minute), time.Time{})
	if err := tc.SetSlotMap(m); err != nil {
		t.Fatal(err)
	}
	b := tc.fleet.node(nodeOf("b").Addr)
	k := keysOfSlot(0, 2, 1)[0]
	if err := tc.Delete(k); !errors.Is(err, memcache.ErrCacheMiss) || holds(b, k) != "tombstone" {
		t.Errorf("Delete in a vacant slot announced: %v, incoming holds %q; want a miss and the tombstone", err, holds(b, k))
	}
	delete(b.items, k)
	if err := tc.Set(&memcache.Item{Key: k, Value: []byte("v")}); !errors.Is(err, ErrVacantSlot) || holds(b, k) != "tombstone" {
		t.Errorf("Set in a vacant slot announced: %v, incoming holds %q; want ErrVacantSlot and the tombstone", err, holds(b, k))
	}
	if _, err := tc.Get(k); !errors.Is(err, memcache.ErrCacheMiss) {
		t.Errorf("Get in a vacant slot announced: %v, want a miss", err)
	}
}

// TestPhaseQueues: a node's queue is kept when it goes from incoming to
// holder (its tombstones are owed), replayed as tombstones while it takes
// them and as deletes once the warming object is gone; a parked node
// announced again was flushed, and its queue is dropped.
func TestPhaseQueues(t *testing.T) {
	pb := newPhaseBed(t, announce)
	pb.b.setDown(true)
	if err := pb.Delete(pb.k); !errors.Is(err, ErrIncomingMissed) || pb.QueueLen("b") != 1 {
		t.Fatalf("Delete with the incoming node down: %v, %d queued; want ErrIncomingMissed and 1", err, pb.QueueLen("b"))
	}
	// The move: b serves, warming from a. Its queue stays.
	if err := pb.SetSlotMap(phaseMap(t, 3, 6, []string{"b", "c"}, "", "a", pb.until, time.Time{})); err != nil {
		t.Fatal(err)
	}
	if n := pb.QueueLen("b"); n != 1 {
		t.Fatalf("the incoming node's queue holds %d after it took the slot, want its 1 tombstone kept", n)
	}
	pb.b.setDown(false)
	pb.clock.Advance(DefaultRetryMax)
	pb.SetSlotMap(pb.SlotMap()) // read again: fresh
	pb.Replay()
	if holds(pb.b, pb.k) != "tombstone" || len(pb.b.deletes) != 0 {
		t.Fatalf("the replay to the new holder left %q (deletes %v), want a tombstone and no delete", holds(pb.b, pb.k), pb.b.deletes)
	}
	// The warming object removed: a replay is a delete again.
	pb.clock.Set(pb.until.Add(cachenodes.WarmWriteGrace)) // past the warming's writes: nothing remembered
	pb.SetSlotMap(phaseMap(t, 3, 7, []string{"b", "c"}, "", "", pb.until, time.Time{}))
	pb.b.setDown(true)
	pb.Set(&memcache.Item{Key: pb.k, Value: []byte("v")})
	pb.b.setDown(false)
	pb.clock.Advance(DefaultRetryMax)
	pb.Replay()
	if !slices.Contains(pb.b.deletes, pb.k) || pb.QueueLen("b") != 0 {
		t.Fatalf("the replay after the warming object's removal: deletes %v, queue %d; want a delete", pb.b.deletes, pb.QueueLen("b"))
	}

	// A spare with a queue, then announced: it was flushed, its queue is
	// dropped; its tombstones queued during the announce are kept.
	tc := newTestClient(t, Options{})
	k := keysOfSlot(1, 2, 1)[0]
	if err := tc.SetSlotMap(phaseMap(t, 2, 1, []string{"a", "d"}, "", "", tc.clock.Now(), time.Time{})); err != nil {
		t.Fatal(err)
	}
	d := tc.fleet.node(nodeOf("d").Addr)
	d.setDown(true)
	tc.Delete(k)
	spec := phaseMap(t, 3, 2, []string{"a", "c"}, "", "", tc.clock.Now(), time.Time{}).Spec()
	spec.Spares = []cachenodes.Node{nodeOf("d")}
	parked, _ := cachenodes.NewSlotMap(spec)
	if err := tc.SetSlotMap(parked); err != nil || tc.QueueLen("d") != 1 {
		t.Fatalf("parked: %v, queue %d; want its delete kept", err, tc.QueueLen("d"))
	}
	spec = phaseMap(t, 3, 3, []string{"a", "c"}, "d", "", tc.clock.Now().Add(time.Minute), time.Time{}).Spec()
	announced, _ := cachenodes.NewSlotMap(spec)
	if err := tc.SetSlotMap(announced); err != nil || tc.QueueLen("d") != 0 {
		t.Fatalf("announced after being parked: %v, queue %d; want it dropped (flushed)", err, tc.QueueLen("d"))
	}
	if got := tc.counter(t, "mcrib_client_replay_drops", attribute.String("reason", dropNodeFlushed)); got != 1 {
		t.Errorf("%d drops counted as node_flushed, want 1", got)
	}
}
