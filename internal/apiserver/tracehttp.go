package apiserver

import (
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// tracedHandler wraps the API in one server span per request, named by
// method and route ("GET /v1/status"; a path the API does not know is
// "other", so that scans do not make a span name per path; a path that
// carries a zone or a node ID is named by its route, "PUT /v1/drain/{zone}"). A W3C
// traceparent header from the caller becomes the span's parent. With a
// nil tracer it returns h as it is.
func tracedHandler(tr trace.Tracer, a *Server, h http.Handler) http.Handler {
	if tr == nil {
		return h
	}
	prop := propagation.TraceContext{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route := a.routeName(r)
		ctx := prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := tr.Start(ctx, r.Method+" "+route, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("http.route", route)))
		defer span.End()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r.WithContext(ctx))
		span.SetAttributes(attribute.Int("http.response.status_code", sw.status))
		if sw.status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(sw.status))
		}
	})
}

// statusWriter remembers the status of an answer. Unwrap lets
// http.ResponseController reach the connection (blocking reads move their
// own deadlines).
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
