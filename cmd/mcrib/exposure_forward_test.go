package main

import (
	"crypto/tls"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// TestForwardOverTLS: a follower serving with --tls-cert forwards boots to
// the leader over HTTPS and verifies it with the certificate file's
// self-signed certificate; a leader whose certificate it does not trust
// gets nothing, and the follower admits its share instead.
func TestForwardOverTLS(t *testing.T) {
	certA, keyA := writeSelfSigned(t, t.TempDir())
	certB, _ := writeSelfSigned(t, t.TempDir()) // another self-signed certificate
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
			a := newAPIServer(nil, boot, nil, nil, "t", slog.New(slog.DiscardHandler), func() (bool, string) { return false, leaderID })
			a.replicas = fixedReplicas{n: 2}
			if _, scheme, err := secureFront(serveConfig{TLSCert: tt.cert, Token: "t"}, a, "127.0.0.1:0", "127.0.0.1:1"); err != nil || scheme != "https" {
				t.Fatalf("secureFront: %q %v", scheme, err)
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
