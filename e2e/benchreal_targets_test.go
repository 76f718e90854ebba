package e2e

import (
	"strings"
	"testing"

	"github.com/mcrib/mcrib/mcribapi"
)

// TestBenchRealTargets checks that the targets of the real-stack rollout
// catch a flush, a replacement and a dip of the hit rate.
func TestBenchRealTargets(t *testing.T) {
	good := func() *benchRealResult {
		return &benchRealResult{
			baseline: 0.97, during: 0.965, gen0: 1, gen1: 1,
			flushes:  map[string]uint64{"mc-01": 0, "mc-02": 0},
			events:   map[mcribapi.EventKind]int{mcribapi.EventPlacement: 8, mcribapi.EventHoldStarted: 3},
			absences: []absenceResult{{node: "mc-01", hitRate: 0.962}},
		}
	}
	for _, tc := range []struct {
		name  string
		edit  func(*benchRealResult)
		wants []string
	}{
		{"all met", func(*benchRealResult) {}, nil},
		{"a flush", func(r *benchRealResult) { r.flushes["mc-02"] = 1 }, []string{"mc-02 shows cmd_flush 1"}},
		{"a new generation", func(r *benchRealResult) { r.gen1 = 2 }, []string{"generation 1 → 2"}},
		{"a replacement event", func(r *benchRealResult) { r.events[mcribapi.EventReplacement] = 1 }, []string{"1 replacement"}},
		{"a dip during the rollout", func(r *benchRealResult) { r.during = 0.959 }, []string{"95.90% during the rollout"}},
		{"a dip while away", func(r *benchRealResult) { r.absences[0].hitRate = 0.95 }, []string{"while mc-01's agent was away"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := good()
			tc.edit(r)
			wantMissed(t, benchRealTargets(r), tc.wants)
		})
	}
}

// wantMissed fails the test unless missed are the targets wants name, in
// order: missed[i] contains wants[i].
func wantMissed(t *testing.T, missed, wants []string) {
	t.Helper()
	if len(missed) != len(wants) {
		t.Fatalf("missed %q, want %d target(s) missed", missed, len(wants))
	}
	for i, w := range wants {
		if !strings.Contains(missed[i], w) {
			t.Errorf("missed[%d] = %q, want it to contain %q", i, missed[i], w)
		}
	}
}
