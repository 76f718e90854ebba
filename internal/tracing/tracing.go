// Package tracing sets up mcrib's OpenTelemetry traces: exported over OTLP
// only when the standard OTEL_EXPORTER_OTLP_* variables ask for it, and
// not at all otherwise.
package tracing

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// ErrBadProtocol is returned by Setup when OTEL_EXPORTER_OTLP_PROTOCOL (or
// its _TRACES_ form) names a protocol other than grpc or http/protobuf.
var ErrBadProtocol = errors.New("tracing: unsupported OTLP protocol")

// Options configures Setup. Getenv is required.
type Options struct {
	// Getenv reads the environment (os.Getenv in mcrib serve). The
	// exporters themselves read the other OTEL_EXPORTER_OTLP_* variables
	// (headers, TLS, timeout) from the process environment.
	Getenv func(string) string
	// Version and Pool are set on the resource as service.version and
	// mcrib.pool; service.name is "mcrib".
	Version, Pool string
}

// Provider is the tracer provider Setup built, or none. The zero value
// (and nil) traces nothing.
type Provider struct {
	tp *sdktrace.TracerProvider
	// Protocol is the OTLP protocol the spans are exported with, "" when
	// nothing is exported.
	Protocol string
}

// Enabled reports whether the environment asks for traces: an OTLP
// endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or OTEL_TRACES_EXPORTER is "otlp",
// and OTEL_TRACES_EXPORTER is not "none" and OTEL_SDK_DISABLED not "true".
func Enabled(getenv func(string) string) bool {
	switch {
	case getenv("OTEL_SDK_DISABLED") == "true", getenv("OTEL_TRACES_EXPORTER") == "none":
		return false
	case getenv("OTEL_TRACES_EXPORTER") == "otlp":
		return true
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup returns a Provider exporting spans in batches over OTLP when
// Enabled, with the protocol of OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or
// OTEL_EXPORTER_OTLP_PROTOCOL (http/protobuf by default, or grpc); an
// empty Provider otherwise. Nothing is dialled until spans are exported.
func Setup(ctx context.Context, opts Options) (*Provider, error) {
	if !Enabled(opts.Getenv) {
		return &Provider{}, nil
	}
	protocol := opts.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = opts.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if protocol == "" {
		protocol = "http/protobuf"
	}
	var exp sdktrace.SpanExporter
	var err error
	switch protocol {
	case "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("%w %q: use grpc or http/protobuf", ErrBadProtocol, protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: creating the OTLP exporter: %w", err)
	}
	res := resource.NewSchemaless(
		attribute.String("service.name", "mcrib"),
		attribute.String("service.version", opts.Version),
		attribute.String("mcrib.pool", opts.Pool),
	)
	return &Provider{
		tp:       sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)),
		Protocol: protocol,
	}, nil
}

// Tracer returns the tracer of the named component, or nil when nothing
// is traced (the nil tracer is what controlloop.Options.Tracer takes for
// none).
func (p *Provider) Tracer(name string) trace.Tracer {
	if p == nil || p.tp == nil {
		return nil
	}
	return p.tp.Tracer(name)
}

// Shutdown exports the spans still buffered and stops the exporter.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil || p.tp == nil {
		return nil
	}
	return p.tp.Shutdown(ctx)
}
