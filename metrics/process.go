package metrics

import (
	"fmt"
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// poolRegisterer returns reg, or reg adding the constant label
// pool="<pool>" to every series registered through it when pool is set,
// so that several pools scraped into one Prometheus stay apart.
func poolRegisterer(reg *prometheus.Registry, pool string) prometheus.Registerer {
	if pool == "" {
		return reg
	}
	return prometheus.WrapRegistererWith(prometheus.Labels{"pool": pool}, reg)
}

// registerProcess registers on reg mcrib_build_info (always) and, when
// runtime is true, the Go runtime (go_*) and process (process_*)
// collectors.
func registerProcess(reg prometheus.Registerer, version string, runtimeMetrics bool) error {
	if version == "" {
		version = "unknown"
	}
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "mcrib_build_info",
		Help:        "Always 1; the labels say which mcrib build runs (version) and on which Go (goversion).",
		ConstLabels: prometheus.Labels{"version": version, "goversion": runtime.Version()},
	})
	info.Set(1)
	cs := []prometheus.Collector{info}
	if runtimeMetrics {
		cs = append(cs,
			collectors.NewGoCollector(),
			collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("registering process metrics: %w", err)
		}
	}
	return nil
}
