package metrics

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcrib/mcrib/controlloop"
	"github.com/mcrib/mcrib/mcribapi"
)

// exposedFamilies is every metric family a Recorder exposes after at
// least one pass, with its Prometheus type. The names are part of the
// operator contract: the alert rules and dashboards use them.
var exposedFamilies = map[string]string{
	"mcrib_reconcile_passes_total":              "counter",
	"mcrib_reconcile_duration_seconds":          "histogram",
	"mcrib_slot_replacements_total":             "counter",
	"mcrib_slot_moves_total":                    "counter",
	"mcrib_flushes_total":                       "counter",
	"mcrib_boot_admissions_total":               "counter",
	"mcrib_slotmap_generation":                  "gauge",
	"mcrib_last_reconcile_timestamp_seconds":    "gauge",
	"mcrib_leader":                              "gauge",
	"mcrib_frozen":                              "gauge",
	"mcrib_auto_frozen":                         "gauge",
	"mcrib_discovery_fault":                     "gauge",
	"mcrib_consul_reachable":                    "gauge",
	"mcrib_ready":                               "gauge",
	"mcrib_vacant_slots":                        "gauge",
	"mcrib_replacements_blocked":                "gauge",
	"mcrib_nodes":                               "gauge",
	"mcrib_hit_rate":                            "gauge",
	"mcrib_boot_limit":                          "gauge",
	"mcrib_config_write_failures_total":         "counter",
	"mcrib_config_last_write_timestamp_seconds": "gauge",
	"mcrib_build_info":                          "gauge",
	"mcrib_boot_limit_manual":                   "gauge",
	"mcrib_flushes_pending":                     "gauge",
	"mcrib_slotmap_updated_timestamp_seconds":   "gauge",
	"mcrib_kv_corrupt_documents":                "gauge",
	"mcrib_slots_unserved":                      "gauge",
	"mcrib_spare_nodes":                         "gauge",
	"mcrib_roll_nodes":                          "gauge",
	"mcrib_present_nodes":                       "gauge",
	"mcrib_slots":                               "gauge",
	"mcrib_warm_copied_keys_total":              "counter",
	"mcrib_warm_copied_bytes_total":             "counter",
}

// newRecorder builds a Recorder whose gauges come from g.
func newRecorder(t *testing.T, g func() Gauges) (*Recorder, http.Handler) {
	t.Helper()
	r, h, err := New(Options{Gauges: g})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if r == nil || h == nil {
		t.Fatalf("New returned a nil Recorder or handler")
	}
	return r, h
}

func TestNewRequiresGauges(t *testing.T) {
	r, h, err := New(Options{})
	if !errors.Is(err, ErrNoGauges) {
		t.Fatalf("New(Options{}) error = %v, want ErrNoGauges", err)
	}
	if r != nil || h != nil {
		t.Fatalf("New(Options{}) returned a Recorder or handler with an error")
	}
}

func TestExposedNames(t *testing.T) {
	r, s := newRecorder(t, func() Gauges { return Gauges{} })
	r.Pass("ok", time.Millisecond)
	_, families := scrape(t, s)
	if !maps.Equal(families, exposedFamilies) {
		t.Errorf("exposed families differ\n got: %v\nwant: %v", families, exposedFamilies)
	}
	for name := range families {
		if !strings.HasPrefix(name, "mcrib_") {
			t.Errorf("unexpected family %q", name)
		}
	}
}

func TestCountersStartAtZero(t *testing.T) {
	_, s := newRecorder(t, func() Gauges { return Gauges{} })
	samples, families := scrape(t, s)
	var want []string
	for _, v := range mcribapi.Outcomes() {
		want = append(want, fmt.Sprintf(`mcrib_reconcile_passes_total{result=%q} 0`, v))
	}
	for _, v := range mcribapi.ReplacementReasons() {
		want = append(want, fmt.Sprintf(`mcrib_slot_replacements_total{reason=%q} 0`, v))
	}
	for _, v := range controlloop.FlushReasons() {
		want = append(want, fmt.Sprintf(`mcrib_flushes_total{reason=%q} 0`, v))
	}
	for _, v := range controlloop.ConfigKinds() {
		want = append(want,
			fmt.Sprintf(`mcrib_config_write_failures_total{kind=%q} 0`, v),
			fmt.Sprintf(`mcrib_config_last_write_timestamp_seconds{kind=%q} 0`, v))
	}
	want = append(want,
		`mcrib_boot_admissions_total{result="admitted"} 0`,
		`mcrib_boot_admissions_total{result="rejected"} 0`,
	)
	wantLines(t, samples, want...)
	// Nothing carries OpenTelemetry scope labels or a target_info family.
	for line := range samples {
		if strings.Contains(line, "otel_scope") || strings.Contains(line, "target_info") {
			t.Errorf("scrape has OpenTelemetry bookkeeping: %q", line)
		}
	}
	if _, ok := families["mcrib_reconcile_duration_seconds"]; ok {
		t.Errorf("histogram exposed before any pass")
	}
}

