package apiserver

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/internal/dashtest"
	"github.com/mcrib/mcrib/internal/testenv"
)

// dashZoneSlotMapDoc is dashSlotMapDoc with slot 3 warming from mc-2.
const dashZoneSlotMapDoc = `{"pool":"payments-east","num_slots":4,"generation":4817,"updated_at":"2026-11-29T13:00:00Z",
"slots":[{"slot":0,"node_id":"mc-1","addr":"10.0.1.1:11211","az":"a"},
{"slot":1,"node_id":"mc-5","addr":"10.0.1.5:11211","az":"c"},
{"slot":2,"node_id":"","addr":"","az":""},
{"slot":3,"node_id":"mc-4","addr":"10.0.1.4:11211","az":"a","warming":{"node_id":"mc-2","addr":"10.0.1.2:11211","until":"2026-11-29T13:02:00Z"}}],
"spares":[{"node_id":"mc-9","addr":"10.0.1.9:11211","az":"b"}]}`

// TestDashboardShowsZones: a row per zone with its nodes, slots,
// unreachable, hit rate and drain; the zone alert as a banner naming the
// zone and the command; drained nodes and warm sources marked, and a
// warming slot naming its source.
func TestDashboardShowsZones(t *testing.T) {
	bin := testenv.ChromiumBinary(t)
	fake, srv := dashServer(t)

	alert := `more than half of zone b's slot holders are unreachable (2 of 3); to take the cache off it: mcrib drain b --reason "…"`
	status := dashStatusDoc(time.Second, func(m map[string]any) {
		m["frozen"], m["freeze"] = false, nil
		m["zone_alert"] = alert
		m["zones"] = []any{
			map[string]any{"zone": "a", "nodes": 2, "slots": 2, "unreachable": 0, "absent": 0, "hit_rate": 0.93, "drain": nil},
			map[string]any{"zone": "b", "nodes": 3, "slots": 0, "unreachable": 2, "absent": 1, "hit_rate": nil,
				"drain": map[string]any{"percent": 100, "step_percent": 10, "step_interval": "30s", "reason": "link to b flapping",
					"by": "ops", "at": "2026-11-29T13:00:00Z", "baseline_slots": 1, "slots": 0, "target_slots": 0,
					"state": "drained", "blocked": ""}},
			map[string]any{"zone": "c", "nodes": 1, "slots": 1, "unreachable": 0, "absent": 0, "hit_rate": 0.5,
				"drain": map[string]any{"percent": 100, "step_percent": 10, "step_interval": "30s", "reason": "test",
					"by": "ops", "at": "2026-11-29T13:00:00Z", "baseline_slots": 2, "slots": 1, "target_slots": 0,
					"state": "draining", "blocked": "no spare outside the drained zones", "slots_to_move": 1,
					"last_step_at": time.Now().Add(-5 * time.Second).UTC().Format(time.RFC3339)}},
			map[string]any{"zone": "d", "nodes": 2, "slots": 0, "unreachable": 0, "absent": 0, "hit_rate": nil,
				"drain": map[string]any{"percent": 100, "step_percent": 50, "step_interval": "1m30s", "reason": "test",
					"by": "ops", "at": "2026-11-29T13:00:00Z", "baseline_slots": 2, "slots": 0, "target_slots": 2, "returning": true,
					"state": "returning", "blocked": "", "slots_to_move": 2,
					"last_step_at": time.Now().Add(-5 * time.Second).UTC().Format(time.RFC3339)}},
		}
		m["nodes"] = []any{
			map[string]any{"id": "mc-1", "addr": "10.0.1.1:11211", "az": "a", "slot": 0, "consul": "present", "reachable": true, "state": "serving", "flaps": 0, "drained": false, "warming": nil},
			map[string]any{"id": "mc-2", "addr": "10.0.1.2:11211", "az": "b", "slot": nil, "consul": "present", "reachable": true, "state": "warming", "flaps": 0, "drained": true, "warming": 3},
			map[string]any{"id": "mc-4", "addr": "10.0.1.4:11211", "az": "a", "slot": 3, "consul": "present", "reachable": true, "state": "serving", "flaps": 0, "drained": false, "warming": nil},
			map[string]any{"id": "mc-5", "addr": "10.0.1.5:11211", "az": "c", "slot": 1, "consul": "present", "reachable": true, "state": "serving", "flaps": 0, "drained": true, "warming": nil},
			map[string]any{"id": "mc-9", "addr": "10.0.1.9:11211", "az": "b", "slot": nil, "consul": "present", "reachable": true, "state": "spare", "flaps": 0, "drained": true, "warming": nil},
		}
	})
	fake.set(status, dashAnswer(http.StatusOK, dashZoneSlotMapDoc), dashAnswer(http.StatusOK, dashRateLimitDoc))
	d := dashtest.ParseDOM(t, dashtest.Chromium(t, bin, "--dump-dom", srv.URL+"/"))
	if os.Getenv("MCRIB_SCREENSHOT") != "" {
		dashtest.Screenshot(t, bin, srv.URL+"/", "/tmp/mcrib-dashboard-zones.png", "1280,1100")
	}

	dashtest.WantShown(t, d, "zonealert-banner", true)
	dashtest.WantContains(t, d, "zonealert", "zone b", "mcrib drain b")
	rows := d.ByID(t, "zones").ElementsNamed("tr")
	if len(rows) != 4 {
		t.Fatalf("#zones has %d rows, want 4:\n%s", len(rows), d.ByID(t, "zones").Text())
	}
	for i, want := range [][]string{
		{"a", "2", "93.0 %", "—"},
		{"b", "3", "2", "drained", "1 slot moved, 0 left of a baseline of 1", "link to b flapping"},
		{"c", "50.0 %", "draining", "1 slot to move, 0 left of a baseline of 2", "no spare outside the drained zones"},
		// Waiting for its step interval (90 s, 5 s of it gone), it says when.
		{"d", "returning", "2 slots to give back, 0 held of a baseline of 2", "next step in 8"},
	} {
		if got := rows[i].Attrs["data-zone"]; got != want[0] {
			t.Errorf("zone row %d data-zone = %q, want %q", i, got, want[0])
		}
		for _, w := range want {
			if !strings.Contains(rows[i].Text(), w) {
				t.Errorf("zone row %d = %q, want it to show %q", i, rows[i].Text(), w)
			}
		}
	}
	if strings.Contains(rows[2].Text(), "next step") {
		t.Errorf("zone c, blocked, is said to have a next step: %q", rows[2].Text())
	}
	if !rows[1].HasClass("troubled") || rows[0].HasClass("troubled") {
		t.Errorf("only zone b (unreachable nodes) should be marked troubled")
	}
	slots := d.ByID(t, "slots").ElementsNamed("tr")
	if len(slots) != 4 {
		t.Fatalf("#slots has %d rows, want 4", len(slots))
	}
	for _, w := range []string{"mc-4", "warming from mc-2 until 2026-11-29 13:02:00 UTC"} {
		if !strings.Contains(slots[3].Text(), w) {
			t.Errorf("slot row 3 = %q, want %q", slots[3].Text(), w)
		}
	}
	if !strings.Contains(slots[1].Text(), "zone drained") {
		t.Errorf("slot row 1 (mc-5 of drained zone c) = %q, want it marked drained", slots[1].Text())
	}
	spares := d.ByID(t, "spares").Text()
	if !strings.Contains(spares, "mc-9") || !strings.Contains(spares, "zone drained") || strings.Contains(spares, "mc-2") {
		t.Errorf("#spares = %q, want mc-9 marked drained and not the warm source mc-2", spares)
	}
	// The drained warm source has a node table of its own.
	dashtest.WantContains(t, d, "warmsources", "mc-2", "10.0.1.2:11211", "slot 3 for mc-4 until 2026-11-29 13:02:00 UTC", "zone drained")
}
