package mcclient

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/leakcheck"
)

// fakeSlotMapAPI serves GET /v1/slotmap like mcrib: an index per document,
// blocking while ?index= is current.
type fakeSlotMapAPI struct {
	mu      sync.Mutex
	body    []byte
	index   uint64
	changed chan struct{}
	queries []string
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
	body, index, changed := f.body, f.index, f.changed
	f.mu.Unlock()
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
	w.Write(body)
}

func TestHTTPFollower(t *testing.T) {
	leakcheck.Check(t)
	api := &fakeSlotMapAPI{}
	srv := httptest.NewServer(api)
	defer srv.Close()
	f, err := NewHTTPFollower(HTTPFollowerOptions{URL: srv.URL + "/", WaitTime: 30 * time.Second, MinInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	maps := make(chan *cachenodes.SlotMap, 10)
	errs := make(chan error, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.Run(ctx, func(m *cachenodes.SlotMap) { maps <- m }, func(err error) {
			select {
			case errs <- err:
			default:
			}
		})
	}()
	defer func() { cancel(); <-done }()

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
	api.mu.Lock()
	defer api.mu.Unlock()
	blocking := 0
	for _, q := range api.queries {
		if q != "" {
			blocking++
		}
	}
	if blocking == 0 {
		t.Fatalf("no blocking read among %q", api.queries)
	}
}

func TestNewHTTPFollowerChecksOptions(t *testing.T) {
	for _, o := range []HTTPFollowerOptions{
		{},
		{URL: "mcrib:7070"},
		{URL: "ftp://mcrib"},
		{URL: "http://mcrib", WaitTime: -1},
	} {
		if _, err := NewHTTPFollower(o); err == nil {
			t.Errorf("NewHTTPFollower(%+v) accepted", o)
		}
	}
}