func TestEvents(t *testing.T) {
	tests := []struct {
		name   string
		events func(r *Recorder)
		want   []string
	}{
		{
			name: "passes by result with durations",
			events: func(r *Recorder) {
				r.Pass("ok", 20*time.Millisecond)
				r.Pass("ok", 300*time.Millisecond)
				r.Pass("error", 2*time.Second)
				r.Pass("follower", time.Millisecond/2)
			},
			want: []string{
				`mcrib_reconcile_passes_total{result="ok"} 2`,
				`mcrib_reconcile_passes_total{result="error"} 1`,
				`mcrib_reconcile_passes_total{result="follower"} 1`,
				`mcrib_reconcile_passes_total{result="conflict"} 0`,
				`mcrib_reconcile_passes_total{result="waiting"} 0`,
				`mcrib_reconcile_duration_seconds_bucket{le="0.001"} 1`,
				`mcrib_reconcile_duration_seconds_bucket{le="0.025"} 2`,
				`mcrib_reconcile_duration_seconds_bucket{le="0.5"} 3`,
				`mcrib_reconcile_duration_seconds_bucket{le="2.5"} 4`,
				`mcrib_reconcile_duration_seconds_bucket{le="+Inf"} 4`,
				`mcrib_reconcile_duration_seconds_sum 2.3205`,
				`mcrib_reconcile_duration_seconds_count 4`,
			},
		},
		{
			name: "replacements and flushes by reason",
			events: func(r *Recorder) {
				r.Replacement("hold_expired")
				r.Replacement("hold_expired")
				r.Replacement("maintenance")
				r.Flush("placement")
				r.Flush("placement")
				r.Flush("placement")
			},
			want: []string{
				`mcrib_slot_replacements_total{reason="hold_expired"} 2`,
				`mcrib_slot_replacements_total{reason="maintenance"} 1`,
				`mcrib_flushes_total{reason="placement"} 3`,
				`mcrib_flushes_total{reason="returned"} 0`,
				`mcrib_reconcile_passes_total{result="ok"} 0`,
			},
		},
		{
			name: "boot admissions",
			events: func(r *Recorder) {
				r.BootAdmission(true)
				r.BootAdmission(false)
				r.BootAdmission(false)
			},
			want: []string{
				`mcrib_boot_admissions_total{result="admitted"} 1`,
				`mcrib_boot_admissions_total{result="rejected"} 2`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, s := newRecorder(t, func() Gauges { return Gauges{} })
			tt.events(r)
			samples, _ := scrape(t, s)
			wantLines(t, samples, tt.want...)
		})
	}
}

func TestGauges(t *testing.T) {
	tests := []struct {
		name   string
		gauges Gauges
		want   []string
	}{
		{
			name:   "zero value",
			gauges: Gauges{},
			want: []string{
				`mcrib_slotmap_generation 0`,
				`mcrib_last_reconcile_timestamp_seconds 0`,
				`mcrib_leader 0`,
				`mcrib_frozen 0`,
				`mcrib_auto_frozen 0`,
				`mcrib_discovery_fault 0`,
				`mcrib_consul_reachable 0`,
				`mcrib_ready 0`,
				`mcrib_vacant_slots 0`,
				`mcrib_replacements_blocked 0`,
				`mcrib_nodes{state="serving"} 0`,
				`mcrib_nodes{state="held"} 0`,
				`mcrib_nodes{state="spare"} 0`,
				`mcrib_nodes{state="flushing"} 0`,
				`mcrib_nodes{state="down"} 0`,
				`mcrib_hit_rate 0`,
				`mcrib_boot_limit 0`,
				`mcrib_warm_copied_keys_total 0`,
				`mcrib_warm_copied_bytes_total 0`,
			},
		},
		{
			name:   "a leader that copied hot keys",
			gauges: Gauges{Leader: true, WarmCopiedKeys: 1200, WarmCopiedBytes: 345_678},
			want: []string{
				`mcrib_warm_copied_keys_total 1200`,
				`mcrib_warm_copied_bytes_total 345678`,
			},
		},
		{
			name: "healthy leader",
			gauges: Gauges{
				Generation:      7,
				LastReconcile:   time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC),
				Leader:          true,
				ConsulReachable: true,
				Ready:           true,
				NodesByState:    map[mcribapi.NodeState]int{"serving": 16, "spare": 2},
				HitRate:         0.97,
				BootLimit:       1000,
			},
			want: []string{
				`mcrib_slotmap_generation 7`,
				`mcrib_last_reconcile_timestamp_seconds 1.7959572e+09`,
				`mcrib_leader 1`,
				`mcrib_frozen 0`,
				`mcrib_auto_frozen 0`,
				`mcrib_discovery_fault 0`,
				`mcrib_consul_reachable 1`,
				`mcrib_ready 1`,
				`mcrib_vacant_slots 0`,
				`mcrib_nodes{state="serving"} 16`,
				`mcrib_nodes{state="spare"} 2`,
				`mcrib_nodes{state="held"} 0`,
				`mcrib_nodes{state="down"} 0`,
				`mcrib_hit_rate 0.97`,
				`mcrib_boot_limit 1000`,
			},
		},
		{
			name: "frozen, faulted, degraded",
			gauges: Gauges{
				Generation:          1 << 40,
				LastReconcile:       time.Unix(1700000000, 250_000_000),
				Frozen:              true,
				AutoFrozen:          true,
				DiscoveryFault:      true,
				VacantSlots:         3,
				ReplacementsBlocked: 2,
				NodesByState:        map[mcribapi.NodeState]int{"held": 4, "flushing": 1, "down": 3},
				HitRate:             0.42,
				BootLimit:           12.5,
			},
			want: []string{
				`mcrib_slotmap_generation 1.099511627776e+12`,
				`mcrib_last_reconcile_timestamp_seconds 1.70000000025e+09`,
				`mcrib_leader 0`,
				`mcrib_frozen 1`,
				`mcrib_auto_frozen 1`,
				`mcrib_discovery_fault 1`,
				`mcrib_consul_reachable 0`,
				`mcrib_ready 0`,
				`mcrib_vacant_slots 3`,
				`mcrib_replacements_blocked 2`,
				`mcrib_nodes{state="serving"} 0`,
				`mcrib_nodes{state="held"} 4`,
				`mcrib_nodes{state="flushing"} 1`,
				`mcrib_nodes{state="down"} 3`,
				`mcrib_hit_rate 0.42`,
				`mcrib_boot_limit 12.5`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, s := newRecorder(t, func() Gauges { return tt.gauges })
			samples, _ := scrape(t, s)
			wantLines(t, samples, tt.want...)
		})
	}
}

