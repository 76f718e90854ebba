package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/mcrib/mcrib/internal/eventlog"
	"github.com/mcrib/mcrib/mcribapi"
)

// fakeRolls is a RollOps that records its calls and answers with err
// (nil: a roll document built from the call).
type fakeRolls struct {
	mu    sync.Mutex
	calls []string
	req   mcribapi.Roll
	err   error
}

func (f *fakeRolls) StartRoll(_ context.Context, req mcribapi.Roll, by string) (mcribapi.RollDoc, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls, f.req = append(f.calls, "start "+req.What()), req
	if f.err != nil {
		return mcribapi.RollDoc{}, f.err
	}
	return mcribapi.RollDoc{Roll: &mcribapi.RollEntry{Reason: req.Reason, By: by, RestartTimeout: req.TimeoutText(), State: mcribapi.RollRolling}}, nil
}

func (f *fakeRolls) StopRoll(_ context.Context, by string) (mcribapi.RollDoc, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "stop")
	if f.err != nil {
		return mcribapi.RollDoc{}, f.err
	}
	return mcribapi.RollDoc{Roll: &mcribapi.RollEntry{State: mcribapi.RollStopped}}, nil
}

func (f *fakeRolls) RollDoc() mcribapi.RollDoc { return mcribapi.RollDoc{} }

func (f *fakeRolls) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func rollAPI(token string, z *fakeRolls) *Server {
	a := newServer(Options{Token: token})
	a.rolls = z
	a.ops = NewOps(eventlog.NewLog(eventlog.Options{}), eventlog.NewHistory(eventlog.HistoryOptions{}))
	return a
}

// TestRollAPIBadInputChangesNothing: every 400 of PUT /v1/roll, the 401
// of both mutating calls, the 405 and the 413, each before the loop.
func TestRollAPIBadInputChangesNothing(t *testing.T) {
	for _, tt := range []struct {
		name, method, body string
		want               int
		wantIn             string
	}{
		{"no reason", "PUT", `{"all":true}`, 400, "reason"},
		{"a long reason", "PUT", `{"all":true,"reason":"` + strings.Repeat("r", 513) + `"}`, 400, "more than the 512"},
		{"none of the three", "PUT", `{"reason":"r"}`, 400, `exactly one of "zone", "nodes" and "all"`},
		{"all false", "PUT", `{"reason":"r","all":false}`, 400, "exactly one"},
		{"two of them", "PUT", `{"reason":"r","all":true,"zone":"a"}`, 400, "not 2 of them"},
		{"empty nodes", "PUT", `{"reason":"r","nodes":[]}`, 400, "at least one"},
		{"a node twice", "PUT", `{"reason":"r","nodes":["mc-1","mc-1"]}`, 400, "twice"},
		{"a bad zone", "PUT", `{"reason":"r","zone":"a b"}`, 400, "zone"},
		{"timeout too short", "PUT", `{"reason":"r","all":true,"restart_timeout":"5s"}`, 400, "from 10s to 1h"},
		{"timeout too long", "PUT", `{"reason":"r","all":true,"restart_timeout":"2h"}`, 400, "from 10s to 1h"},
		{"timeout unreadable", "PUT", `{"reason":"r","all":true,"restart_timeout":"soon"}`, 400, "a duration"},
		{"timeout null", "PUT", `{"reason":"r","all":true,"restart_timeout":null}`, 400, "not null"},
		{"unknown field", "PUT", `{"reason":"r","all":true,"node":"x"}`, 400, "JSON"},
		{"not json", "PUT", `all=1`, 400, "JSON"},
		{"too large", "PUT", `{"reason":"` + strings.Repeat("r", 70000) + `"}`, 413, ""},
		{"no token", "PUT", `{"reason":"r","all":true}`, 401, ""},
		{"stop without token", "DELETE", ``, 401, ""},
		{"post", "POST", `{"reason":"r","all":true}`, 405, "it takes DELETE, GET, PUT"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			z := &fakeRolls{}
			a := rollAPI("s3cret", z)
			token := "s3cret"
			if tt.want == 401 {
				token = ""
			}
			rr := call(a, tt.method, "/v1/roll", tt.body, token)
			if rr.Code != tt.want {
				t.Fatalf("%s: %d %s, want %d", tt.name, rr.Code, rr.Body, tt.want)
			}
			if got := errorSentence(t, rr); !strings.Contains(got, tt.wantIn) {
				t.Errorf("error %q, want it to contain %q", got, tt.wantIn)
			}
			if calls := z.called(); len(calls) != 0 {
				t.Errorf("a refused call reached the loop: %v", calls)
			}
		})
	}
}

