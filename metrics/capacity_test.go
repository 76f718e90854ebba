package metrics

import "testing"

func TestCapacityGauges(t *testing.T) {
	_, h := newRecorder(t, func() Gauges {
		return Gauges{NumSlots: 16, SpareNodes: 8, PresentNodes: 24}
	})
	samples, families := scrape(t, h)
	wantLines(t, samples, `mcrib_slots 16`, `mcrib_spare_nodes 8`, `mcrib_present_nodes 24`)
	for _, name := range []string{"mcrib_slots", "mcrib_spare_nodes", "mcrib_present_nodes"} {
		if families[name] != "gauge" {
			t.Errorf("family %s is %q, want a gauge", name, families[name])
		}
	}
}
