package metrics

import (
	"strings"
	"testing"
)

func TestZoneGauges(t *testing.T) {
	hit := 0.93
	_, h := newRecorder(t, func() Gauges {
		return Gauges{Zones: []ZoneGauges{
			{Zone: "a", Slots: 3, Unreachable: 0, HitRate: &hit},
			{Zone: "b", Slots: 2, Unreachable: 3, Alert: true},
			{Zone: "", Slots: 0, Unreachable: 1},
		}, SlotsUnserved: 2, NumSlots: 8}
	})
	samples, families := scrape(t, h)
	wantLines(t, samples,
		`mcrib_zone_slots{zone="a"} 3`,
		`mcrib_zone_slots{zone="b"} 2`,
		`mcrib_zone_slots{zone=""} 0`,
		`mcrib_zone_unreachable_nodes{zone="a"} 0`,
		`mcrib_zone_unreachable_nodes{zone="b"} 3`,
		`mcrib_zone_unreachable_nodes{zone=""} 1`,
		`mcrib_zone_hit_ratio{zone="a"} 0.93`,
		`mcrib_nodes{state="warming"} 0`,
		`mcrib_zone_alert{zone="a"} 0`,
		`mcrib_zone_alert{zone="b"} 1`,
		`mcrib_zone_alert{zone=""} 0`,
		`mcrib_slots_unserved 2`,
		`mcrib_slots 8`,
	)
	for _, name := range []string{"mcrib_zone_slots", "mcrib_zone_unreachable_nodes", "mcrib_zone_hit_ratio", "mcrib_zone_alert", "mcrib_slots_unserved", "mcrib_slots"} {
		if families[name] != "gauge" {
			t.Errorf("family %s is %q, want a gauge", name, families[name])
		}
	}
	for line := range samples {
		if strings.HasPrefix(line, "mcrib_zone_hit_ratio{") && !strings.Contains(line, `zone="a"`) {
			t.Errorf("a zone with an unknown hit rate is exported: %s", line)
		}
	}
}
