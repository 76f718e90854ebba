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

	"github.com/mcrib/mcrib/internal/eventlog"
	"github.com/mcrib/mcrib/mcribapi"
)

// fakeResizes is a ResizeOps that records its calls and answers with err
// (nil: a resize document built from the call).
type fakeResizes struct {
	mu    sync.Mutex
	calls []string
	req   mcribapi.Resize
	by    string
	err   error
}

func (f *fakeResizes) record(call string, by string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls, f.by = append(f.calls, call), by
	return f.err
}

func (f *fakeResizes) StartResize(_ context.Context, req mcribapi.Resize, by string) (mcribapi.ResizeDoc, error) {
	if err := f.record(fmt.Sprintf("start %d", req.NumSlots), by); err != nil {
		return mcribapi.ResizeDoc{}, err
	}
	f.mu.Lock()
	f.req = req
	f.mu.Unlock()
	return mcribapi.ResizeDoc{Resize: &mcribapi.ResizeEntry{From: req.NumSlots / 2, To: req.NumSlots, Reason: req.Reason, By: by,
		StepPercent: req.StepPercent, StepInterval: req.IntervalText(), Twins: req.NumSlots / 2, State: mcribapi.ResizeSplitting}}, nil
}

func (f *fakeResizes) StopResize(_ context.Context, by string) (mcribapi.ResizeDoc, error) {
	if err := f.record("stop", by); err != nil {
		return mcribapi.ResizeDoc{}, err
	}
	return mcribapi.ResizeDoc{Resize: &mcribapi.ResizeEntry{From: 16, To: 32, State: mcribapi.ResizeStopped}}, nil
}

func (f *fakeResizes) ResizeDoc() mcribapi.ResizeDoc { return mcribapi.ResizeDoc{} }

func (f *fakeResizes) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func resizeAPI(token string, z *fakeResizes) *Server {
	a := newServer(Options{Token: token})
	a.resizes = z
	a.ops = NewOps(eventlog.NewLog(eventlog.Options{}), eventlog.NewHistory(eventlog.HistoryOptions{}))
	return a
}

func TestResizeAPIBadInputChangesNothing(t *testing.T) {
	for _, tt := range []struct {
		name, method, body string
		want               int
		wantIn             string
	}{
		{"no num_slots", "PUT", `{"reason":"r"}`, 400, `"num_slots" is required`},
		{"too many slots", "PUT", `{"num_slots":8192,"reason":"r"}`, 400, "at most 4096"},
		{"no reason", "PUT", `{"num_slots":32}`, 400, "reason"},
		{"step 0", "PUT", `{"num_slots":32,"reason":"r","step_percent":0}`, 400, "step_percent"},
		{"interval 2h", "PUT", `{"num_slots":32,"reason":"r","step_interval":"2h"}`, 400, "step_interval"},
		{"interval null", "PUT", `{"num_slots":32,"reason":"r","step_interval":null}`, 400, "not null"},
		{"unknown field", "PUT", `{"num_slots":32,"reason":"r","slots":3}`, 400, "JSON"},
		{"not json", "PUT", `slots=32`, 400, "JSON"},
		{"no token", "PUT", `{"num_slots":32,"reason":"r"}`, 401, ""},
		{"stop without token", "DELETE", ``, 401, ""},
		{"post", "POST", `{"num_slots":32,"reason":"r"}`, 405, "it takes DELETE, GET, PUT"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			z := &fakeResizes{}
			a := resizeAPI("s3cret", z)
			token := "s3cret"
			if tt.want == 401 {
				token = ""
			}
			wantRefused(t, call(a, tt.method, "/v1/resize", tt.body, token), tt.want, tt.wantIn)
			if calls := z.called(); len(calls) != 0 {
				t.Errorf("a refused call reached the loop: %v", calls)
			}
		})
	}
}

