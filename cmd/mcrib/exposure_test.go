package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/internal/testenv"
)

func TestExposureRefused(t *testing.T) {
	dir := t.TempDir()
	cert, key := testenv.SelfSignedCert(t, dir)
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

// TestServeTLS runs mcrib serve over TLS with a self-signed certificate
// (Consul unreachable: the API serves what it knows) and reads it through
// the CLI with --addr https://… and MCRIB_CACERT, and with a plain client
// that does not trust the certificate.
func TestServeTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key := testenv.SelfSignedCert(t, dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var serveOut, serveErr testenv.SyncBuffer
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
	// A forwarding replica trusts the certificate from its own --tls-cert:
	// internal/apiserver's TestForwardOverTLS.
}
