package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcrib/mcrib/internal/eventlog"
	"github.com/mcrib/mcrib/mcribapi"
)

// fakeZones is a ZoneOps that records its calls and answers with err (nil:
// a drain document or replace result built from the call).
type fakeZones struct {
	mu    sync.Mutex
	calls []string
	req   mcribapi.Drain
	by    string
	err   error
}

func (f *fakeZones) record(call string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
	return f.err
}

func (f *fakeZones) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeZones) Drain(_ context.Context, zone string, req mcribapi.Drain, by string) (mcribapi.DrainDoc, error) {
	if err := f.record("drain " + zone); err != nil {
		return mcribapi.DrainDoc{}, err
	}
	f.mu.Lock()
	f.req, f.by = req, by
	f.mu.Unlock()
	return mcribapi.DrainDoc{Zones: map[string]*mcribapi.DrainEntry{zone: {
		Percent: req.Percent, StepPercent: req.StepPercent, StepInterval: req.StepInterval.String(),
		Reason: req.Reason, By: by, BaselineSlots: 5, Slots: 5, State: mcribapi.DrainDraining}}}, nil
}

func (f *fakeZones) Undrain(_ context.Context, zone string) (mcribapi.DrainDoc, error) {
	if err := f.record("undrain " + zone); err != nil {
		return mcribapi.DrainDoc{}, err
	}
	return mcribapi.DrainDoc{Zones: map[string]*mcribapi.DrainEntry{zone: {Returning: true, State: mcribapi.DrainReturning}}}, nil
}

func (f *fakeZones) Drains() mcribapi.DrainDoc {
	f.record("drains")
	return mcribapi.DrainDoc{}
}

func (f *fakeZones) Replace(_ context.Context, id, reason, by string) (mcribapi.ReplaceAnswer, error) {
	if err := f.record("replace " + id); err != nil {
		return mcribapi.ReplaceAnswer{}, err
	}
	f.mu.Lock()
	f.by = by
	f.mu.Unlock()
	return mcribapi.ReplaceAnswer{Slot: 3, From: id, To: "mc-9", Warm: true}, nil
}

func zoneAPI(t *testing.T, token string, z *fakeZones) *Server {
	t.Helper()
	a := newServer(Options{Token: token})
	a.zones = z
	a.ops = NewOps(eventlog.NewLog(eventlog.Options{}), eventlog.NewHistory(eventlog.HistoryOptions{}))
	return a
}

func call(a http.Handler, method, path, body, token string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rr := httptest.NewRecorder()
	a.ServeHTTP(rr, req)
	return rr
}

// errorSentence returns the "error" of an answer, failing unless it is one
// sentence-like line.
func errorSentence(t *testing.T, rr *httptest.ResponseRecorder) string {
	t.Helper()
	var doc struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(rr.Body.Bytes(), &doc); err != nil || doc.Error == "" {
		t.Fatalf("answer %d %q is not a JSON error", rr.Code, rr.Body)
	}
	if strings.Contains(doc.Error, "\n") || strings.Contains(doc.Error, "controlloop:") {
		t.Errorf("error %q is not one readable sentence", doc.Error)
	}
	return doc.Error
}

// wantRefused fails the test unless rr answers code with an error sentence
// that contains wantIn.
func wantRefused(t *testing.T, rr *httptest.ResponseRecorder, code int, wantIn string) {
	t.Helper()
	if rr.Code != code {
		t.Fatalf("%d %s, want %d", rr.Code, rr.Body, code)
	}
	if msg := errorSentence(t, rr); !strings.Contains(msg, wantIn) {
		t.Errorf("error %q, want it to contain %q", msg, wantIn)
	}
}

