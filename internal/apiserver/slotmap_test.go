package apiserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/internal/leakcheck"
	"github.com/mcrib/mcrib/mcribapi"
)

// fakePlane is a ControlPlane serving a slot map that the test changes.
type fakePlane struct {
	mu      sync.Mutex
	m       *cachenodes.SlotMap
	readAt  time.Time // SlotMapReadAt; zero: never read
	changed chan struct{}
	asked   chan struct{} // receives on every Changed call
}

func newFakePlane(m *cachenodes.SlotMap) *fakePlane {
	return &fakePlane{m: m, changed: make(chan struct{}), asked: make(chan struct{}, 100)}
}

func (f *fakePlane) SlotMap() *cachenodes.SlotMap {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m
}

func (f *fakePlane) SlotMapReadAt() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.readAt
}

// setReadAt sets what SlotMapReadAt answers.
func (f *fakePlane) setReadAt(at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.readAt = at
}

func (f *fakePlane) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked <- struct{}{}
	return f.changed
}

// set serves m and closes the Changed channel, as the loop does; m may be
// the map already served (a notification without a visible change).
func (f *fakePlane) set(m *cachenodes.SlotMap) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m = m
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakePlane) Status() mcribapi.Status { return mcribapi.Status{} }
func (f *fakePlane) Ready() error            { return nil }
func (f *fakePlane) Freeze(context.Context, string, string) (mcribapi.FreezeDoc, error) {
	return mcribapi.FreezeDoc{}, nil
}
func (f *fakePlane) Unfreeze(context.Context) error { return nil }

