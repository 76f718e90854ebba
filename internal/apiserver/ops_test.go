package apiserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/internal/eventlog"
	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/ratelimit"
)

// fixedBoot is a boot limiter whose document a test sets.
type fixedBoot struct {
	BootLimiter
	doc ratelimit.Document
}

func (f *fixedBoot) Document() ratelimit.Document { return f.doc }

func TestEventsAndHistoryAPI(t *testing.T) {
	fc := clock.NewFake(time.Date(2026, 12, 1, 5, 0, 0, 0, time.UTC))
	ops := NewOps(eventlog.NewLog(eventlog.Options{Clock: fc}),
		eventlog.NewHistory(eventlog.HistoryOptions{Interval: 10 * time.Second, Clock: fc}))
	a := newServer(Options{})
	a.ops = ops
	boot := &fixedBoot{doc: ratelimit.Document{Mode: "auto", Limit: 100}}

	// First interval: no traffic, one refusal, a hold.
	teeBoot{ops}.BootAdmission(false)
	ops.Sink().Record(mcribapi.Event{Kind: mcribapi.EventHoldStarted, Node: "mc-2", Reason: "Consul lists it as critical"})
	fc.Advance(10 * time.Second)
	ops.hist.Sample(ops.reading(boot, func() (float64, bool) { return 0, false }))
	// Second: an operator pins the limit; a replacement.
	ops.operator("10.0.0.9:4444", "boot limit manual 50 boots/s, burst 5")
	boot.doc = ratelimit.Document{Mode: "manual", Limit: 50, Reason: "pinned by an operator"}
	ops.Sink().Record(mcribapi.Event{Kind: mcribapi.EventReplacement, Node: "mc-2", Reason: "its hold of 1m passed"})
	fc.Advance(10 * time.Second)
	ops.hist.Sample(ops.reading(boot, func() (float64, bool) { return 0.5, true }))

	get := func(path string) *httptest.ResponseRecorder {
		rr := httptest.NewRecorder()
		a.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, path, nil))
		return rr
	}
	rr := get("/v1/events")
	if rr.Code != http.StatusOK || rr.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET /v1/events: %d %s", rr.Code, rr.Body)
	}
	var evs []map[string]any
	if err := json.Unmarshal(rr.Body.Bytes(), &evs); err != nil {
		t.Fatal(err)
	}
	wantKinds := []string{"hold started", "operator change", "replacement", "boot limit"}
	if len(evs) != len(wantKinds) {
		t.Fatalf("events %v, want kinds %v", evs, wantKinds)
	}
	for i, e := range evs {
		if e["kind"] != wantKinds[i] || e["at"] == nil || e["reason"] == "" {
			t.Errorf("event %d = %v, want kind %q with at and reason", i, e, wantKinds[i])
		}
	}
	if evs[0]["node"] != "mc-2" || evs[1]["who"] != "10.0.0.9:4444" {
		t.Errorf("events %v: want node mc-2 first, the operator's address second", evs)
	}
	if _, ok := evs[1]["node"]; ok {
		t.Errorf("an operator change names a node: %v", evs[1])
	}
	if r := evs[3]["reason"].(string); !strings.Contains(r, "auto 100 → manual 50") {
		t.Errorf("boot-limit event reason %q, want the move from auto 100 to manual 50", r)
	}

	var later []mcribapi.Event
	if err := json.Unmarshal(get("/v1/events?since=2").Body.Bytes(), &later); err != nil || len(later) != 2 || later[0].Seq != 3 {
		t.Errorf("?since=2: %v %v, want events 3 and 4", later, err)
	}
	var all []mcribapi.Event
	if err := json.Unmarshal(get("/v1/events?since=99").Body.Bytes(), &all); err != nil || len(all) != 4 {
		t.Errorf("?since=99 (a reader of an earlier process): %v %v, want all 4 events", all, err)
	}
	if rr := get("/v1/events?since=x"); rr.Code != http.StatusBadRequest || !strings.Contains(rr.Body.String(), `"error"`) {
		t.Errorf("?since=x: %d %s, want a 400 JSON error", rr.Code, rr.Body)
	}

	rr = get("/v1/history")
	var hist map[string]json.RawMessage
	if err := json.Unmarshal(rr.Body.Bytes(), &hist); err != nil || rr.Code != http.StatusOK {
		t.Fatalf("GET /v1/history: %d %s", rr.Code, rr.Body)
	}
	series := []struct{ name, want string }{
		{"hit_rate", "[null,0.5]"},
		{"boot_limit", "[100,50]"},
		{"admissions", "[0,0]"},
		{"refusals", "[1,0]"},
		{"flushes", "[0,0]"},
		{"replacements", "[0,1]"},
		{"interval_seconds", "10"},
	}
	for _, s := range series {
		if got := string(hist[s.name]); got != s.want {
			t.Errorf("history %s = %s, want %s", s.name, got, s.want)
		}
	}
}

func TestEventsAndHistoryWithoutARecord(t *testing.T) {
	a := newServer(Options{})
	for _, tc := range []struct{ path, want string }{
		{"/v1/events", "[]\n"},
		{"/v1/history", `"hit_rate":[]`},
	} {
		rr := httptest.NewRecorder()
		a.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, tc.path, nil))
		if rr.Code != http.StatusOK || !strings.Contains(rr.Body.String(), tc.want) {
			t.Errorf("GET %s: %d %q, want 200 with %q", tc.path, rr.Code, rr.Body, tc.want)
		}
	}
}
