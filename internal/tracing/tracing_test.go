package tracing

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

func TestEnabled(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_TRACES_EXPORTER": "none"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SDK_DISABLED": "true"}, false},
	}
	for _, tc := range tests {
		if got := Enabled(func(k string) string { return tc.env[k] }); got != tc.want {
			t.Errorf("Enabled(%v) = %v, want %v", tc.env, got, tc.want)
		}
	}
}

func TestSetupWithoutEnvironmentTracesNothing(t *testing.T) {
	p, err := Setup(context.Background(), Options{Getenv: func(string) string { return "" }})
	if err != nil || p.Tracer("x") != nil || p.Protocol != "" || p.Shutdown(context.Background()) != nil {
		t.Errorf("Setup without OTEL variables: %+v, %v; want an empty provider", p, err)
	}
}

func TestSetupRefusesAnUnknownProtocol(t *testing.T) {
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}
	if _, err := Setup(context.Background(), Options{Getenv: func(k string) string { return env[k] }}); !errors.Is(err, ErrBadProtocol) {
		t.Errorf("Setup with http/json: %v, want ErrBadProtocol", err)
	}
}

// TestSetupExportsOverOTLPHTTP points the standard variables at a fake
// collector and checks that a span reaches it as OTLP protobuf.
func TestSetupExportsOverOTLPHTTP(t *testing.T) {
	var mu sync.Mutex
	var got []string
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type")+" "+string(body))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	p, err := Setup(context.Background(), Options{Getenv: func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL}[k]
	}, Version: "v9", Pool: "payments"})
	if err != nil {
		t.Fatal(err)
	}
	_, span := p.Tracer("test").Start(context.Background(), "mcrib.reconcile")
	span.End()
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 {
		t.Fatalf("the collector got %d requests, want 1", len(got))
	}
	for _, want := range []string{"POST /v1/traces application/x-protobuf", "mcrib.reconcile", "payments"} {
		if !strings.Contains(got[0], want) {
			t.Errorf("the export %q lacks %q", got[0][:min(len(got[0]), 200)], want)
		}
	}
}