func TestDrainAPIBadInputChangesNothing(t *testing.T) {
	long := strings.Repeat("x", 513)
	for _, tt := range []struct {
		name, method, path, body string
		want                     int
		wantIn                   string
	}{
		{"percent 0", "PUT", "/v1/drain/b", `{"reason":"r","percent":0}`, 400, "percent"},
		{"percent 101", "PUT", "/v1/drain/b", `{"reason":"r","percent":101}`, 400, "percent"},
		{"step 0", "PUT", "/v1/drain/b", `{"reason":"r","step_percent":0}`, 400, "step_percent"},
		{"step 101", "PUT", "/v1/drain/b", `{"reason":"r","step_percent":101}`, 400, "step_percent"},
		{"interval 500ms", "PUT", "/v1/drain/b", `{"reason":"r","step_interval":"500ms"}`, 400, "step_interval"},
		{"interval 2h", "PUT", "/v1/drain/b", `{"reason":"r","step_interval":"2h"}`, 400, "step_interval"},
		{"interval word", "PUT", "/v1/drain/b", `{"reason":"r","step_interval":"soon"}`, 400, "step_interval"},
		{"no reason", "PUT", "/v1/drain/b", `{"percent":50}`, 400, "reason"},
		{"percent null", "PUT", "/v1/drain/b", `{"reason":"x","percent":null}`, 400, `"percent" must be an integer from 1 to 100, not null`},
		{"step null", "PUT", "/v1/drain/b", `{"reason":"x","step_percent":null}`, 400, `"step_percent" must be an integer from 1 to 100, not null`},
		{"interval null", "PUT", "/v1/drain/b", `{"reason":"x","step_interval":null}`, 400, `"step_interval" must be a duration from 1s to 1h, not null`},
		{"reason null", "PUT", "/v1/drain/b", `{"reason":null,"percent":50}`, 400, `"reason" must be a non-empty string, not null`},
		{"null in another case", "PUT", "/v1/drain/b", `{"reason":"x","Percent":null}`, 400, `"percent"`},
		{"blank reason", "PUT", "/v1/drain/b", `{"reason":"  "}`, 400, "reason"},
		{"long reason", "PUT", "/v1/drain/b", `{"reason":"` + long + `"}`, 400, "512"},
		{"not json", "PUT", "/v1/drain/b", `percent=5`, 400, "JSON"},
		{"unknown field", "PUT", "/v1/drain/b", `{"reason":"r","zone":"c"}`, 400, "JSON"},
		{"no zone", "PUT", "/v1/drain/", `{"reason":"r"}`, 404, "zone"},
		{"weird zone", "PUT", "/v1/drain/b$c", `{"reason":"r"}`, 400, "zone"},
		{"non-ASCII zone", "PUT", "/v1/drain/z%C3%BCrich", `{"reason":"r"}`, 400, "ASCII"},
		{"slash zone", "DELETE", "/v1/drain/b/c", ``, 400, "zone"},
		{"long zone", "PUT", "/v1/drain/" + strings.Repeat("z", 129), `{"reason":"r"}`, 400, "zone"},
		{"replace no reason", "POST", "/v1/nodes/mc-1/replace", `{}`, 400, "reason"},
		{"replace long reason", "POST", "/v1/nodes/mc-1/replace", `{"reason":"` + long + `"}`, 400, "512"},
		{"replace no node", "POST", "/v1/nodes//replace", `{"reason":"r"}`, 404, "node"},
		{"replace bad node", "POST", "/v1/nodes/mc%01x/replace", `{"reason":"r"}`, 400, "node"},
		{"too big", "PUT", "/v1/drain/b", `{"reason":"` + strings.Repeat("x", 65<<10) + `"}`, 413, "KiB"},
		{"replace too big", "POST", "/v1/nodes/mc-1/replace", strings.Repeat(" ", 65<<10) + `{"reason":"r"}`, 413, "KiB"},
		{"get drain zone", "GET", "/v1/drain/b", ``, 405, "PUT"},
		{"post drain", "POST", "/v1/drain", `{}`, 405, "GET"},
		{"get replace", "GET", "/v1/nodes/mc-1/replace", ``, 405, "POST"},
		{"nodes without replace", "POST", "/v1/nodes/mc-1", `{"reason":"r"}`, 404, "/v1/nodes/mc-1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			z := &fakeZones{}
			wantRefused(t, call(zoneAPI(t, "", z), tt.method, tt.path, tt.body, ""), tt.want, tt.wantIn)
			if c := z.called(); len(c) != 0 {
				t.Errorf("the loop was called: %v", c)
			}
		})
	}
}

