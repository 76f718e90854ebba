package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcrib/mcrib/internal/testenv"
)

func TestExposureRefused(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeSelfSigned(t, dir)
	tests := []struct {
		args []string
		env  map[string]string
		want []string // substrings of the one line; nil: accepted
	}{
		{args: []string{"--listen", "0.0.0.0:7070"}, want: []string{"--listen", "not a loopback address", "no token"}},
		{args: []string{"--listen", ":7070"}, want: []string{"--listen", "not a loopback address"}},
		{args: []string{"--listen", "10.1.2.3:7070"}, want: []string{"--listen", "--insecure-no-token"}},
		{args: []string{"--listen", "mcrib.example:7070"}, want: []string{"--listen"}},
		{env: map[string]string{"MCRIB_LISTEN": "[::]:7070"}, want: []string{"--listen", "MCRIB_LISTEN"}},
		{args: []string{"--listen", "0.0.0.0:7070", "--insecure-no-token"}},
		{args: []string{"--listen", "0.0.0.0:7070"}, env: map[string]string{"MCRIB_INSECURE_NO_TOKEN": "true"}},
		{args: []string{"--listen", "0.0.0.0:7070"}, env: map[string]string{"MCRIB_TOKEN": "s3cret"}},
		{args: []string{"--listen", "127.0.0.1:7070"}},
		{args: []string{"--listen", "localhost:7070"}},
		{args: []string{"--listen", "[::1]:7070"}},
		{env: map[string]string{"MCRIB_INSECURE_NO_TOKEN": "maybe"}, want: []string{"--insecure-no-token", "not true or false"}},
		{args: []string{"--tls-cert", cert}, want: []string{"--tls-cert", "--tls-key is not"}},
		{args: []string{"--tls-key", key}, want: []string{"--tls-key", "--tls-cert is not"}},
		{args: []string{"--tls-cert", key, "--tls-key", cert}, want: []string{"--tls-cert", "do not load"}},
		{args: []string{"--tls-cert", cert, "--tls-key", key}},
	}
	for _, tt := range tests {
		name := strings.Join(tt.args, " ")
		for k, v := range tt.env {
			name += " " + k + "=" + v
		}
		t.Run(name, func(t *testing.T) {
			_, err := parseServeConfig(tt.args, envOf(tt.env))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted, want refused")
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q is more than one line", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestExposureExitCode(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"serve", "--listen", "0.0.0.0:7070"}, &stdout, &stderr, envOf(nil))
	if code != 2 || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), "--listen") {
		t.Errorf("exit %d, stderr %q; want 2 and one line naming --listen", code, stderr.String())
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

// writeSelfSigned writes a self-signed certificate for 127.0.0.1 and
// localhost and its key into dir, and returns their paths.
func writeSelfSigned(t *testing.T, dir string) (certPath, keyPath string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "mcrib test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certPath, keyPath
}

// TestServeTLS runs mcrib serve over TLS with a self-signed certificate
// (Consul unreachable: the API serves what it knows) and reads it through
// the CLI with --addr https://… and MCRIB_CACERT, and with a plain client
// that does not trust the certificate.
func TestServeTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeSelfSigned(t, dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var serveOut, serveErr syncBuf
	go func() {
		done <- run(ctx, []string{"serve", "--listen", addr, "--consul", "127.0.0.1:1", "--tls-cert", cert, "--tls-key", key}, &serveOut, &serveErr, envOf(nil))
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exit %d, stderr:\n%s", code, serveErr.String())
		}
	}()
	env := envOf(map[string]string{"MCRIB_CACERT": cert})
	var last string
	testenv.Eventually(t, 20*time.Second, "mcrib status --addr https://… answers", func() bool {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"status", "--json", "--addr", "https://" + addr}, &stdout, &stderr, env)
		last = stderr.String() + stdout.String()
		return code == 0
	})
	if !strings.Contains(last, `"pool"`) {
		t.Fatalf("status over TLS: %s", last)
	}
	if !strings.Contains(serveOut.String(), "https://"+addr) {
		t.Errorf("serve printed %q, want the https URL", serveOut.String())
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"status", "--addr", "https://" + addr}, &stdout, &stderr, envOf(nil)); code == 0 {
		t.Errorf("a client that does not trust the self-signed certificate read the status")
	}
	if code := run(context.Background(), []string{"status", "--addr", "http://" + addr}, &stdout, &stderr, envOf(nil)); code == 0 {
		t.Errorf("plain HTTP to a TLS listener read the status")
	}
	// A forwarding replica trusts the certificate from its own --tls-cert.
	roots, err := forwardRoots(cert)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	resp, err := c.Get("https://" + addr + "/healthz")
	if err != nil {
		t.Fatalf("forwarding roots do not verify the server: %v", err)
	}
	resp.Body.Close()
}

// syncBuf is a bytes.Buffer safe for a writer and a reader in two
// goroutines.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