// testSlotMap returns a two-slot map of the given generation.
func testSlotMap(t *testing.T, gen uint64) *cachenodes.SlotMap {
	t.Helper()
	m, err := cachenodes.NewSlotMap(cachenodes.SlotMapSpec{Pool: "default", Generation: gen,
		UpdatedAt: time.Date(2026, 11, 29, 13, 0, int(gen), 0, time.UTC),
		Slots:     []cachenodes.Node{{ID: "mc-1", Addr: "127.0.0.1:11211"}, {}}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// indexOf returns the X-Mcrib-Index of m.
func indexOf(t *testing.T, m *cachenodes.SlotMap) string {
	t.Helper()
	body, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return strconv.FormatUint(slotMapIndex(body), 10)
}

func newSlotMapAPI(plane *fakePlane, clk clock.Clock) *Server {
	a := newServer(Options{Loop: plane})
	a.clock = clk
	return a
}

// checkSlotMapAnswer fails the test unless rec holds a 200 with m and its
// index.
func checkSlotMapAnswer(t *testing.T, rec *httptest.ResponseRecorder, m *cachenodes.SlotMap) {
	t.Helper()
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d (%s), want 200", rec.Code, rec.Body.String())
	}
	got, err := cachenodes.ParseSlotMap(rec.Body.Bytes())
	if err != nil {
		t.Fatalf("body %q: %v", rec.Body.String(), err)
	}
	if !got.Equal(m) {
		t.Errorf("answered generation %d, want %d", got.Generation(), m.Generation())
	}
	if idx := rec.Header().Get("X-Mcrib-Index"); idx != indexOf(t, m) {
		t.Errorf("X-Mcrib-Index %q, want %q", idx, indexOf(t, m))
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
}

func TestSlotMapAnswersAtOnce(t *testing.T) {
	m := testSlotMap(t, 7)
	tests := []struct {
		name   string
		served *cachenodes.SlotMap
		query  string
		status int
	}{
		{"no index", m, "", 200},
		{"only a wait", m, "?wait=5m", 200},
		{"an older index", m, "?index=" + indexOf(t, testSlotMap(t, 6)), 200},
		{"index 0", m, "?index=0&wait=1s", 200},
		{"no map yet", nil, "", 503},
		{"no map yet, blocking", nil, "?index=1", 503},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newSlotMapAPI(newFakePlane(tt.served), clock.NewFake(time.Unix(0, 0)))
			rec := httptest.NewRecorder()
			a.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/slotmap"+tt.query, nil))
			if tt.status != 200 {
				if rec.Code != tt.status {
					t.Errorf("status %d, want %d", rec.Code, tt.status)
				}
				return
			}
			checkSlotMapAnswer(t, rec, m)
		})
	}
}

func TestSlotMapBadQuery(t *testing.T) {
	for _, q := range []string{
		"index=abc", "index=-1", "index=", "index=1.5",
		"wait=soon", "wait=0s", "wait=-1s", "wait=", "wait=30",
	} {
		t.Run(q, func(t *testing.T) {
			a := newSlotMapAPI(newFakePlane(testSlotMap(t, 1)), clock.NewFake(time.Unix(0, 0)))
			rec := httptest.NewRecorder()
			a.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/slotmap?"+q, nil))
			var body struct{ Error string }
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != http.StatusBadRequest {
				t.Fatalf("status %d body %q, want 400 with a JSON error", rec.Code, rec.Body.String())
			}
			param := strings.SplitN(q, "=", 2)[0]
			if !strings.HasPrefix(body.Error, param+" must ") || strings.Count(body.Error, "\n") != 0 {
				t.Errorf("error %q, want one sentence about %s", body.Error, param)
			}
		})
	}
}

// TestSlotMapBlocks starts a read with the current index, checks that it
// waits, does one thing, and checks the answer.
func TestSlotMapBlocks(t *testing.T) {
	before, after := testSlotMap(t, 7), testSlotMap(t, 8)
	tests := []struct {
		name  string
		query string        // after index=
		wait  time.Duration // the wait the query asks for
		// act ends the wait, which has run to 1ns short of its end; it
		// returns the map the answer must hold.
		act func(t *testing.T, p *fakePlane, clk *clock.Fake, a *Server) *cachenodes.SlotMap
	}{
		{"returns on a change", "", time.Minute, func(t *testing.T, p *fakePlane, clk *clock.Fake, a *Server) *cachenodes.SlotMap {
			p.set(after)
			return after
		}},
		{"returns when the default wait of 60s passes", "", time.Minute, func(t *testing.T, p *fakePlane, clk *clock.Fake, a *Server) *cachenodes.SlotMap {
			clk.Advance(time.Nanosecond)
			return before
		}},
		{"returns when the given wait passes", "&wait=5m", 5 * time.Minute, func(t *testing.T, p *fakePlane, clk *clock.Fake, a *Server) *cachenodes.SlotMap {
			clk.Advance(time.Nanosecond)
			return before
		}},
		{"a wait over 5m is capped at 5m, as Consul caps it", "&wait=1h", 5 * time.Minute, func(t *testing.T, p *fakePlane, clk *clock.Fake, a *Server) *cachenodes.SlotMap {
			clk.Advance(time.Nanosecond)
			return before
		}},
		{"a notification without a change keeps it waiting", "&wait=2s", 2 * time.Second, func(t *testing.T, p *fakePlane, clk *clock.Fake, a *Server) *cachenodes.SlotMap {
			p.set(before)
			waitAsked(t, p) // the handler looked again, and waits again
			clk.Advance(time.Nanosecond)
			return before
		}},
		{"returns when the server shuts down", "&wait=10s", 10 * time.Second, func(t *testing.T, p *fakePlane, clk *clock.Fake, a *Server) *cachenodes.SlotMap {
			a.stopWaiting()
			a.stopWaiting() // twice is harmless
			return before
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leakcheck.Check(t)
			plane := newFakePlane(before)
			clk := clock.NewFake(time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC))
			a := newSlotMapAPI(plane, clk)
			rec := httptest.NewRecorder()
			done := make(chan struct{})
			go func() {
				defer close(done)
				a.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/slotmap?index="+indexOf(t, before)+tt.query, nil))
			}()
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			if !clk.BlockUntil(ctx, 1) {
				t.Fatal("the read never started waiting")
			}
			waitAsked(t, plane)
			clk.Advance(tt.wait - time.Nanosecond)
			if clk.Waiters() != 1 {
				t.Fatalf("the read's timer fired before its wait of %s was over", tt.wait)
			}
			select {
			case <-done:
				t.Fatalf("the read answered before anything happened: %d %s", rec.Code, rec.Body.String())
			default:
			}
			want := tt.act(t, plane, clk, a)
			select {
			case <-done:
			case <-ctx.Done():
				t.Fatal("the read did not answer")
			}
			checkSlotMapAnswer(t, rec, want)
			if clk.Waiters() != 0 {
				t.Errorf("%d timers left armed", clk.Waiters())
			}
		})
	}
}

