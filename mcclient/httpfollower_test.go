package mcclient

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/leakcheck"
	"github.com/mcrib/mcrib/internal/revert"
)

// fakeSlotMapAPI serves GET /v1/slotmap like mcrib: an index per document,
// blocking while ?index= is current.
type fakeSlotMapAPI struct {
	mu      sync.Mutex
	body    []byte
	index   uint64
	age     string // X-Mcrib-Map-Age; "" is "0", "-" none
	down    bool   // answer 503
	changed chan struct{}
	queries []string
}

// setDown makes the replica answer 503 (or answer again), waking the
// reads it holds.
func (f *fakeSlotMapAPI) setDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
	if f.changed != nil {
		close(f.changed)
	}
	f.changed = make(chan struct{})
}

// queried returns the queries the replica got.
func (f *fakeSlotMapAPI) queried() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.queries...)
}

func (f *fakeSlotMapAPI) set(t *testing.T, m *cachenodes.SlotMap, index uint64) {
	body, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.body, f.index = body, index
	if f.changed != nil {
		close(f.changed)
	}
	f.changed = make(chan struct{})
}

func (f *fakeSlotMapAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.queries = append(f.queries, r.URL.RawQuery)
	body, index, changed, down, age := f.body, f.index, f.changed, f.down, f.age
	f.mu.Unlock()
	if down {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	if body == nil {
		http.Error(w, "no slot map is known yet", http.StatusServiceUnavailable)
		return
	}
	if q := r.URL.Query(); q.Has("index") && q.Get("index") == strconv.FormatUint(index, 10) {
		wait, _ := time.ParseDuration(q.Get("wait"))
		select {
		case <-changed:
			f.ServeHTTP(w, r)
			return
		case <-time.After(wait):
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("X-Mcrib-Index", strconv.FormatUint(index, 10))
	switch age {
	case "":
		w.Header().Set("X-Mcrib-Map-Age", "0")
	case "-":
	default:
		w.Header().Set("X-Mcrib-Map-Age", age)
	}
	w.Write(body)
}

// setAge sets the X-Mcrib-Map-Age the replica answers ("-": none).
func (f *fakeSlotMapAPI) setAge(age string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.age = age
}

// changes returns onRead for a follower's Run that sends every map that
// differs from the last one sent on maps, and every reading on readings
// (when not nil; dropped when full).
func changes(maps chan<- *cachenodes.SlotMap, readings chan<- cachenodes.SlotMapReading) func(cachenodes.SlotMapReading) {
	var last *cachenodes.SlotMap
	return func(r cachenodes.SlotMapReading) {
		if readings != nil {
			select {
			case readings <- r:
			default:
			}
		}
		if r.Map != last {
			last = r.Map
			maps <- r.Map
		}
	}
}

func TestHTTPFollower(t *testing.T) {
	leakcheck.Check(t)
	api := &fakeSlotMapAPI{}
	f, err := NewHTTPFollower(HTTPFollowerOptions{URL: serve(t, api) + "/", WaitTime: 30 * time.Second, MinInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	maps, errs := follow(t, f)

	select { // 503 before the first map: an error, retried
	case <-errs:
	case <-time.After(10 * time.Second):
		t.Fatal("no error reported for a 503")
	}
	// Index 9, then 5: an index that goes down is still followed.
	for i, idx := range []uint64{9, 5, 7} {
		api.set(t, slotMap(t, uint64(i+1), []string{"a", "b"}), idx)
		select {
		case m := <-maps:
			if m.Generation() != uint64(i+1) || f.Current() != m {
				t.Fatalf("got generation %d, want %d", m.Generation(), i+1)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("map %d not delivered", i+1)
		}
	}
	// The same document under a new index is not delivered again.
	api.set(t, slotMap(t, 3, []string{"a", "b"}), 8)
	api.set(t, slotMap(t, 4, []string{"b", "a"}), 11)
	if m := <-maps; m.Generation() != 4 {
		t.Fatalf("delivered generation %d, want 4 (3 again is no change)", m.Generation())
	}
	if q := api.queried(); blockingReads(q) == 0 {
		t.Fatalf("no blocking read among %q", q)
	}
}

// serve starts a test server for api and returns its URL; it closes when
// the test ends, after the follower that reads it (cleanups run last first).
func serve(t *testing.T, api http.Handler) string {
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return srv.URL
}

// blockingReads counts the blocking reads (those that name an index) among
// a replica's queries.
func blockingReads(queries []string) int {
	n := 0
	for _, q := range queries {
		if strings.Contains(q, "index=") {
			n++
		}
	}
	return n
}

// follow runs f until the test ends and returns the maps it delivers
// (each once) and the errors it reports (the first 100).
func follow(t *testing.T, f *HTTPFollower) (<-chan *cachenodes.SlotMap, <-chan error) {
	t.Helper()
	maps, _, errs := followReadings(t, f)
	return maps, errs
}

// followReadings is follow, with every reading (the first 100) too.
func followReadings(t *testing.T, f *HTTPFollower) (<-chan *cachenodes.SlotMap, <-chan cachenodes.SlotMapReading, <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	maps := make(chan *cachenodes.SlotMap, 10)
	readings := make(chan cachenodes.SlotMapReading, 100)
	errs := make(chan error, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.Run(ctx, changes(maps, readings), func(err error) {
			select {
			case errs <- err:
			default:
			}
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return maps, readings, errs
}

// delivered returns the next map delivered, failing after 10s.
func delivered(t *testing.T, maps <-chan *cachenodes.SlotMap, what string) *cachenodes.SlotMap {
	t.Helper()
	select {
	case m := <-maps:
		return m
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: nothing delivered", what)
		return nil
	}
}

// reported waits for an error wrapping want, failing after 10s.
func reported(t *testing.T, errs <-chan error, want error) error {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case err := <-errs:
			if errors.Is(err, want) {
				return err
			}
		case <-deadline:
			t.Fatalf("no error wrapping %v reported", want)
			return nil
		}
	}
}

// TestHTTPFollowerNeverGoesBack is known break 4 at the HTTP follower:
// its URL reached a replica that serves generation 8, then one cut off
// from Consul that serves 7, and it delivered 7. Now it reports
// ErrOlderGeneration and keeps 8, takes the same generation with a
// warming added, and the next generation; with several replicas it moves
// on from the one that serves the older map and sticks to the next. With
// revert.GenerationOrder it delivers 7, as it did.
func TestHTTPFollowerNeverGoesBack(t *testing.T) {
	leakcheck.Check(t)
	t.Run("one URL", func(t *testing.T) {
		api := &fakeSlotMapAPI{}
		f, err := NewHTTPFollower(HTTPFollowerOptions{URL: serve(t, api), WaitTime: 30 * time.Second, MinInterval: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		maps, errs := follow(t, f)
		api.set(t, slotMap(t, 8, []string{"a", "b"}), 1)
		if m := delivered(t, maps, "generation 8"); m.Generation() != 8 {
			t.Fatalf("delivered generation %d, want 8", m.Generation())
		}
		api.set(t, slotMap(t, 7, []string{"b", "a"}), 2)
		if err := reported(t, errs, ErrOlderGeneration); !strings.Contains(err.Error(), "generation 7 after 8") {
			t.Errorf("reported %q, want it to name generation 7 after 8", err)
		}
		api.set(t, warmMap(t, 8, []string{"a", "b"}, map[int]string{0: "c"}, epoch.Add(time.Minute)), 3)
		if m := delivered(t, maps, "generation 8 with a warming"); m.Generation() != 8 || !m.AnyWarming() {
			t.Fatalf("delivered generation %d (warming %v), want 8 with its warming", m.Generation(), m.AnyWarming())
		}
		api.set(t, slotMap(t, 9, []string{"b", "a"}), 4)
		if m := delivered(t, maps, "generation 9"); m.Generation() != 9 {
			t.Fatalf("delivered generation %d, want 9 (7 was never delivered)", m.Generation())
		}
	})
	t.Run("several replicas", func(t *testing.T) {
		stale, fresh := &fakeSlotMapAPI{}, &fakeSlotMapAPI{}
		f, err := NewHTTPFollower(HTTPFollowerOptions{URLs: []string{serve(t, stale), serve(t, fresh)}, WaitTime: 30 * time.Second, MinInterval: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		stale.set(t, slotMap(t, 8, []string{"a", "b"}), 1)
		fresh.set(t, slotMap(t, 8, []string{"a", "b"}), 1)
		maps, errs := follow(t, f)
		delivered(t, maps, "generation 8")
		stale.set(t, slotMap(t, 7, []string{"b", "a"}), 2) // cut off from Consul, restarted on an old map
		fresh.set(t, slotMap(t, 9, []string{"b", "c"}), 3)
		reported(t, errs, ErrOlderGeneration)
		if m := delivered(t, maps, "generation 9 from the other replica"); m.Generation() != 9 {
			t.Fatalf("delivered generation %d, want 9", m.Generation())
		}
		before := len(stale.queried())
		fresh.set(t, slotMap(t, 10, []string{"c", "b"}), 4)
		if m := delivered(t, maps, "generation 10"); m.Generation() != 10 {
			t.Fatalf("delivered generation %d, want 10", m.Generation())
		}
		if n := len(stale.queried()); n != before {
			t.Errorf("the follower went back to the stale replica (%d more queries) while the other answered", n-before)
		}
	})
	t.Run("reverted", func(t *testing.T) {
		api := &fakeSlotMapAPI{}
		f, err := NewHTTPFollower(HTTPFollowerOptions{URL: serve(t, api), WaitTime: 30 * time.Second, MinInterval: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		revert.Apply(f, revert.Of(revert.GenerationOrder))
		maps, _ := follow(t, f)
		api.set(t, slotMap(t, 8, []string{"a", "b"}), 1)
		delivered(t, maps, "generation 8")
		api.set(t, slotMap(t, 7, []string{"b", "a"}), 2)
		if m := delivered(t, maps, "generation 7"); m.Generation() != 7 {
			t.Fatalf("reverted: delivered generation %d, want 7 as it was", m.Generation())
		}
	})
}

// TestHTTPFollowerSeveralReplicas: the follower of several
// replica URLs: it skips one that refuses connections, sticks to the
// first that answers (blocking reads, none to the others), and moves on
// when that one fails.
func TestHTTPFollowerSeveralReplicas(t *testing.T) {
	leakcheck.Check(t)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close() // connections refused
	a, b := &fakeSlotMapAPI{}, &fakeSlotMapAPI{}
	a.set(t, slotMap(t, 1, []string{"a", "b"}), 5)
	b.set(t, slotMap(t, 1, []string{"a", "b"}), 5)
	f, err := NewHTTPFollower(HTTPFollowerOptions{URLs: []string{gone.URL, serve(t, a), serve(t, b)}, WaitTime: 30 * time.Second, MinInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	maps, _ := follow(t, f)
	delivered(t, maps, "the first map, past a replica that refuses connections")
	a.set(t, slotMap(t, 2, []string{"b", "a"}), 6)
	if m := delivered(t, maps, "generation 2"); m.Generation() != 2 {
		t.Fatalf("delivered generation %d, want 2", m.Generation())
	}
	if q := b.queried(); len(q) != 0 {
		t.Fatalf("the third replica was read %q while the second answered", q)
	}
	if q := a.queried(); blockingReads(q) == 0 {
		t.Fatalf("no blocking read among %q", q)
	}
	// The second replica fails: the follower moves on to the third.
	b.set(t, slotMap(t, 3, []string{"b", "c"}), 7)
	a.setDown(true)
	if m := delivered(t, maps, "generation 3 from the third replica"); m.Generation() != 3 {
		t.Fatalf("delivered generation %d, want 3", m.Generation())
	}
}

func TestNewHTTPFollowerChecksOptions(t *testing.T) {
	for _, o := range []HTTPFollowerOptions{
		{},
		{URL: "mcrib:7070"},
		{URL: "ftp://mcrib"},
		{URL: "http://mcrib", WaitTime: -1},
		{URLs: []string{"http://mcrib:7070", "mcrib2:7070"}},
		{URLs: []string{}},
	} {
		if _, err := NewHTTPFollower(o); err == nil {
			t.Errorf("NewHTTPFollower(%+v) accepted", o)
		}
	}
}

// TestHTTPFollowerReadings: every answer is a reading, changed or not (a
// blocking read whose wait ran out too), timed when it arrived less its
// X-Mcrib-Map-Age; and a wait above FollowWait is asked as FollowWait.
func TestHTTPFollowerReadings(t *testing.T) {
	leakcheck.Check(t)
	api := &fakeSlotMapAPI{}
	api.setAge("1500")
	url := serve(t, api)
	api.set(t, slotMap(t, 4, []string{"a", "b"}), 3)
	f, err := NewHTTPFollower(HTTPFollowerOptions{URL: url, WaitTime: 100 * time.Millisecond, MinInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, readings, errs := followReadings(t, f)
	var got []cachenodes.SlotMapReading
	for len(got) < 3 {
		select {
		case r := <-readings:
			got = append(got, r)
		case err := <-errs:
			t.Fatalf("reported %v", err)
		case <-time.After(10 * time.Second):
			t.Fatalf("%d readings, want 3 (one per answer, changed or not)", len(got))
		}
	}
	for i, r := range got {
		if r.Map != got[0].Map || r.Map.Generation() != 4 {
			t.Errorf("reading %d: map %p generation %d, want the first map again", i, r.Map, r.Map.Generation())
		}
		if lo, hi := start.Add(-1500*time.Millisecond), time.Now().Add(-1500*time.Millisecond); r.ReadAt.Before(lo) || r.ReadAt.After(hi) {
			t.Errorf("reading %d: read at %v, want the answer's arrival less 1.5 s (between %v and %v)", i, r.ReadAt, lo, hi)
		}
	}
	for _, q := range api.queried() {
		if strings.Contains(q, "index=") && !strings.HasSuffix(q, "&wait=100ms") {
			t.Errorf("query %q, want wait=100ms", q)
		}
	}

	long, err := NewHTTPFollower(HTTPFollowerOptions{URL: url, WaitTime: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if long.watch.WaitTime != cachenodes.FollowWait {
		t.Errorf("WaitTime of a minute asked as %v, want FollowWait", long.watch.WaitTime)
	}
	if def, _ := NewHTTPFollower(HTTPFollowerOptions{URL: url}); def.watch.WaitTime != cachenodes.FollowWait {
		t.Errorf("the default WaitTime is %v, want FollowWait", def.watch.WaitTime)
	}
}

// TestHTTPFollowerStaleReplica: an answer whose map is older than
// FollowWait, or of unknown age, is delivered with its age (none: not
// fresh) and reported as ErrStaleReplica; with several replicas the
// follower moves on to one whose map is fresh and sticks to it, with one
// it follows that one all the same.
func TestHTTPFollowerStaleReplica(t *testing.T) {
	leakcheck.Check(t)
	for _, age := range []string{"6000", "-", "soon"} {
		t.Run("age "+age, func(t *testing.T) {
			cut, ok := &fakeSlotMapAPI{}, &fakeSlotMapAPI{}
			cut.setAge(age)
			s1, s2 := httptest.NewServer(cut), httptest.NewServer(ok)
			t.Cleanup(s1.Close)
			t.Cleanup(s2.Close)
			cut.set(t, slotMap(t, 4, []string{"a", "b"}), 3)
			ok.set(t, slotMap(t, 4, []string{"a", "b"}), 3)
			f, err := NewHTTPFollower(HTTPFollowerOptions{URLs: []string{s1.URL, s2.URL}, WaitTime: 100 * time.Millisecond, MinInterval: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			_, readings, errs := followReadings(t, f)
			first := <-readings
			if want := age == "6000"; first.ReadAt.IsZero() == want || (want && time.Since(first.ReadAt) < 6*time.Second) {
				t.Errorf("the stale replica's reading was read at %v, want %s", first.ReadAt, map[bool]string{true: "6 s before it arrived", false: "zero (unknown)"}[want])
			}
			if err := reported(t, errs, ErrStaleReplica); !strings.Contains(err.Error(), s1.URL) {
				t.Errorf("reported %q, want it to name the stale replica", err)
			}
			for range 3 {
				if r := <-readings; r.ReadAt.IsZero() || time.Since(r.ReadAt) > time.Second {
					t.Fatalf("a reading after the move read at %v, want the fresh replica's", r.ReadAt)
				}
			}
			before := len(cut.queried())
			for range 2 {
				<-readings
			}
			if n := len(cut.queried()); n != before {
				t.Errorf("the follower went back to the stale replica (%d more queries) while the other answered fresh", n-before)
			}
		})
	}
	t.Run("one replica", func(t *testing.T) {
		cut := &fakeSlotMapAPI{}
		cut.setAge("-")
		url := serve(t, cut)
		cut.set(t, slotMap(t, 4, []string{"a", "b"}), 3)
		f, err := NewHTTPFollower(HTTPFollowerOptions{URL: url, WaitTime: 100 * time.Millisecond, MinInterval: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		maps, readings, errs := followReadings(t, f)
		delivered(t, maps, "the map of unknown age")
		reported(t, errs, ErrStaleReplica)
		cut.set(t, slotMap(t, 5, []string{"b", "a"}), 4)
		if m := delivered(t, maps, "the next map from the one replica"); m.Generation() != 5 {
			t.Fatalf("delivered generation %d, want 5", m.Generation())
		}
		if r := <-readings; !r.ReadAt.IsZero() {
			t.Errorf("a reading without X-Mcrib-Map-Age was read at %v, want zero", r.ReadAt)
		}
		if q := cut.queried(); blockingReads(q) == 0 {
			t.Errorf("no blocking read of the one replica among %q", q)
		}
	})
}
