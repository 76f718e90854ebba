package metrics

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestPoolLabelBuildInfoAndRuntime(t *testing.T) {
	updated := time.Unix(1795957200, 0)
	r, h, err := New(Options{
		Gauges: func() Gauges {
			return Gauges{BootLimitManual: true, FlushesPending: 2, SlotMapUpdated: updated, BootLimit: 50,
				ConfigGenerations: map[string]uint64{"twemproxy": 6}}
		},
		Pool: "payments", Version: "v1.2.3", Runtime: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	r.Pass("ok", time.Millisecond)
	samples, families := scrape(t, h)
	wantLines(t, samples,
		`mcrib_build_info{goversion="`+runtime.Version()+`",pool="payments",version="v1.2.3"} 1`,
		`mcrib_boot_limit_manual{pool="payments"} 1`,
		`mcrib_flushes_pending{pool="payments"} 2`,
		`mcrib_slotmap_updated_timestamp_seconds{pool="payments"} 1.7959572e+09`,
		`mcrib_boot_limit{pool="payments"} 50`,
		`mcrib_config_generation{kind="twemproxy",pool="payments"} 6`,
		`mcrib_reconcile_passes_total{pool="payments",result="ok"} 1`,
	)
	for _, f := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_start_time_seconds", "process_resident_memory_bytes"} {
		if _, ok := families[f]; !ok {
			t.Errorf("no %s among the families with Runtime", f)
		}
	}
	for line := range samples {
		if !strings.Contains(line, `pool="payments"`) {
			t.Errorf("series without the pool label: %s", line)
		}
	}
}

func TestNoPoolLabelWhenUnset(t *testing.T) {
	_, h := newRecorder(t, func() Gauges { return Gauges{} })
	samples, families := scrape(t, h)
	wantLines(t, samples, `mcrib_build_info{goversion="`+runtime.Version()+`",version="unknown"} 1`, "mcrib_boot_limit_manual 0")
	if _, ok := families["go_goroutines"]; ok {
		t.Errorf("Go runtime metrics without Options.Runtime")
	}
}
