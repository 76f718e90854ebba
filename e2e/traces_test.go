package e2e

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/mcrib/mcrib/internal/testenv"
)

// TestTracesReachAnOTLPCollector runs mcrib serve with the standard OTLP
// variables pointing at a fake collector: reconcile passes with their
// Consul calls, and API requests, arrive as OTLP protobuf.
func TestTracesReachAnOTLPCollector(t *testing.T) {
	var mu sync.Mutex
	var bodies bytes.Buffer
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		if r.URL.Path == "/v1/traces" && r.Header.Get("Content-Type") == "application/x-protobuf" {
			bodies.Write(b)
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()

	p := newPool(t, 3)
	m := startMcribEnv(t, p.consul.HTTPAddr,
		[]string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.URL, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", "OTEL_BSP_SCHEDULE_DELAY=100"},
		append([]string{"--slots", "2"}, fast...)...)
	filled(t, p, m, 2)
	m.status() // one traced API request

	testenv.Eventually(t, 20*time.Second, "reconcile, Consul and API spans at the collector", func() bool {
		mu.Lock()
		defer mu.Unlock()
		b := bodies.Bytes()
		for _, want := range []string{"mcrib.reconcile", "consul.kv.read", "consul.kv.write_slotmap", "placement", "GET /v1/status", "mcrib.pool"} {
			if !bytes.Contains(b, []byte(want)) {
				return false
			}
		}
		return true
	})
}