func TestResizeAPI(t *testing.T) {
	z := &fakeResizes{}
	a := resizeAPI("", z)
	rr := call(a, "GET", "/v1/resize", "", "")
	if rr.Code != 200 || strings.TrimSpace(rr.Body.String()) != `{"resize":null}` {
		t.Fatalf("GET: %d %s", rr.Code, rr.Body)
	}
	rr = call(a, "PUT", "/v1/resize", `{"num_slots":32,"reason":"grown past its slots","step_percent":20,"step_interval":"1m"}`, "")
	var doc mcribapi.ResizeDoc
	if rr.Code != 200 || json.Unmarshal(rr.Body.Bytes(), &doc) != nil || doc.Resize == nil || doc.Resize.To != 32 || doc.Resize.StepInterval != "1m" {
		t.Fatalf("PUT: %d %s", rr.Code, rr.Body)
	}
	if z.req.StepPercent != 20 || z.by == "" {
		t.Errorf("the loop got %+v from %q", z.req, z.by)
	}
	rr = call(a, "DELETE", "/v1/resize", "", "")
	if rr.Code != 200 || !strings.Contains(rr.Body.String(), `"state":"stopped"`) {
		t.Fatalf("DELETE: %d %s", rr.Code, rr.Body)
	}
	for _, tc := range []struct {
		err    error
		method string
		want   int
		in     string
	}{
		{fmt.Errorf("%w: no resize runs", mcribapi.ErrNoResize), "DELETE", 404, "no resize runs"},
		{fmt.Errorf("%w: no resize runs: the resize from 16 to 32 slots is stopped with 9 twins left (PUT /v1/resize with num_slots 32 resumes it)", mcribapi.ErrNoResize),
			"DELETE", 404, "stopped with 9 twins left (PUT /v1/resize with num_slots 32 resumes it)"},
		{fmt.Errorf("%w: cannot resize the pool now: zone \"b\" is drained", mcribapi.ErrRefused), "PUT", 409, `zone "b" is drained`},
		{fmt.Errorf("%w: \"num_slots\" must be exactly twice the pool's 16 slots (32), not 48", mcribapi.ErrBadRequest), "PUT", 400, "exactly twice"},
		{mcribapi.ErrNotLeader, "PUT", http.StatusServiceUnavailable, "no leader is known to carry out the resize"},
	} {
		z.err = tc.err
		rr := call(a, tc.method, "/v1/resize", `{"num_slots":48,"reason":"r"}`, "")
		if tc.method == "DELETE" {
			rr = call(a, tc.method, "/v1/resize", "", "")
		}
		if rr.Code != tc.want || !strings.Contains(errorSentence(t, rr), tc.in) {
			t.Errorf("%v: %d %s, want %d containing %q", tc.err, rr.Code, rr.Body, tc.want, tc.in)
		}
	}
}

// TestResizeIsForwardedToTheLeader: a follower whose loop answers
// ErrNotLeader sends PUT and DELETE /v1/resize to the leader, with the
// caller's token, and answers with the leader's answer.
func TestResizeIsForwardedToTheLeader(t *testing.T) {
	leaderOps := &fakeResizes{}
	leaderAPI := resizeAPI("sekrit", leaderOps)
	leaderAPI.replicas = peerReplicas{"s-me"}
	leaderSrv := httptest.NewServer(leaderAPI)
	defer leaderSrv.Close()
	follower := resizeAPI("sekrit", &fakeResizes{err: mcribapi.ErrNotLeader})
	follower.leader = func() (bool, string) { return false, leaderSrv.Listener.Addr().String() }
	follower.replicas = fixedReplicas{n: 2}

	rr := call(follower, "PUT", "/v1/resize", `{"num_slots":32,"reason":"grown"}`, "sekrit")
	if rr.Code != 200 || !strings.Contains(rr.Body.String(), `"to":32`) {
		t.Fatalf("forwarded resize: %d %s", rr.Code, rr.Body)
	}
	leaderOps.err = fmt.Errorf("%w: no resize runs", mcribapi.ErrNoResize)
	rr = call(follower, "DELETE", "/v1/resize", "", "sekrit")
	if rr.Code != 404 || errorSentence(t, rr) != "no resize runs" {
		t.Fatalf("forwarded stop: %d %s", rr.Code, rr.Body)
	}
	if c := leaderOps.called(); len(c) != 2 || c[0] != "start 32" || c[1] != "stop" {
		t.Errorf("the leader's loop saw %v", c)
	}
	if !strings.Contains(leaderOps.by, " via ") {
		t.Errorf("the leader recorded the call as by %q, want the original caller via the follower", leaderOps.by)
	}
}
