package metrics

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/mcrib/mcrib/controlloop"
)

// configWrites counts the writes of the router config files
// (mcrib_config_write_failures_total{kind}) and keeps the time of the last
// successful one of each kind
// (mcrib_config_last_write_timestamp_seconds{kind}). Its zero value is
// not usable; newConfigWrites builds it. It is safe for concurrent use.
type configWrites struct {
	failures metric.Int64Counter
	mu       sync.Mutex
	last     map[string]time.Time // by kind; missing means never
}

// newConfigWrites creates the instruments on meter, every kind of
// controlloop.ConfigKinds at 0 (0 for the timestamp means never).
func newConfigWrites(meter metric.Meter) (*configWrites, error) {
	c := &configWrites{last: map[string]time.Time{}}
	var err error
	c.failures, err = meter.Int64Counter("mcrib_config_write_failures",
		metric.WithDescription("Failed writes of a config file kept in step with the slot map, by kind (mcrouter, twemproxy); each pass tries again."))
	if err != nil {
		return nil, fmt.Errorf("creating the config write counter: %w", err)
	}
	lastWrite, err := meter.Float64ObservableGauge("mcrib_config_last_write_timestamp_seconds",
		metric.WithDescription("Unix time of the last successful write of a config file kept in step with the slot map, by kind; 0 before the first. Written only when the file's content changes."))
	if err != nil {
		return nil, fmt.Errorf("creating the config write gauge: %w", err)
	}
	for _, kind := range controlloop.ConfigKinds() {
		c.failures.Add(context.Background(), 0, metric.WithAttributes(attribute.String("kind", kind)))
	}
	_, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, kind := range controlloop.ConfigKinds() {
			o.ObserveFloat64(lastWrite, unixSeconds(c.last[kind]), metric.WithAttributes(attribute.String("kind", kind)))
		}
		return nil
	}, lastWrite)
	if err != nil {
		return nil, fmt.Errorf("registering the config write gauge callback: %w", err)
	}
	return c, nil
}

// ConfigWrite records one write of a config file: a failure when err is
// not nil, else a success at at.
func (r *Recorder) ConfigWrite(kind string, at time.Time, err error) {
	c := r.configs
	if err != nil {
		c.failures.Add(context.Background(), 1, metric.WithAttributes(attribute.String("kind", kind)))
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last[kind] = at
}
