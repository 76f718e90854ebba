package cachenodes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/internal/leakcheck"
	"github.com/mcrib/mcrib/internal/revert"
	"github.com/mcrib/mcrib/internal/testenv"
)

// slotMapJSON returns the document of a map of two slots at generation gen.
func slotMapJSON(t *testing.T, gen uint64, second Node, updated time.Time) []byte {
	t.Helper()
	b, err := json.Marshal(mustSlotMap(t, SlotMapSpec{Pool: "default", Generation: gen, UpdatedAt: updated, Slots: []Node{mc1, second}}))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// followRecorder runs a SlotMapFollower and records what it reports.
type followRecorder struct {
	mu       sync.Mutex
	readings []SlotMapReading
	errs     []error
}

func (r *followRecorder) onRead(rd SlotMapReading) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.readings = append(r.readings, rd)
}

func (r *followRecorder) onError(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, err)
}

// snapshot returns the maps delivered, each once (a reading of the map
// delivered before is not a change), and the errors.
func (r *followRecorder) snapshot() ([]*SlotMap, []error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var changes []*SlotMap
	for _, rd := range r.readings {
		if len(changes) == 0 || changes[len(changes)-1] != rd.Map {
			changes = append(changes, rd.Map)
		}
	}
	return changes, append([]error(nil), r.errs...)
}

// allReadings returns every reading delivered.
func (r *followRecorder) allReadings() []SlotMapReading {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]SlotMapReading(nil), r.readings...)
}

// generations returns the generations of the maps delivered.
func generations(ms []*SlotMap) []uint64 {
	var out []uint64
	for _, m := range ms {
		out = append(out, m.Generation())
	}
	return out
}

// startFollower runs f until the test ends and checks that Run returns.
func startFollower(t *testing.T, f *SlotMapFollower) *followRecorder {
	t.Helper()
	r := &followRecorder{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.Run(ctx, r.onRead, r.onError)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("Run did not return within 5s of its context ending")
		}
	})
	return r
}

func TestSlotMapFollowerKeepsTheLastGoodMap(t *testing.T) {
	leakcheck.Check(t)
	const minInterval = time.Second
	t0 := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
	var (
		gen1      = slotMapJSON(t, 1, mc2, t0)
		gen1Later = slotMapJSON(t, 1, mc2, t0.Add(time.Hour))
		corrupt   = []byte(`{"pool": "default", "num_slots": 2`)
		gen2      = slotMapJSON(t, 2, mc3, t0)
		boom      = errors.New("consul: 500")
	)
	type answer struct {
		value []byte // nil: the key does not exist
		index uint64
		err   error
	}
	script := []answer{
		{nil, 3, nil},       // no map yet: reported
		{gen1, 5, nil},      // delivered
		{gen1, 6, nil},      // another key moved the index: equal value
		{gen1Later, 7, nil}, // only updated_at moved: not delivered
		{corrupt, 8, nil},   // reported; generation 1 stays
		{gen1, 9, nil},      // restored: the same map, not delivered again
		{gen2, 10, nil},     // delivered
		{nil, 11, nil},      // deleted: reported; generation 2 stays
		{nil, 0, boom},      // reported; the backoff then waits for a clock that does not move
	}
	clk := clock.NewFake(t0)
	var i int
	f, err := NewSlotMapFollower(SlotMapFollowerOptions{Client: &api.Client{}, Key: "mcrib/default/slotmap", MinInterval: minInterval, Clock: clk})
	if err != nil {
		t.Fatalf("NewSlotMapFollower: %v", err)
	}
	f.get = func(ctx context.Context, q *api.QueryOptions) (*api.KVPair, *api.QueryMeta, error) {
		if i == len(script) {
			t.Error("the follower queried after a failure without backing off")
			<-ctx.Done()
			return nil, nil, ctx.Err()
		}
		a := script[i]
		i++
		// The query takes long enough that the next may start at once.
		clk.Advance(2 * minInterval)
		if a.err != nil {
			return nil, nil, a.err
		}
		var pair *api.KVPair
		if a.value != nil {
			pair = &api.KVPair{Key: "mcrib/default/slotmap", Value: a.value}
		}
		return pair, &api.QueryMeta{LastIndex: a.index}, nil
	}
	r := startFollower(t, f)
	testenv.Eventually(t, 5*time.Second, "the failed query at the end of the script to be reported", func() bool {
		_, errs := r.snapshot()
		return len(errs) >= 4
	})
	changes, errs := r.snapshot()
	if got := generations(changes); len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Errorf("delivered generations %v, want [1 2]", got)
	}
	if len(changes) == 2 && (changes[1].Slot(1) != mc3 || f.Current() != changes[1]) {
		t.Errorf("Current() = %+v, want the last map delivered %+v", f.Current(), changes[1])
	}
	wantErrs := []error{ErrSlotMapNotStored, ErrInvalidSlotMap, ErrSlotMapNotStored, boom}
	if len(errs) != len(wantErrs) {
		t.Fatalf("reported %d errors %v, want %d", len(errs), errs, len(wantErrs))
	}
	for k, want := range wantErrs {
		if !errors.Is(errs[k], want) {
			t.Errorf("error %d = %v, want one wrapping %v", k, errs[k], want)
		}
	}
	if !strings.Contains(errs[1].Error(), "mcrib/default/slotmap") {
		t.Errorf("error %q does not name the key", errs[1])
	}
	// Every answer that read a valid map not older than the current one is
	// a reading, changed or not, timed when it arrived: gen1 at 5, 6, 7
	// (updated_at alone moved: the same map) and 9, gen2 at 10.
	var got []string
	for _, rd := range r.allReadings() {
		got = append(got, fmt.Sprintf("%d@%s", rd.Map.Generation(), rd.ReadAt.Sub(t0)))
	}
	if want := []string{"1@4s", "1@6s", "1@8s", "1@12s", "2@14s"}; !slices.Equal(got, want) {
		t.Errorf("readings %v, want %v", got, want)
	}
}

