package bootgate

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcrib/mcrib/clock"
)

// TestLeadersAnswerRelayedAsItIs: a follower answers a forwarded boot
// with the leader's answer as the leader wrote it, status, body and
// Retry-After, whatever the status: an error of the leader (503) is the
// leader's answer, not a broken one (502).
func TestLeadersAnswerRelayedAsItIs(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		retry  string
	}{
		{http.StatusOK, `{"admitted":true,"note":"from the leader"}` + "\n", ""},
		{http.StatusTooManyRequests, `{"admitted":false,"note":"from the leader"}` + "\n", "7"},
		{http.StatusServiceUnavailable, `{"error":"the leader is stepping down"}` + "\n", "2"},
	} {
		b := newBed(t, 0)
		b.net.answer = func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			if tc.retry != "" {
				w.Header().Set("Retry-After", tc.retry)
			}
			w.WriteHeader(tc.status)
			w.Write([]byte(tc.body))
		}
		rec := b.boot("")
		if rec.Code != tc.status || rec.Body.String() != tc.body || rec.Header().Get("Retry-After") != tc.retry {
			t.Errorf("the leader answered %d %q (Retry-After %q); the follower relayed %d %q (Retry-After %q)",
				tc.status, tc.body, tc.retry, rec.Code, rec.Body.String(), rec.Header().Get("Retry-After"))
		}
		if b.adm.shares != 0 || b.adm.pool != 0 || len(b.rec) != 0 {
			t.Errorf("leader's %d: %d admitted from the share, %d from the limit, %d recorded here; want none: the leader decided",
				tc.status, b.adm.shares, b.adm.pool, len(b.rec))
		}
	}
}

// TestDefaultTransportForwards: a follower built without a Transport
// forwards over the network to the leader, a real HTTP server on
// loopback, within the default dial and forward timeouts.
func TestDefaultTransportForwards(t *testing.T) {
	var mu sync.Mutex
	var marks []string
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		marks = append(marks, r.Header.Get(ForwardedHeader))
		mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]bool{"admitted": true})
	}))
	defer leader.Close()
	adm := &counter{}
	g, err := New(Options{
		Admitter: adm,
		Leader:   func() (bool, string) { return false, strings.TrimPrefix(leader.URL, "http://") },
		Replicas: func() int { return 3 },
		ID:       "me:7070",
		Clock:    clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.transport.(*http.Transport).CloseIdleConnections()
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/boot", nil))
	mu.Lock()
	defer mu.Unlock()
	if rec.Code != http.StatusOK || len(marks) != 1 || marks[0] != "me:7070" || adm.shares != 0 {
		t.Fatalf("boot on a follower: %d, the leader saw %d boots marked %q, %d admitted from the share; want 200, one marked me:7070, none",
			rec.Code, len(marks), marks, adm.shares)
	}
}
