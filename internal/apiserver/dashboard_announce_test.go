package apiserver

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/internal/dashtest"
	"github.com/mcrib/mcrib/internal/testenv"
)

// dashAnnounceSlotMapDoc has slot 0 announced to mc-9, vacant slot 2
// announced to mc-8, and slot 3's warming ended early.
const dashAnnounceSlotMapDoc = `{"pool":"payments-east","num_slots":4,"generation":4817,"revision":31,"updated_at":"2026-11-29T13:00:00Z",
"slots":[{"slot":0,"node_id":"mc-1","addr":"10.0.1.1:11211","az":"a","incoming":{"node_id":"mc-9","addr":"10.0.1.9:11211","serves_at":"2026-11-29T13:00:12Z","until":"2026-11-29T13:30:12Z"}},
{"slot":1,"node_id":"mc-5","addr":"10.0.1.5:11211","az":"c"},
{"slot":2,"node_id":"","addr":"","az":"","incoming":{"node_id":"mc-8","addr":"10.0.1.8:11211","serves_at":"2026-11-29T13:00:12Z","until":"2026-11-29T13:00:12Z"}},
{"slot":3,"node_id":"mc-4","addr":"10.0.1.4:11211","az":"a","warming":{"node_id":"mc-2","addr":"10.0.1.2:11211","until":"2026-11-29T13:02:00Z","ended_at":"2026-11-29T13:00:30Z"}}],
"spares":[]}`

// TestDashboardShowsAnnounces: a slot's incoming node is named on its row
// with when it serves, the incoming node is not listed among the spares
// and its state says incoming; a warming that ended early says until when
// its old holder is still written.
func TestDashboardShowsAnnounces(t *testing.T) {
	bin := testenv.ChromiumBinary(t)
	fake, srv := dashServer(t)
	status := dashStatusDoc(time.Second, func(m map[string]any) {
		m["frozen"], m["freeze"] = false, nil
		m["nodes"] = []any{
			map[string]any{"id": "mc-1", "addr": "10.0.1.1:11211", "az": "a", "slot": 0, "consul": "present", "reachable": true, "state": "serving", "flaps": 0, "incoming_node": "mc-9"},
			map[string]any{"id": "mc-2", "addr": "10.0.1.2:11211", "az": "b", "slot": nil, "consul": "present", "reachable": true, "state": "warming", "flaps": 0, "warming": 3},
			map[string]any{"id": "mc-4", "addr": "10.0.1.4:11211", "az": "a", "slot": 3, "consul": "present", "reachable": true, "state": "serving", "flaps": 0},
			map[string]any{"id": "mc-5", "addr": "10.0.1.5:11211", "az": "c", "slot": 1, "consul": "present", "reachable": true, "state": "serving", "flaps": 0},
			map[string]any{"id": "mc-8", "addr": "10.0.1.8:11211", "az": "b", "slot": nil, "consul": "present", "reachable": true, "state": "incoming", "flaps": 0, "incoming": 2, "serves_at": "2026-11-29T13:00:12Z"},
			map[string]any{"id": "mc-9", "addr": "10.0.1.9:11211", "az": "a", "slot": nil, "consul": "present", "reachable": true, "state": "incoming", "flaps": 0, "incoming": 0, "serves_at": "2026-11-29T13:00:12Z"},
		}
	})
	fake.set(status, dashAnswer(http.StatusOK, dashAnnounceSlotMapDoc), dashAnswer(http.StatusOK, dashRateLimitDoc))
	d := dashtest.ParseDOM(t, dashtest.Chromium(t, bin, "--dump-dom", srv.URL+"/"))
	slots := d.ByID(t, "slots").ElementsNamed("tr")
	if len(slots) != 4 {
		t.Fatalf("#slots has %d rows, want 4", len(slots))
	}
	for i, want := range map[int]string{
		0: "announced: mc-9 serves from 2026-11-29 13:00:12 UTC",
		2: "until mc-8, announced, serves it",
		3: "warming from mc-2 ended 2026-11-29 13:00:30 UTC, still written until 2026-11-29 13:00:42 UTC",
	} {
		if !strings.Contains(slots[i].Text(), want) {
			t.Errorf("slot row %d = %q, want %q", i, slots[i].Text(), want)
		}
	}
	if spares := d.ByID(t, "spares").Text(); strings.Contains(spares, "mc-9") || strings.Contains(spares, "mc-8") {
		t.Errorf("#spares = %q: an incoming node is no spare", spares)
	}
}