// TestSlotMapBlockedCallerLeaves checks that a read whose caller goes away
// returns without answering.
func TestSlotMapBlockedCallerLeaves(t *testing.T) {
	leakcheck.Check(t)
	m := testSlotMap(t, 7)
	plane := newFakePlane(m)
	clk := clock.NewFake(time.Unix(0, 0))
	a := newSlotMapAPI(plane, clk)
	ctx, cancel := context.WithCancel(t.Context())
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/slotmap?index="+indexOf(t, m), nil).WithContext(ctx))
	}()
	wctx, wcancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer wcancel()
	if !clk.BlockUntil(wctx, 1) {
		t.Fatal("the read never started waiting")
	}
	cancel()
	select {
	case <-done:
	case <-wctx.Done():
		t.Fatal("the read did not return")
	}
	if rec.Body.Len() != 0 || clk.Waiters() != 0 {
		t.Errorf("body %q and %d timers armed after the caller left; want neither", rec.Body.String(), clk.Waiters())
	}
}

// waitAsked waits until the handler has called Changed once more.
func waitAsked(t *testing.T, p *fakePlane) {
	t.Helper()
	select {
	case <-p.asked:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler did not look at the map again")
	}
}

// TestSlotMapAge: every answer of GET /v1/slotmap carries X-Mcrib-Map-Age,
// now less the loop's last read of the map, in whole milliseconds, and
// none while the loop has not read the map; a blocked read answers the age
// at the moment it answers.
func TestSlotMapAge(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
	m := testSlotMap(t, 7)
	for _, tt := range []struct {
		name   string
		readAt time.Time // zero: never read
		want   string    // "" absent
	}{
		{"never read", time.Time{}, ""},
		{"read now", t0, "0"},
		{"read 1.5999 s ago", t0.Add(-1599900 * time.Microsecond), "1599"},
		{"read 12 s ago", t0.Add(-12 * time.Second), "12000"},
		{"read ahead of the server's clock", t0.Add(time.Second), "0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			plane := newFakePlane(m)
			plane.setReadAt(tt.readAt)
			a := newSlotMapAPI(plane, clock.NewFake(t0))
			rec := httptest.NewRecorder()
			a.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/slotmap", nil))
			checkSlotMapAnswer(t, rec, m)
			got, ok := rec.Header()[http.CanonicalHeaderKey(mcribapi.MapAgeHeader)]
			switch {
			case tt.want == "" && ok:
				t.Errorf("%s %q on a map never read, want none", mcribapi.MapAgeHeader, got)
			case tt.want != "" && (len(got) != 1 || got[0] != tt.want):
				t.Errorf("%s %q, want %q", mcribapi.MapAgeHeader, got, tt.want)
			}
		})
	}

	t.Run("blocking", func(t *testing.T) {
		leakcheck.Check(t)
		plane := newFakePlane(m)
		plane.setReadAt(t0)
		clk := clock.NewFake(t0)
		a := newSlotMapAPI(plane, clk)
		rec := httptest.NewRecorder()
		done := make(chan struct{})
		go func() {
			defer close(done)
			a.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/slotmap?index="+indexOf(t, m)+"&wait=5s", nil))
		}()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		if !clk.BlockUntil(ctx, 1) {
			t.Fatal("the read never started waiting")
		}
		plane.setReadAt(t0.Add(3 * time.Second)) // the loop read the map again meanwhile
		clk.Advance(5 * time.Second)
		select {
		case <-done:
		case <-ctx.Done():
			t.Fatal("the read did not answer")
		}
		checkSlotMapAnswer(t, rec, m)
		if got := rec.Header().Get(mcribapi.MapAgeHeader); got != "2000" {
			t.Errorf("a read answered at its wait's end: %s %q, want 2000 (5 s less the read at 3 s)", mcribapi.MapAgeHeader, got)
		}
	})
}
