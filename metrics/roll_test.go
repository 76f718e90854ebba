package metrics

import (
	"testing"

	"github.com/mcrib/mcrib/mcribapi"
)

// TestRollNodesGauge: mcrib_roll_nodes has one series per node state,
// each at 0 when no roll is known.
func TestRollNodesGauge(t *testing.T) {
	_, h := newRecorder(t, func() Gauges { return Gauges{} })
	samples, _ := scrape(t, h)
	wantLines(t, samples, `mcrib_roll_nodes{state="waiting"} 0`, `mcrib_roll_nodes{state="released"} 0`, `mcrib_roll_nodes{state="skipped"} 0`)
	_, h = newRecorder(t, func() Gauges {
		return Gauges{RollNodes: map[mcribapi.RollNodeState]int{mcribapi.RollRestarted: 2, mcribapi.RollMoving: 1}}
	})
	samples, families := scrape(t, h)
	wantLines(t, samples, `mcrib_roll_nodes{state="restarted"} 2`, `mcrib_roll_nodes{state="moving"} 1`, `mcrib_roll_nodes{state="waiting"} 0`)
	if families["mcrib_roll_nodes"] != "gauge" {
		t.Errorf("mcrib_roll_nodes is %q", families["mcrib_roll_nodes"])
	}
}