// TestRollAPI: GET answers {"roll": null}, PUT and DELETE answer the
// document, and the loop's refusals answer 404 and 409 with their
// sentence.
func TestRollAPI(t *testing.T) {
	z := &fakeRolls{}
	a := rollAPI("", z)
	rr := call(a, "GET", "/v1/roll", "", "")
	if rr.Code != 200 || strings.TrimSpace(rr.Body.String()) != `{"roll":null}` {
		t.Fatalf("GET: %d %s", rr.Code, rr.Body)
	}
	rr = call(a, "PUT", "/v1/roll", `{"reason":"memcached 1.6.38","nodes":["mc-3","mc-7"],"restart_timeout":"15m"}`, "")
	var doc mcribapi.RollDoc
	if rr.Code != 200 || json.Unmarshal(rr.Body.Bytes(), &doc) != nil || doc.Roll == nil || doc.Roll.RestartTimeout != "15m" {
		t.Fatalf("PUT: %d %s", rr.Code, rr.Body)
	}
	if len(z.req.Nodes) != 2 || z.req.Nodes[1] != "mc-7" {
		t.Errorf("the loop got %+v", z.req)
	}
	rr = call(a, "PUT", "/v1/roll", `{"reason":"r","zone":"a"}`, "")
	if rr.Code != 200 || !z.req.HasZone || z.req.Zone != "a" || z.req.RestartTimeout.String() != "10m0s" {
		t.Fatalf("PUT of a zone: %d %s, the loop got %+v", rr.Code, rr.Body, z.req)
	}
	rr = call(a, "DELETE", "/v1/roll", "", "")
	if rr.Code != 200 || !strings.Contains(rr.Body.String(), `"state":"stopped"`) {
		t.Fatalf("DELETE: %d %s", rr.Code, rr.Body)
	}
	for _, tc := range []struct {
		err    error
		method string
		want   int
		in     string
	}{
		{fmt.Errorf("%w: no roll runs", mcribapi.ErrNoRoll), "DELETE", 404, "no roll runs"},
		{fmt.Errorf("%w: no node %q is known", mcribapi.ErrUnknownNode, "mc-9"), "PUT", 404, `no node "mc-9" is known`},
		{fmt.Errorf("%w: no node is known in zone %q", mcribapi.ErrUnknownZone, "q"), "PUT", 404, `zone "q"`},
		{fmt.Errorf("%w: cannot start a roll now: membership is frozen by an operator", mcribapi.ErrRefused), "PUT", 409, "frozen"},
		{fmt.Errorf("%w: cannot start a roll now: zone \"b\" is drained", mcribapi.ErrRefused), "PUT", 409, "drained"},
		{fmt.Errorf("%w: cannot start a roll now: the resize from 16 to 32 slots is splitting", mcribapi.ErrRefused), "PUT", 409, "splitting"},
		{fmt.Errorf("%w: cannot start a roll now: another roll runs", mcribapi.ErrRefused), "PUT", 409, "another roll"},
		{fmt.Errorf("%w: cannot start a roll now: a node it restarts holds a slot and the pool has no ready spare", mcribapi.ErrRefused), "PUT", 409, "no ready spare"},
		{mcribapi.ErrNotLeader, "PUT", http.StatusServiceUnavailable, "no leader is known to carry out the roll"},
	} {
		z.err = tc.err
		rr := call(a, tc.method, "/v1/roll", `{"reason":"r","all":true}`, "")
		if tc.method == "DELETE" {
			rr = call(a, tc.method, "/v1/roll", "", "")
		}
		if rr.Code != tc.want || !strings.Contains(errorSentence(t, rr), tc.in) {
			t.Errorf("%v: %d %s, want %d containing %q", tc.err, rr.Code, rr.Body, tc.want, tc.in)
		}
	}
}