// TestSlotMapFollowerReadsEveryAnswer: a blocking query that ends without a
// change (the same index) still delivers a reading, so that a client
// knows its map is fresh; and the wait asked is at most FollowWait.
func TestSlotMapFollowerReadsEveryAnswer(t *testing.T) {
	leakcheck.Check(t)
	t0 := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
	gen1 := slotMapJSON(t, 1, mc2, t0)
	for _, tc := range []struct {
		name string
		wait time.Duration
		want time.Duration
	}{
		{"default", 0, FollowWait},
		{"a minute asked", time.Minute, FollowWait},
		{"two seconds asked", 2 * time.Second, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(t0)
			f, err := NewSlotMapFollower(SlotMapFollowerOptions{Client: &api.Client{}, Key: "mcrib/default/slotmap", MinInterval: time.Second, WaitTime: tc.wait, Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			var (
				mu    sync.Mutex
				waits []time.Duration
				n     int
			)
			f.get = func(ctx context.Context, q *api.QueryOptions) (*api.KVPair, *api.QueryMeta, error) {
				mu.Lock()
				n++
				if n > 3 {
					mu.Unlock()
					<-ctx.Done()
					return nil, nil, ctx.Err()
				}
				if q.WaitIndex != 0 {
					waits = append(waits, q.WaitTime)
				}
				mu.Unlock()
				clk.Advance(q.WaitTime + 2*time.Second) // the wait ran out (and the next may start at once): nothing changed
				return &api.KVPair{Key: "mcrib/default/slotmap", Value: gen1}, &api.QueryMeta{LastIndex: 5}, nil
			}
			r := startFollower(t, f)
			testenv.Eventually(t, 5*time.Second, "three readings", func() bool { return len(r.allReadings()) == 3 })
			rds := r.allReadings()
			for i, rd := range rds {
				if rd.Map != rds[0].Map || rd.Map.Generation() != 1 {
					t.Errorf("reading %d: map %p generation %d, want the first map again", i, rd.Map, rd.Map.Generation())
				}
			}
			if want := t0.Add(2 * time.Second).Add(2 * (tc.want + 2*time.Second)); !rds[2].ReadAt.Equal(want) {
				t.Errorf("the third reading was read at %v, want %v (when its answer came)", rds[2].ReadAt, want)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(waits) != 2 || waits[0] != tc.want || waits[1] != tc.want {
				t.Errorf("blocking queries asked to wait %v, want %v each", waits, tc.want)
			}
		})
	}
}

// scriptedFollower returns a follower whose queries answer values in
// turn, each at the next index, then wait for the end of the test.
func scriptedFollower(t *testing.T, opts SlotMapFollowerOptions, values ...[]byte) *SlotMapFollower {
	t.Helper()
	opts.Client, opts.Key, opts.MinInterval = &api.Client{}, "mcrib/default/slotmap", time.Second
	clk := clock.NewFake(time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC))
	opts.Clock = clk
	f, err := NewSlotMapFollower(opts)
	if err != nil {
		t.Fatalf("NewSlotMapFollower: %v", err)
	}
	var i int
	f.get = func(ctx context.Context, q *api.QueryOptions) (*api.KVPair, *api.QueryMeta, error) {
		if i == len(values) {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		}
		v := values[i]
		i++
		clk.Advance(2 * time.Second) // the next query may start at once
		return &api.KVPair{Key: opts.Key, Value: v}, &api.QueryMeta{LastIndex: uint64(10 + i)}, nil
	}
	return f
}

// warmingJSON returns the document of slotMapJSON(gen, second) in which
// slot 1 warms from mc9.
func warmingJSON(t *testing.T, gen uint64, second Node, updated time.Time) []byte {
	t.Helper()
	spec := SlotMapSpec{Pool: "default", Generation: gen, UpdatedAt: updated, Slots: []Node{mc1, second},
		Warming: []*Warming{nil, {NodeID: mc9.ID, Addr: mc9.Addr, Until: updated.Add(time.Minute)}}}
	b, err := json.Marshal(mustSlotMap(t, spec))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSlotMapFollowerNeverGoesBack is the generation order: a stored map
// of generation 7 after 8 (Consul's KV restored from an older snapshot,
// say) is reported, wrapping ErrOlderGeneration, and not delivered; the
// same generation with a warming added is delivered (warming moves no
// generation), and so is the next generation. With the fix reverted the
// follower delivers 7 after 8, as it did.
func TestSlotMapFollowerNeverGoesBack(t *testing.T) {
	leakcheck.Check(t)
	t0 := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
	values := [][]byte{
		slotMapJSON(t, 8, mc2, t0),
		slotMapJSON(t, 7, mc3, t0),
		warmingJSON(t, 8, mc2, t0),
		slotMapJSON(t, 9, mc3, t0),
	}
	for _, tc := range []struct {
		name     string
		reverted revert.Set
		want     []uint64
		errs     int
	}{
		{"in place", 0, []uint64{8, 8, 9}, 1},
		{"reverted", revert.Of(revert.GenerationOrder), []uint64{8, 7, 8, 9}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := scriptedFollower(t, SlotMapFollowerOptions{}, values...)
			revert.Apply(f, tc.reverted)
			r := startFollower(t, f)
			testenv.Eventually(t, 5*time.Second, "every answer to be handled", func() bool {
				changes, errs := r.snapshot()
				return len(changes)+len(errs) == len(values)
			})
			changes, errs := r.snapshot()
			if got := generations(changes); !slices.Equal(got, tc.want) {
				t.Errorf("delivered generations %v, want %v", got, tc.want)
			}
			if len(errs) != tc.errs {
				t.Fatalf("reported %v, want %d errors", errs, tc.errs)
			}
			if tc.errs > 0 && (!errors.Is(errs[0], ErrOlderGeneration) || !strings.Contains(errs[0].Error(), "generation 7 after 8")) {
				t.Errorf("reported %q, want ErrOlderGeneration naming generation 7 after 8", errs[0])
			}
			if tc.errs > 0 && !changes[1].AnyWarming() {
				t.Errorf("the second map delivered does not warm: the same generation with a warming added was not taken")
			}
			if m := f.Current(); m == nil || m.Generation() != 9 {
				t.Errorf("Current() = %v, want generation 9", m)
			}
		})
	}
}

func TestCheckGeneration(t *testing.T) {
	m7 := mustSlotMap(t, SlotMapSpec{Generation: 7, Slots: []Node{mc1}})
	m8 := mustSlotMap(t, SlotMapSpec{Generation: 8, Slots: []Node{mc1}})
	for _, tc := range []struct {
		cur, next *SlotMap
		older     bool
	}{
		{nil, m7, false}, {m7, m8, false}, {m8, m8, false}, {m8, m7, true},
	} {
		if err := CheckGeneration(tc.cur, tc.next); errors.Is(err, ErrOlderGeneration) != tc.older || (err != nil) != tc.older {
			t.Errorf("CheckGeneration(%v, %d) = %v, want older %v", tc.cur, tc.next.Generation(), err, tc.older)
		}
	}
}

func TestNewSlotMapFollowerOptions(t *testing.T) {
	client := &api.Client{}
	for _, tt := range []struct {
		name    string
		opts    SlotMapFollowerOptions
		wantErr string
	}{
		{"no client", SlotMapFollowerOptions{Key: "k"}, "Client is required"},
		{"no key", SlotMapFollowerOptions{Client: client}, "Key is required"},
		{"negative wait", SlotMapFollowerOptions{Client: client, Key: "k", WaitTime: -1}, "negative"},
		{"negative interval", SlotMapFollowerOptions{Client: client, Key: "k", MinInterval: -1}, "negative"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewSlotMapFollower(tt.opts); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("NewSlotMapFollower = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestSlotMapFollowerRealConsul(t *testing.T) {
	t.Parallel()
	c := testenv.StartConsul(t)
	const key = "mcrib/follow/slotmap"
	f, err := NewSlotMapFollower(SlotMapFollowerOptions{Client: c.Client, Key: key})
	if err != nil {
		t.Fatalf("NewSlotMapFollower: %v", err)
	}
	r := startFollower(t, f)
	testenv.Eventually(t, 10*time.Second, "the missing key to be reported", func() bool {
		_, errs := r.snapshot()
		return len(errs) == 1 && errors.Is(errs[0], ErrSlotMapNotStored)
	})
	put := func(value []byte) {
		t.Helper()
		if _, err := c.Client.KV().Put(&api.KVPair{Key: key, Value: value}, nil); err != nil {
			t.Fatalf("writing %s: %v", key, err)
		}
	}
	// deliveredWithin waits for the n-th map and checks it came promptly.
	deliveredWithin := func(n int, what string) *SlotMap {
		t.Helper()
		start := time.Now()
		testenv.Eventually(t, 5*time.Second, what, func() bool {
			changes, _ := r.snapshot()
			return len(changes) >= n
		})
		if took := time.Since(start); took > time.Second {
			t.Errorf("%s: delivered %v after the write, want within 1s", what, took)
		}
		changes, _ := r.snapshot()
		return changes[n-1]
	}
	t0 := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)

	put(slotMapJSON(t, 1, mc2, t0))
	if m := deliveredWithin(1, "the first map"); m.Generation() != 1 || f.Current() != m {
		t.Fatalf("first map: generation %d, Current %p, delivered %p", m.Generation(), f.Current(), m)
	}
	put(slotMapJSON(t, 2, mc3, t0))
	if m := deliveredWithin(2, "the changed map"); m.Generation() != 2 || m.Slot(1) != mc3 {
		t.Fatalf("changed map: generation %d, slot 1 %+v", m.Generation(), m.Slot(1))
	}
	// Writes that change nothing a client routes by are not delivered;
	// the write after them shows that the follower saw them.
	put(slotMapJSON(t, 2, mc3, t0.Add(time.Minute)))

	if _, err := c.Client.KV().Delete(key, nil); err != nil {
		t.Fatalf("deleting %s: %v", key, err)
	}
	testenv.Eventually(t, 5*time.Second, "the deleted key to be reported", func() bool {
		_, errs := r.snapshot()
		return len(errs) == 2 && errors.Is(errs[1], ErrSlotMapNotStored)
	})
	put([]byte(`{"pool": "default", "num_slots": 4, "slots": []}`))
	testenv.Eventually(t, 5*time.Second, "the corrupt value to be reported", func() bool {
		_, errs := r.snapshot()
		return len(errs) == 3 && errors.Is(errs[2], ErrInvalidSlotMap)
	})
	if m := f.Current(); m == nil || m.Generation() != 2 {
		t.Fatalf("Current() = %v after a delete and a corrupt value, want the last good map (generation 2)", m)
	}
	put(slotMapJSON(t, 3, mc9, t0))
	if m := deliveredWithin(3, "the map written after the corrupt value"); m.Generation() != 3 {
		t.Fatalf("map after the corrupt value: generation %d, want 3", m.Generation())
	}
	changes, errs := r.snapshot()
	if got := generations(changes); len(got) != 3 {
		t.Errorf("delivered generations %v, want [1 2 3]", got)
	}
	if len(errs) != 3 {
		t.Errorf("reported %v, want exactly the three problems", errs)
	}
}
