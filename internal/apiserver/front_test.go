package apiserver

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcrib/mcrib/internal/testenv"
)

// TestForwardOverTLS: a follower serving with --tls-cert forwards boots to
// the leader over HTTPS and verifies it with the certificate file's
// self-signed certificate; a leader whose certificate it does not trust
// gets nothing, and the follower admits its share instead.
func TestForwardOverTLS(t *testing.T) {
	certA, keyA := testenv.SelfSignedCert(t, t.TempDir())
	certB, _ := testenv.SelfSignedCert(t, t.TempDir()) // another self-signed certificate
	pair, err := tls.LoadX509KeyPair(certA, keyA)
	if err != nil {
		t.Fatal(err)
	}
	var overTLS atomic.Int32
	leaderSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil && r.Header.Get(forwardedHeader) != "" {
			overTLS.Add(1)
		}
		writeJSON(w, http.StatusOK, map[string]bool{"admitted": true})
	}))
	leaderSrv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	leaderSrv.StartTLS()
	defer leaderSrv.Close()
	leaderID := leaderSrv.Listener.Addr().String()

	for _, tt := range []struct {
		name       string
		cert       string
		wantTLS    int32
		wantShares int
	}{
		{"trusted", certA, 1, 0},
		{"untrusted", certB, 0, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			overTLS.Store(0)
			boot := &countingBoot{}
			a, err := New(Options{Boot: boot, Token: "t", TLSCert: tt.cert, Listen: "127.0.0.1:0", Bound: "127.0.0.1:1",
				Replicas: fixedReplicas{n: 2}, Leader: func() (bool, string) { return false, leaderID }})
			if err != nil || a.Scheme() != "https" {
				t.Fatalf("New with TLSCert: %v", err)
			}
			if code := bootCall(t, a, ""); code != http.StatusOK {
				t.Fatalf("boot: %d", code)
			}
			if overTLS.Load() != tt.wantTLS || boot.shares != tt.wantShares {
				t.Errorf("leader saw %d boots over TLS, follower admitted %d shares; want %d and %d", overTLS.Load(), boot.shares, tt.wantTLS, tt.wantShares)
			}
		})
	}
}

func TestHostGuard(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	tests := []struct {
		listen string
		names  []string
		tls    bool
		host   string
		want   bool
	}{
		{listen: "127.0.0.1:7070", host: "127.0.0.1:7070", want: true},
		{listen: "127.0.0.1:7070", host: "localhost:7070", want: true},
		{listen: "127.0.0.1:7070", host: "LOCALHOST:7070", want: true},
		{listen: "127.0.0.1:7070", host: "[::1]:7070", want: true},
		{listen: "127.0.0.1:7070", host: "attacker.example:7070", want: false},
		{listen: "127.0.0.1:7070", host: "localhost:7071", want: false},
		{listen: "127.0.0.1:7070", host: "localhost", want: false},
		{listen: "127.0.0.1:80", host: "localhost", want: true},
		{listen: "127.0.0.1:443", tls: true, host: "127.0.0.1", want: true},
		{listen: "127.0.0.1:7070", host: "", want: false},
		{listen: "10.0.0.5:7070", names: []string{"mcrib.internal:7070"}, host: "mcrib.internal:7070", want: true},
		{listen: "10.0.0.5:7070", host: "10.0.0.5:7070", want: true},
		{listen: "10.0.0.5:7070", host: "localhost:7070", want: false},
		{listen: "0.0.0.0:7070", names: []string{"10.0.0.5:7070"}, host: "10.0.0.5:7070", want: true},
		{listen: "0.0.0.0:7070", names: []string{"10.0.0.5:7070"}, host: "localhost:7070", want: true},
		{listen: "0.0.0.0:7070", names: []string{"10.0.0.5:7070"}, host: "rebound.example:7070", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.listen+" "+tt.host, func(t *testing.T) {
			g := newHostGuard(ok, tt.listen, tt.names, tt.tls)
			req := httptest.NewRequest(http.MethodPut, "/v1/freeze", nil)
			req.Host = tt.host
			rec := httptest.NewRecorder()
			g.ServeHTTP(rec, req)
			if got := rec.Code == http.StatusNoContent; got != tt.want {
				t.Fatalf("Host %q: status %d, want allowed=%v", tt.host, rec.Code, tt.want)
			}
			if !tt.want && (rec.Code != http.StatusMisdirectedRequest || !strings.Contains(rec.Body.String(), `"error"`)) {
				t.Errorf("refusal %d %s, want 421 with a JSON error", rec.Code, rec.Body)
			}
		})
	}
}
