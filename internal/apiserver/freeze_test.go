package apiserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mcrib/mcrib/internal/eventlog"
	"github.com/mcrib/mcrib/mcribapi"
)

// freezePlane is a ControlPlane that records who froze.
type freezePlane struct {
	fakePlane
	mu sync.Mutex
	by string
}

func (f *freezePlane) Freeze(_ context.Context, reason, by string) (mcribapi.FreezeDoc, error) {
	f.mu.Lock()
	f.by = by
	f.mu.Unlock()
	return mcribapi.FreezeDoc{Frozen: true, Reason: reason, By: by}, nil
}

// TestWhoRecordsTheOperator checks that a freeze, a drain and a replace
// record as "by", in what they store and in their event, the operator name
// the call carries, and the token's name or the caller's address without
// one.
func TestWhoRecordsTheOperator(t *testing.T) {
	for _, tc := range []struct {
		name, token, header, want string
	}{
		{name: "operator header, token", token: "s3cret", header: "alice@laptop", want: "alice@laptop"},
		{name: "operator header, no token", header: "alice@laptop", want: "alice@laptop"},
		{name: "no header, token", token: "s3cret", want: "operator@192.0.2.1:1234"},
		{name: "no header, no token", want: "192.0.2.1:1234"},
		{name: "blank header", header: "  ", want: "192.0.2.1:1234"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plane := &freezePlane{}
			zones := &fakeZones{}
			a := newServer(Options{Loop: plane, Token: tc.token})
			a.zones = zones
			a.ops = NewOps(eventlog.NewLog(eventlog.Options{}), eventlog.NewHistory(eventlog.HistoryOptions{}))
			send := func(method, path, body string) {
				t.Helper()
				req := httptest.NewRequest(method, path, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				if tc.token != "" {
					req.Header.Set("Authorization", "Bearer "+tc.token)
				}
				if tc.header != "" {
					req.Header.Set(mcribapi.OperatorHeader, tc.header)
				}
				rr := httptest.NewRecorder()
				a.ServeHTTP(rr, req)
				if rr.Code != http.StatusOK {
					t.Fatalf("%s %s: %d %s", method, path, rr.Code, rr.Body)
				}
			}
			send("PUT", "/v1/freeze", `{"reason":"deploy"}`)
			if plane.by != tc.want {
				t.Errorf("freeze stored by %q, want %q", plane.by, tc.want)
			}
			send("PUT", "/v1/drain/b", `{"reason":"flapping"}`)
			if zones.by != tc.want {
				t.Errorf("drain stored by %q, want %q", zones.by, tc.want)
			}
			send("POST", "/v1/nodes/mc-1/replace", `{"reason":"retire"}`)
			if zones.by != tc.want {
				t.Errorf("replace stored by %q, want %q", zones.by, tc.want)
			}
			send("DELETE", "/v1/drain/b", ``)

			rr := httptest.NewRecorder()
			a.ServeHTTP(rr, httptest.NewRequest("GET", "/v1/events", nil))
			var evs []mcribapi.Event
			if err := json.Unmarshal(rr.Body.Bytes(), &evs); err != nil {
				t.Fatal(err)
			}
			if len(evs) != 4 {
				t.Fatalf("%d events, want the 4 operator changes: %s", len(evs), rr.Body)
			}
			for _, e := range evs {
				if e.Who != tc.want {
					t.Errorf("event %q by %q, want %q", e.Reason, e.Who, tc.want)
				}
			}
		})
	}
}
