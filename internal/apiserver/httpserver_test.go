package apiserver

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/mcribapi"
)

// TestForwardFitsTheWriteTimeout: a replace forwarded to the leader gets
// an answer within the server's write timeout, with time left to write
// it (a forwarded replace could once take 15 s under a 10 s write
// timeout, and its answer was lost).
func TestForwardFitsTheWriteTimeout(t *testing.T) {
	srv := newHTTPServer(http.NotFoundHandler(), slog.New(slog.DiscardHandler))
	if b := forwardBudget(srv.WriteTimeout); b <= 0 || srv.WriteTimeout-b < time.Second {
		t.Fatalf("a forwarded call may take %v of the %v write timeout, leaving less than 1s to write its answer", b, srv.WriteTimeout)
	}
	for _, d := range []time.Duration{srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout} {
		if d <= 0 {
			t.Fatalf("a server timeout is not set: %+v", srv)
		}
	}
}

// TestStalledLeaderAnswersInTime: a follower whose leader does not answer
// a forwarded replace says so with a 503 before its own write deadline,
// rather than losing the connection (shown on a server with a short write
// timeout).
func TestStalledLeaderAnswersInTime(t *testing.T) {
	stall := make(chan struct{})
	leaderSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stall:
		case <-r.Context().Done():
		}
	}))
	defer leaderSrv.Close()
	defer close(stall)

	follower := zoneAPI(t, "", &fakeZones{err: mcribapi.ErrNotLeader})
	follower.leader = func() (bool, string) { return false, leaderSrv.Listener.Addr().String() }
	follower.replicas = fixedReplicas{n: 2}
	srv := httptest.NewUnstartedServer(nil)
	srv.Config = newHTTPServer(follower, slog.New(slog.DiscardHandler))
	srv.Config.WriteTimeout = 500 * time.Millisecond
	follower.writeTimeout = srv.Config.WriteTimeout
	srv.Start()
	defer srv.Close()

	start := time.Now()
	resp, err := http.Post(srv.URL+"/v1/nodes/mc-1/replace", "application/json", strings.NewReader(`{"reason":"r"}`))
	if err != nil {
		t.Fatalf("the follower's answer was lost after %v: %v", time.Since(start), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	var doc struct{ Error string }
	if err != nil || json.Unmarshal(body, &doc) != nil || resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(doc.Error, "did not answer") {
		t.Fatalf("answer %d %q (%v), want a 503 saying the leader did not answer", resp.StatusCode, body, err)
	}
	if took := time.Since(start); took >= srv.Config.WriteTimeout {
		t.Errorf("the answer took %v, past the %v write timeout", took, srv.Config.WriteTimeout)
	}
}