func TestGaugesReadAtScrapeTime(t *testing.T) {
	var calls atomic.Int64
	var generation atomic.Uint64
	_, s := newRecorder(t, func() Gauges {
		calls.Add(1)
		return Gauges{Generation: generation.Load()}
	})
	if n := calls.Load(); n != 0 {
		t.Fatalf("Gauges called %d times before any scrape", n)
	}
	for _, gen := range []uint64{3, 4, 9} {
		generation.Store(gen)
		samples, _ := scrape(t, s)
		wantLines(t, samples, fmt.Sprintf("mcrib_slotmap_generation %d", gen))
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("Gauges called %d times for 3 scrapes, want 3", n)
	}
}

func TestTwoRecordersDoNotCollide(t *testing.T) {
	a, sa := newRecorder(t, func() Gauges { return Gauges{Generation: 1, Leader: true} })
	b, sb := newRecorder(t, func() Gauges { return Gauges{Generation: 2} })
	a.Pass("ok", time.Millisecond)
	a.Replacement("maintenance")
	b.Flush("returned")
	b.BootAdmission(true)

	samplesA, _ := scrape(t, sa)
	wantLines(t, samplesA,
		`mcrib_slotmap_generation 1`,
		`mcrib_leader 1`,
		`mcrib_reconcile_passes_total{result="ok"} 1`,
		`mcrib_slot_replacements_total{reason="maintenance"} 1`,
		`mcrib_flushes_total{reason="returned"} 0`,
		`mcrib_boot_admissions_total{result="admitted"} 0`,
	)
	samplesB, familiesB := scrape(t, sb)
	wantLines(t, samplesB,
		`mcrib_slotmap_generation 2`,
		`mcrib_leader 0`,
		`mcrib_reconcile_passes_total{result="ok"} 0`,
		`mcrib_slot_replacements_total{reason="maintenance"} 0`,
		`mcrib_flushes_total{reason="returned"} 1`,
		`mcrib_boot_admissions_total{result="admitted"} 1`,
	)
	if _, ok := familiesB["mcrib_reconcile_duration_seconds"]; ok {
		t.Errorf("second Recorder shows the first one's pass durations")
	}
}

func TestConcurrentUse(t *testing.T) {
	r, s := newRecorder(t, func() Gauges { return Gauges{Ready: true} })
	const workers, each = 8, 200
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range each {
				r.Pass("ok", time.Duration(i)*time.Microsecond)
				r.Replacement("hold_expired")
				r.Flush("returned")
				r.BootAdmission(i%2 == 0)
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
			if rec.Code != http.StatusOK {
				t.Errorf("concurrent scrape: status %d", rec.Code)
			}
		}
	})
	wg.Wait()
	samples, _ := scrape(t, s)
	n := workers * each
	wantLines(t, samples,
		fmt.Sprintf(`mcrib_reconcile_passes_total{result="ok"} %d`, n),
		fmt.Sprintf(`mcrib_reconcile_duration_seconds_count %d`, n),
		fmt.Sprintf(`mcrib_slot_replacements_total{reason="hold_expired"} %d`, n),
		fmt.Sprintf(`mcrib_flushes_total{reason="returned"} %d`, n),
		fmt.Sprintf(`mcrib_boot_admissions_total{result="admitted"} %d`, n/2),
		fmt.Sprintf(`mcrib_boot_admissions_total{result="rejected"} %d`, n/2),
		`mcrib_ready 1`,
	)
}
