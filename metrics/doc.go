// Package metrics exports mcrib's own health as Prometheus metrics: the
// control loop's events (reconcile passes, slot replacements, flushes),
// boot admissions, and gauges read from the loop and the boot limiter at
// scrape time.
//
// The instruments are OpenTelemetry metrics (go.opentelemetry.io/otel/sdk/metric)
// exported through the OpenTelemetry Prometheus exporter onto a private
// Prometheus registry, so several Recorders live side by side in one
// process and nothing touches the global meter provider or the default
// Prometheus registry. Every counter label value is created at 0 before
// its first event, so an alert on a rate sees a series from the first
// scrape on.
//
// The alert rules that watch these metrics live in deploy/prometheus/alerts.yml;
// its metric names are checked against a Recorder by this package's tests.
package metrics
