package apiserver

import (
	"crypto/tls"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/mcribapi"
)

// TestReplaceIsForwardedToTheLeader: a follower whose loop answers
// ErrNotLeader sends the replace to the leader's leader_id with the
// caller's token and its own session, and answers with the leader's
// answer; with no leader known, or one that cannot be reached, 503.
func TestReplaceIsForwardedToTheLeader(t *testing.T) {
	leaderZones := &fakeZones{}
	leaderAPI := zoneAPI(t, "sekrit", leaderZones)
	leaderAPI.replicas = peerReplicas{"s-me"}
	var mu sync.Mutex
	var sawSession string
	leaderSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sawSession = r.Header.Get(forwardedHeader)
		mu.Unlock()
		leaderAPI.ServeHTTP(w, r)
	}))
	defer leaderSrv.Close()

	leaderID := leaderSrv.Listener.Addr().String()
	followerZones := &fakeZones{err: mcribapi.ErrNotLeader}
	follower := zoneAPI(t, "sekrit", followerZones)
	follower.leader = func() (bool, string) { return false, leaderID }
	follower.replicas = fixedReplicas{n: 2}

	rr := call(follower, "POST", "/v1/nodes/mc-1/replace", `{"reason":"retire mc-1"}`, "sekrit")
	if rr.Code != 200 {
		t.Fatalf("forwarded replace: %d %s", rr.Code, rr.Body)
	}
	var res mcribapi.ReplaceAnswer
	if err := json.Unmarshal(rr.Body.Bytes(), &res); err != nil || res != (mcribapi.ReplaceAnswer{Slot: 3, From: "mc-1", To: "mc-9", Warm: true}) {
		t.Fatalf("answer %s (%v)", rr.Body, err)
	}
	if c := leaderZones.called(); len(c) != 1 || c[0] != "replace mc-1" {
		t.Errorf("the leader's loop saw %v", c)
	}
	if !strings.HasPrefix(leaderZones.by, "operator@192.0.2.1:1234 via ") {
		t.Errorf("the leader recorded the replace as by %q, want the original caller via the follower", leaderZones.by)
	}
	mu.Lock()
	if sawSession != "s-me" {
		t.Errorf("the leader saw session %q, want the follower's", sawSession)
	}
	mu.Unlock()

	// The leader's refusal comes back as it is.
	leaderZones.err = mcribapi.ErrUnknownNode
	if rr := call(follower, "POST", "/v1/nodes/mc-1/replace", `{"reason":"r"}`, "sekrit"); rr.Code != 404 {
		t.Errorf("leader's 404: follower answered %d %s", rr.Code, rr.Body)
	}
	// A forwarded replace that lands on a non-leader is not sent on.
	req := httptest.NewRequest("POST", "/v1/nodes/mc-1/replace", strings.NewReader(`{"reason":"r"}`))
	req.Header.Set("Authorization", "Bearer sekrit")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(forwardedHeader, "s-peer")
	fw := httptest.NewRecorder()
	follower.ServeHTTP(fw, req)
	if fw.Code != 503 {
		t.Errorf("a forwarded replace on a follower: %d %s, want 503", fw.Code, fw.Body)
	}

	// No leader known; a leader that does not answer.
	for _, id := range []string{"", closedAddr(t)} {
		follower.leader = func() (bool, string) { return false, id }
		rr := call(follower, "POST", "/v1/nodes/mc-1/replace", `{"reason":"r"}`, "sekrit")
		if rr.Code != 503 {
			t.Errorf("leader %q: %d %s, want 503", id, rr.Code, rr.Body)
			continue
		}
		errorSentence(t, rr)
	}
}

// peerReplicas trusts one session as a live replica's.
type peerReplicas struct{ peer string }

func (p peerReplicas) Count() int              { return 2 }
func (p peerReplicas) Has(session string) bool { return session == p.peer }
func (p peerReplicas) Session() string         { return "s-leader" }

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.Listener.Addr().String()
	srv.Close()
	return addr
}

// TestReplaceForwardOverTLS: with --tls-cert a follower forwards a replace
// over HTTPS, verified with the certificate file, as it forwards boots.
func TestReplaceForwardOverTLS(t *testing.T) {
	cert, key := testenv.SelfSignedCert(t, t.TempDir())
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	leaderZones := &fakeZones{}
	leaderAPI := zoneAPI(t, "t", leaderZones)
	var overTLS atomic.Bool
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		overTLS.Store(r.TLS != nil)
		leaderAPI.ServeHTTP(w, r)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	srv.StartTLS()
	defer srv.Close()

	follower, err := New(Options{Token: "t", TLSCert: cert, Listen: "127.0.0.1:0", Bound: "127.0.0.1:1",
		Leader: func() (bool, string) { return false, srv.Listener.Addr().String() }})
	if err != nil || follower.Scheme() != "https" {
		t.Fatalf("New with TLSCert: %v", err)
	}
	follower.zones = &fakeZones{err: mcribapi.ErrNotLeader}
	rr := call(follower, "POST", "/v1/nodes/mc-1/replace", `{"reason":"r"}`, "t")
	if rr.Code != 200 || !overTLS.Load() || len(leaderZones.called()) != 1 {
		t.Errorf("replace over TLS: %d %s, leader saw TLS %v and calls %v", rr.Code, rr.Body, overTLS.Load(), leaderZones.called())
	}
}

// TestForwardStripsBrowserHeaders: a replace the dashboard sends to a
// follower (same origin there) reaches the leader without Origin and
// Sec-Fetch-*, which name the follower's origin, not the leader's.
func TestForwardStripsBrowserHeaders(t *testing.T) {
	var mu sync.Mutex
	var got http.Header
	leaderSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.Header.Clone()
		mu.Unlock()
		writeJSON(w, http.StatusOK, mcribapi.ReplaceAnswer{Slot: 1, From: "mc-1", To: "mc-9"})
	}))
	defer leaderSrv.Close()
	follower := zoneAPI(t, "", &fakeZones{err: mcribapi.ErrNotLeader})
	follower.leader = func() (bool, string) { return false, leaderSrv.Listener.Addr().String() }
	follower.replicas = fixedReplicas{n: 2}
	req := httptest.NewRequest("POST", "/v1/nodes/mc-1/replace", strings.NewReader(`{"reason":"r"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "http://follower:7070")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("Sec-Fetch-Mode", "cors")
	rr := httptest.NewRecorder()
	follower.ServeHTTP(rr, req)
	if rr.Code != 200 {
		t.Fatalf("forwarded replace: %d %s", rr.Code, rr.Body)
	}
	mu.Lock()
	defer mu.Unlock()
	for name := range got {
		if name == "Origin" || strings.HasPrefix(name, "Sec-Fetch-") {
			t.Errorf("the leader got %s: %q", name, got.Get(name))
		}
	}
	if got.Get("Content-Type") != "application/json" {
		t.Errorf("the forwarded replace has Content-Type %q", got.Get("Content-Type"))
	}
}