func TestDrainAPI(t *testing.T) {
	z := &fakeZones{}
	a := zoneAPI(t, "", z)
	rr := call(a, "PUT", "/v1/drain/b", `{"reason":"link to b flapping","percent":50,"step_percent":25,"step_interval":"3s"}`, "")
	if rr.Code != 200 {
		t.Fatalf("PUT: %d %s", rr.Code, rr.Body)
	}
	want := mcribapi.Drain{Reason: "link to b flapping", Percent: 50, StepPercent: 25, StepInterval: 3 * time.Second, StepIntervalText: "3s"}
	if z.req != want {
		t.Errorf("the loop got %+v, want %+v", z.req, want)
	}
	var doc mcribapi.DrainDoc
	if err := json.Unmarshal(rr.Body.Bytes(), &doc); err != nil || doc.Zones["b"] == nil || doc.Zones["b"].StepInterval != "3s" {
		t.Fatalf("answer %s: %v", rr.Body, err)
	}
	// Defaults apply to the fields left out.
	if rr := call(a, "PUT", "/v1/drain/eu-west-1a", `{"reason":"r"}`, ""); rr.Code != 200 ||
		z.req != (mcribapi.Drain{Reason: "r", Percent: 100, StepPercent: 10, StepInterval: 30 * time.Second}) {
		t.Errorf("PUT with defaults: %d, loop got %+v", rr.Code, z.req)
	}
	if rr := call(a, "DELETE", "/v1/drain/b", ``, ""); rr.Code != 200 || !strings.Contains(rr.Body.String(), `"returning"`) {
		t.Errorf("DELETE: %d %s", rr.Code, rr.Body)
	}
	if rr := call(a, "GET", "/v1/drain", ``, ""); rr.Code != 200 || strings.TrimSpace(rr.Body.String()) != `{"zones":{}}` {
		t.Errorf("GET /v1/drain: %d %s, want {\"zones\":{}}", rr.Code, rr.Body)
	}
	events := a.ops.log.Since(0)
	if len(events) != 3 || events[0].Kind != mcribapi.EventOperator || !strings.Contains(events[0].Reason, "drain zone b") ||
		!strings.Contains(events[0].Reason, "link to b flapping") || !strings.Contains(events[2].Reason, "undrain zone b") {
		t.Errorf("events %+v, want the drain and the undrain of b", events)
	}
}

func TestZoneAPIErrorsOfTheLoop(t *testing.T) {
	for _, tt := range []struct {
		name, method, path, body string
		err                      error
		want                     int
		wantIn                   string
	}{
		{"unknown zone", "PUT", "/v1/drain/q", `{"reason":"r"}`, mcribapi.ErrUnknownZone, 404, `zone "q"`},
		{"last zone", "PUT", "/v1/drain/a", `{"reason":"r"}`,
			fmt.Errorf("%w: draining a would leave no undrained zone", mcribapi.ErrRefused), 409, "draining a would leave no undrained zone"},
		{"not drained", "DELETE", "/v1/drain/a", ``, mcribapi.ErrNotDrained, 404, "not drained"},
		{"unknown node", "POST", "/v1/nodes/mc-77/replace", `{"reason":"r"}`, mcribapi.ErrUnknownNode, 404, "mc-77"},
		{"no spare", "POST", "/v1/nodes/mc-1/replace", `{"reason":"r"}`,
			fmt.Errorf("%w: no spare can take slot 3", mcribapi.ErrRefused), 409, "no spare can take slot 3"},
		{"consul down", "PUT", "/v1/drain/a", `{"reason":"r"}`, fmt.Errorf("connection refused"), 503, "Consul"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			z := &fakeZones{err: tt.err}
			a := zoneAPI(t, "", z)
			wantRefused(t, call(a, tt.method, tt.path, tt.body, ""), tt.want, tt.wantIn)
			if n := len(a.ops.log.Since(0)); n != 0 {
				t.Errorf("a refused change was recorded as %d events", n)
			}
		})
	}
}

func TestZoneAPINeedsTheToken(t *testing.T) {
	for _, c := range []struct{ method, path, body string }{
		{"PUT", "/v1/drain/b", `{"reason":"r"}`},
		{"DELETE", "/v1/drain/b", ``},
		{"POST", "/v1/nodes/mc-1/replace", `{"reason":"r"}`},
	} {
		z := &fakeZones{}
		a := zoneAPI(t, "sekrit", z)
		for _, tok := range []string{"", "wrong"} {
			if rr := call(a, c.method, c.path, c.body, tok); rr.Code != 401 {
				t.Errorf("%s %s with token %q: %d, want 401", c.method, c.path, tok, rr.Code)
			}
		}
		if len(z.called()) != 0 {
			t.Errorf("%s %s: the loop was called without the token", c.method, c.path)
		}
		if rr := call(a, c.method, c.path, c.body, "sekrit"); rr.Code != 200 {
			t.Errorf("%s %s with the token: %d %s", c.method, c.path, rr.Code, rr.Body)
		}
	}
	// Reads need none.
	if rr := call(zoneAPI(t, "sekrit", &fakeZones{}), "GET", "/v1/drain", ``, ""); rr.Code != 200 {
		t.Errorf("GET /v1/drain without a token: %d", rr.Code)
	}
}

func TestZoneAPIWithoutZoneOps(t *testing.T) {
	a := newServer(Options{})
	if rr := call(a, "PUT", "/v1/drain/b", `{"reason":"r"}`, ""); rr.Code != 503 {
		t.Errorf("PUT without zone operations: %d, want 503", rr.Code)
	}
}
