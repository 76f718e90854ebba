package mcclient

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// Reasons of mcrib_client_replay_drops_total.
const (
	// dropQueueFull: the node's queue held Options.MaxQueue keys; the
	// delete is lost and the key may be read back stale.
	dropQueueFull = "queue_full"
	// dropNodeFlushed: the node was placed in a slot again, which mcrib
	// does only after flushing it; nothing is lost.
	dropNodeFlushed = "node_flushed"
	// dropNodeGone: the node left the map (no slot, not a spare); it is
	// flushed before it is ever placed again; nothing is lost.
	dropNodeGone = "node_gone"
)

// DropReasons lists the values of the reason label of
// mcrib_client_replay_drops_total. Only queue_full loses an invalidation.
func DropReasons() []string { return []string{dropQueueFull, dropNodeFlushed, dropNodeGone} }

// clientMetrics are the client's instruments. The OpenTelemetry names
// have no _total: the Prometheus exporter adds it to counters.
type clientMetrics struct {
	replays metric.Int64Counter
	drops   metric.Int64Counter
	reg     metric.Registration
}

// newMetrics creates the instruments on meter (nil: a no-op meter); queues
// lists every node's queue length for the gauge, and mapAge is the map's
// age (false: no map yet).
func newMetrics(meter metric.Meter, queues func(func(id string, n int)), mapAge func() (time.Duration, bool)) (*clientMetrics, error) {
	if meter == nil {
		meter = noop.NewMeterProvider().Meter("mcclient")
	}
	m := &clientMetrics{}
	var err1, err2, err3, err4, err5 error
	m.replays, err1 = meter.Int64Counter("mcrib_client_replays",
		metric.WithDescription("Queued deletes replayed to their node, by node."))
	m.drops, err2 = meter.Int64Counter("mcrib_client_replay_drops",
		metric.WithDescription("Queued deletes dropped, by node and reason (queue_full loses an invalidation; node_flushed and node_gone do not)."))
	length, err3 := meter.Int64ObservableGauge("mcrib_client_replay_queue_length",
		metric.WithDescription("Deletes waiting for their node to answer again, by node."))
	age, err4 := meter.Float64ObservableGauge("mcrib_client_map_age_seconds", metric.WithUnit("s"),
		metric.WithDescription("Age of the slot map the client routes by, from when the answering replica last read it from Consul; over 10 s the map is not fresh and no warm source is read."))
	if err3 == nil && err4 == nil {
		m.reg, err5 = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
			queues(func(id string, n int) {
				o.ObserveInt64(length, int64(n), metric.WithAttributes(attribute.String("node", id)))
			})
			if d, ok := mapAge(); ok {
				o.ObserveFloat64(age, d.Seconds())
			}
			return nil
		}, length, age)
	}
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return nil, fmt.Errorf("mcclient: creating metrics: %w", err)
	}
	return m, nil
}

func (m *clientMetrics) replayed(node string) {
	m.replays.Add(context.Background(), 1, metric.WithAttributes(attribute.String("node", node)))
}

func (m *clientMetrics) dropped(node, reason string, n int) {
	m.drops.Add(context.Background(), int64(n), metric.WithAttributes(
		attribute.String("node", node), attribute.String("reason", reason)))
}
