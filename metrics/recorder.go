package metrics

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/mcrib/mcrib/controlloop"
	"github.com/mcrib/mcrib/internal/kvlayout"
	"github.com/mcrib/mcrib/mcribapi"
)

// ErrNoGauges is returned by New when Options.Gauges is nil.
var ErrNoGauges = errors.New("metrics: Options.Gauges is required")

// Boot admission results, the label values of mcrib_boot_admissions_total.
const (
	BootAdmitted = "admitted"
	BootRejected = "rejected"
)

// durationBuckets are the bucket bounds of mcrib_reconcile_duration_seconds:
// a pass is a few Consul and memcached round trips, normally well under a
// second; the upper buckets catch a pass stuck behind timeouts.
var durationBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// Options configures New.
type Options struct {
	// Gauges returns the state a scrape reports. It is called once per
	// scrape, from the scraping goroutine, and must be safe to call
	// concurrently with the control loop. Required.
	Gauges func() Gauges
	// Pool, when set, is added as the constant label pool="<Pool>" to
	// every series, so that several pools in one Prometheus stay apart.
	Pool string
	// Version is the value of mcrib_build_info's version label; empty is
	// "unknown".
	Version string
	// Runtime adds the Go runtime (go_*) and process (process_*) metrics.
	Runtime bool
}

// Recorder counts mcrib's events and exports them, with the gauges of
// Options.Gauges, on the handler New returns. It implements
// controlloop.Metrics. The zero value is not usable; build one with New.
// A Recorder is safe for concurrent use.
type Recorder struct {
	passes       metric.Int64Counter
	duration     metric.Float64Histogram
	replacements metric.Int64Counter
	moves        metric.Int64Counter
	flushes      metric.Int64Counter
	boots        metric.Int64Counter
	configs      *configWrites
}

var _ controlloop.Metrics = (*Recorder)(nil)

// New builds a Recorder and the http.Handler that serves its metrics in
// the Prometheus text format (mount it at /metrics). Each call has its
// own meter provider and Prometheus registry. Every counter label value
// (mcribapi.Outcomes, mcribapi.ReplacementReasons, mcribapi.MoveKinds,
// controlloop.FlushReasons, controlloop.ConfigKinds, admitted/rejected)
// exists at 0 from the start; mcrib_reconcile_duration_seconds appears
// with the first pass.
func New(opts Options) (*Recorder, http.Handler, error) {
	if opts.Gauges == nil {
		return nil, nil, ErrNoGauges
	}
	reg := prometheus.NewRegistry()
	wrapped := poolRegisterer(reg, opts.Pool)
	if err := registerProcess(wrapped, opts.Version, opts.Runtime); err != nil {
		return nil, nil, err
	}
	exporter, err := otelprom.New(
		otelprom.WithRegisterer(wrapped),
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes),
		otelprom.WithoutScopeInfo(),
		otelprom.WithoutTargetInfo(),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("creating prometheus exporter: %w", err)
	}
	provider := sdkmetric.NewMeterProvider(
		sdkmetric.WithReader(exporter),
		sdkmetric.WithResource(resource.Empty()),
	)
	meter := provider.Meter("github.com/mcrib/mcrib/metrics")

	r := &Recorder{}
	if err := r.counters(meter); err != nil {
		return nil, nil, err
	}
	if r.configs, err = newConfigWrites(meter); err != nil {
		return nil, nil, err
	}
	if err := registerGauges(meter, opts.Gauges); err != nil {
		return nil, nil, err
	}
	handler := promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError})
	return r, handler, nil
}

