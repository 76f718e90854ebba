package apiserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func TestAPIRequestsAreTraced(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	a := newServer(Options{})
	h := tracedHandler(tp.Tracer("test"), a, a)

	const parentTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	tests := []struct {
		path, traceparent, wantName string
		wantStatus                  int64
	}{
		{"/healthz", "", "GET /healthz", 200},
		{"/v1/events", "00-" + parentTrace + "-00f067aa0ba902b7-01", "GET /v1/events", 200},
		{"/wp-login.php", "", "GET other", 404},
		{"/v1/drain/zone-b", "", "GET /v1/drain/{zone}", 405},
		{"/v1/nodes/mc-1/replace", "", "GET /v1/nodes/{id}/replace", 405},
	}
	for _, tc := range tests {
		exp.Reset()
		req := httptest.NewRequest(http.MethodGet, tc.path, nil)
		if tc.traceparent != "" {
			req.Header.Set("Traceparent", tc.traceparent)
		}
		h.ServeHTTP(httptest.NewRecorder(), req)
		spans := exp.GetSpans()
		if len(spans) != 1 {
			t.Fatalf("GET %s: %d spans, want 1", tc.path, len(spans))
		}
		s := spans[0]
		if s.Name != tc.wantName {
			t.Errorf("GET %s: span %q, want %q", tc.path, s.Name, tc.wantName)
		}
		var status int64
		for _, kv := range s.Attributes {
			if kv.Key == attribute.Key("http.response.status_code") {
				status = kv.Value.AsInt64()
			}
		}
		if status != tc.wantStatus {
			t.Errorf("GET %s: status attribute %d, want %d", tc.path, status, tc.wantStatus)
		}
		if tc.traceparent != "" && s.SpanContext.TraceID().String() != parentTrace {
			t.Errorf("GET %s: trace %s, want the caller's %s", tc.path, s.SpanContext.TraceID(), parentTrace)
		}
	}
}

func TestNoTracerNoWrapper(t *testing.T) {
	a := newServer(Options{})
	if h := tracedHandler(nil, a, a); h != http.Handler(a) {
		t.Errorf("tracedHandler without a tracer wrapped the API")
	}
}

// TestTracedHandlerKeepsTheConnectionReachable checks that a handler under
// the span wrapper can still move its connection's deadlines, as blocking
// reads of /v1/slotmap do.
func TestTracedHandlerKeepsTheConnectionReachable(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	a := newServer(Options{})
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := http.NewResponseController(w).SetWriteDeadline(time.Now().Add(time.Minute)); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	srv := httptest.NewServer(tracedHandler(tp.Tracer("test"), a, inner))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/v1/slotmap")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("status %d: the wrapper hides the connection from http.ResponseController", resp.StatusCode)
	}
}
