package main

import (
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestConsulClientEnv checks that the Consul client of mcrib serve honours
// the Consul CLI's environment through its own transport: CONSUL_CACERT
// for an HTTPS Consul and CONSUL_HTTP_TOKEN as the X-Consul-Token header.
func TestConsulClientEnv(t *testing.T) {
	var mu sync.Mutex
	var tokens []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		tokens = append(tokens, r.Header.Get("X-Consul-Token"))
		mu.Unlock()
		w.Header().Set("X-Consul-Index", "7")
		w.Write([]byte(`[{"Key":"k","Value":"dg==","ModifyIndex":7}]`))
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is expected
	srv.StartTLS()
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CONSUL_HTTP_TOKEN", "s3cret-token")

	t.Setenv("CONSUL_CACERT", "")
	c, err := newConsulClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.KV().Get("k", nil); err == nil {
		t.Fatal("a Consul whose certificate is not trusted was read")
	}

	t.Setenv("CONSUL_CACERT", ca)
	c, err = newConsulClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	kv, _, err := c.KV().Get("k", nil)
	if err != nil || kv == nil || string(kv.Value) != "v" {
		t.Fatalf("reading over TLS with CONSUL_CACERT: %v %v", kv, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(tokens) == 0 || tokens[len(tokens)-1] != "s3cret-token" {
		t.Errorf("tokens sent %q, want CONSUL_HTTP_TOKEN", tokens)
	}
}