// counters creates the event instruments and every label value at 0.
func (r *Recorder) counters(meter metric.Meter) error {
	var err error
	errs := make([]error, 0, 5)
	r.passes, err = meter.Int64Counter("mcrib_reconcile_passes",
		metric.WithDescription("Reconcile passes by result (ok, error, conflict, follower, waiting)."))
	errs = append(errs, err)
	r.duration, err = meter.Float64Histogram("mcrib_reconcile_duration",
		metric.WithUnit("s"),
		metric.WithDescription("Duration of reconcile passes."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	errs = append(errs, err)
	r.replacements, err = meter.Int64Counter("mcrib_slot_replacements",
		metric.WithDescription("Nodes taken out of their slot, by reason (hold_expired, maintenance)."))
	errs = append(errs, err)
	r.moves, err = meter.Int64Counter("mcrib_slot_moves",
		metric.WithDescription("Slots given to a new holder, by kind (warm: warmed from the old holder, cold)."))
	errs = append(errs, err)
	r.flushes, err = meter.Int64Counter("mcrib_flushes",
		metric.WithDescription("flush_all commands sent, by reason (placement, returned)."))
	errs = append(errs, err)
	r.boots, err = meter.Int64Counter("mcrib_boot_admissions",
		metric.WithDescription("Client boot admission decisions, by result (admitted, rejected)."))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("creating counters: %w", err)
	}

	ctx := context.Background()
	for _, c := range []struct {
		counter metric.Int64Counter
		key     string
		values  []string
	}{
		{r.passes, "result", labels(mcribapi.Outcomes())},
		{r.replacements, "reason", labels(mcribapi.ReplacementReasons())},
		{r.moves, "kind", labels(mcribapi.MoveKinds())},
		{r.flushes, "reason", controlloop.FlushReasons()},
		{r.boots, "result", []string{BootAdmitted, BootRejected}},
	} {
		for _, v := range c.values {
			c.counter.Add(ctx, 0, metric.WithAttributes(attribute.String(c.key, v)))
		}
	}
	return nil
}

// labels returns the values of a vocabulary as label values.
func labels[T ~string](values []T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

// Pass counts one reconcile pass and observes its duration.
func (r *Recorder) Pass(result mcribapi.Outcome, d time.Duration) {
	ctx := context.Background()
	r.passes.Add(ctx, 1, metric.WithAttributes(attribute.String("result", string(result))))
	r.duration.Record(ctx, d.Seconds())
}

// Replacement counts one node taken out of its slot.
func (r *Recorder) Replacement(reason mcribapi.EvictionReason) {
	r.replacements.Add(context.Background(), 1, metric.WithAttributes(attribute.String("reason", string(reason))))
}

// SlotMove counts one slot given to a new holder, by kind.
func (r *Recorder) SlotMove(kind mcribapi.MoveKind) {
	r.moves.Add(context.Background(), 1, metric.WithAttributes(attribute.String("kind", string(kind))))
}

// Flush counts one flush_all.
func (r *Recorder) Flush(reason string) {
	r.flushes.Add(context.Background(), 1, metric.WithAttributes(attribute.String("reason", reason)))
}

// BootAdmission counts one client boot admission decision.
func (r *Recorder) BootAdmission(admitted bool) {
	result := BootRejected
	if admitted {
		result = BootAdmitted
	}
	r.boots.Add(context.Background(), 1, metric.WithAttributes(attribute.String("result", result)))
}

// registerGauges creates the observable gauges and one callback that
// reads gauges once per collection.
func registerGauges(meter metric.Meter, gauges func() Gauges) error {
	ints := map[string]string{
		"mcrib_slotmap_generation":     "Generation of the slot map this process knows.",
		"mcrib_leader":                 "1 when this process is the pool's leader.",
		"mcrib_frozen":                 "1 while an operator freeze is in force.",
		"mcrib_auto_frozen":            "1 while replacements are stopped automatically (mass absence or discovery fault).",
		"mcrib_discovery_fault":        "1 while the last Consul answer is treated as a fault of discovery.",
		"mcrib_consul_reachable":       "1 when the last Consul read succeeded.",
		"mcrib_ready":                  "1 when /readyz answers 200.",
		"mcrib_vacant_slots":           "Slots without a node.",
		"mcrib_slots_unserved":         "Slots whose keys reach no memcached: vacant, or held by an unreachable node.",
		"mcrib_slots":                  "Slots of the slot map this process knows (0 before it knows one); mcrib_slots_unserved / mcrib_slots is the share of the keys that reach no memcached.",
		"mcrib_zone_alert":             "1 while the zone alert names the zone: more than half of its slot holders, and at least two, unreachable.",
		"mcrib_replacements_blocked":   "Replacements due but held back by a freeze or the replacement ceiling.",
		"mcrib_spare_nodes":            "Ready spares: nodes that could take a slot now.",
		"mcrib_present_nodes":          "Nodes present in Consul outside the drained zones; more than a quarter of them ready spares for long means the pool has outgrown its slots.",
		"mcrib_nodes":                  "Cache nodes by state (serving, held, spare, flushing, down, warming).",
		"mcrib_roll_nodes":             "Nodes of the roll entry by state (waiting, moving, released, restarted, skipped); 0 when there is none.",
		"mcrib_boot_limit_manual":      "1 while an operator pins the boot limit (manual mode), 0 in auto mode.",
		"mcrib_flushes_pending":        "Slot holders whose flush is due but held back (by a freeze, or waiting for the leader).",
		"mcrib_config_generation":      "Slot-map generation each config file kept by this process was last found or written in step with, by kind.",
		"mcrib_kv_corrupt_documents":   "1 while the document of this key in Consul KV does not parse (slotmap, freeze).",
		"mcrib_zone_slots":             "Slots held by the nodes of each zone.",
		"mcrib_zone_unreachable_nodes": "Nodes of each zone that mcrib cannot reach.",
	}
	floats := map[string]string{
		"mcrib_last_reconcile_timestamp_seconds":  "Unix time the last reconcile pass completed; 0 before the first.",
		"mcrib_hit_rate":                          "Cache hit rate, 0 to 1.",
		"mcrib_boot_limit":                        "Boot limit, boots per second.",
		"mcrib_slotmap_updated_timestamp_seconds": "Unix time the slot map last changed; 0 while none is known.",
		"mcrib_zone_hit_ratio":                    "Cache hit rate of each zone's nodes, 0 to 1; no series while unknown.",
	}
	counters := map[string]string{
		"mcrib_warm_copied_keys":  "Keys the leader's copy put into warming slots' new holders from their warm sources.",
		"mcrib_warm_copied_bytes": "Value bytes the leader's copy put into warming slots' new holders from their warm sources.",
	}
	ic := make(map[string]metric.Int64ObservableCounter, len(counters))
	ig := make(map[string]metric.Int64ObservableGauge, len(ints))
	fg := make(map[string]metric.Float64ObservableGauge, len(floats))
	var errs []error
	observables := make([]metric.Observable, 0, len(ints)+len(floats)+len(counters))
	for name, desc := range counters {
		c, err := meter.Int64ObservableCounter(name, metric.WithDescription(desc))
		errs = append(errs, err)
		ic[name] = c
		observables = append(observables, c)
	}
	for name, desc := range ints {
		g, err := meter.Int64ObservableGauge(name, metric.WithDescription(desc))
		errs = append(errs, err)
		ig[name] = g
		observables = append(observables, g)
	}
	for name, desc := range floats {
		g, err := meter.Float64ObservableGauge(name, metric.WithDescription(desc))
		errs = append(errs, err)
		fg[name] = g
		observables = append(observables, g)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("creating gauges: %w", err)
	}

	_, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		g := gauges()
		o.ObserveInt64(ig["mcrib_slotmap_generation"], int64(min(g.Generation, math.MaxInt64)))
		o.ObserveInt64(ig["mcrib_leader"], boolValue(g.Leader))
		o.ObserveInt64(ig["mcrib_frozen"], boolValue(g.Frozen))
		o.ObserveInt64(ig["mcrib_auto_frozen"], boolValue(g.AutoFrozen))
		o.ObserveInt64(ig["mcrib_discovery_fault"], boolValue(g.DiscoveryFault))
		o.ObserveInt64(ig["mcrib_consul_reachable"], boolValue(g.ConsulReachable))
		o.ObserveInt64(ig["mcrib_ready"], boolValue(g.Ready))
		o.ObserveInt64(ig["mcrib_vacant_slots"], int64(g.VacantSlots))
		o.ObserveInt64(ig["mcrib_slots_unserved"], int64(g.SlotsUnserved))
		o.ObserveInt64(ig["mcrib_slots"], int64(g.NumSlots))
		o.ObserveInt64(ig["mcrib_spare_nodes"], int64(g.SpareNodes))
		o.ObserveInt64(ig["mcrib_present_nodes"], int64(g.PresentNodes))
		o.ObserveInt64(ig["mcrib_replacements_blocked"], int64(g.ReplacementsBlocked))
		o.ObserveInt64(ic["mcrib_warm_copied_keys"], g.WarmCopiedKeys)
		o.ObserveInt64(ic["mcrib_warm_copied_bytes"], g.WarmCopiedBytes)
		known := mcribapi.NodeStates()
		for _, state := range known {
			o.ObserveInt64(ig["mcrib_nodes"], int64(g.NodesByState[state]),
				metric.WithAttributes(attribute.String("state", string(state))))
		}
		for state, n := range g.NodesByState {
			if !slices.Contains(known, state) {
				o.ObserveInt64(ig["mcrib_nodes"], int64(n),
					metric.WithAttributes(attribute.String("state", string(state))))
			}
		}
		for _, state := range mcribapi.RollNodeStates() {
			o.ObserveInt64(ig["mcrib_roll_nodes"], int64(g.RollNodes[state]),
				metric.WithAttributes(attribute.String("state", string(state))))
		}
		for _, key := range kvlayout.Checked() {
			o.ObserveInt64(ig["mcrib_kv_corrupt_documents"], boolValue(slices.Contains(g.CorruptDocuments, key)),
				metric.WithAttributes(attribute.String("key", key)))
		}
		o.ObserveFloat64(fg["mcrib_last_reconcile_timestamp_seconds"], unixSeconds(g.LastReconcile))
		o.ObserveFloat64(fg["mcrib_hit_rate"], g.HitRate)
		o.ObserveFloat64(fg["mcrib_boot_limit"], g.BootLimit)
		o.ObserveInt64(ig["mcrib_boot_limit_manual"], boolValue(g.BootLimitManual))
		o.ObserveInt64(ig["mcrib_flushes_pending"], int64(g.FlushesPending))
		o.ObserveFloat64(fg["mcrib_slotmap_updated_timestamp_seconds"], unixSeconds(g.SlotMapUpdated))
		for _, z := range g.Zones {
			zone := metric.WithAttributes(attribute.String("zone", z.Zone))
			o.ObserveInt64(ig["mcrib_zone_slots"], int64(z.Slots), zone)
			o.ObserveInt64(ig["mcrib_zone_unreachable_nodes"], int64(z.Unreachable), zone)
			o.ObserveInt64(ig["mcrib_zone_alert"], boolValue(z.Alert), zone)
			if z.HitRate != nil {
				o.ObserveFloat64(fg["mcrib_zone_hit_ratio"], *z.HitRate, zone)
			}
		}
		for kind, gen := range g.ConfigGenerations {
			o.ObserveInt64(ig["mcrib_config_generation"], int64(min(gen, math.MaxInt64)),
				metric.WithAttributes(attribute.String("kind", kind)))
		}
		return nil
	}, observables...)
	if err != nil {
		return fmt.Errorf("registering gauge callback: %w", err)
	}
	return nil
}
