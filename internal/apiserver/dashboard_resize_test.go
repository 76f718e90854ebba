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

// dashResizeSlotMapDoc is a pool doubled from 4 to 8 slots: slot 5 split
// to mc-9, warming from slot 1's holder mc-2; slots 4, 6 and 7 are still
// twins of slots 0, 2 and 3.
const dashResizeSlotMapDoc = `{"pool":"payments-east","num_slots":8,"generation":4819,"updated_at":"2026-11-29T13:00:00Z","resized_from":4,
"slots":[{"slot":0,"node_id":"mc-1","addr":"10.0.1.1:11211","az":"a"},
{"slot":1,"node_id":"mc-2","addr":"10.0.1.2:11211","az":"b"},
{"slot":2,"node_id":"mc-3","addr":"10.0.1.3:11211","az":"c"},
{"slot":3,"node_id":"mc-4","addr":"10.0.1.4:11211","az":"a"},
{"slot":4,"node_id":"mc-1","addr":"10.0.1.1:11211","az":"a","twin_of":0},
{"slot":5,"node_id":"mc-9","addr":"10.0.1.9:11211","az":"b","warming":{"node_id":"mc-2","addr":"10.0.1.2:11211","until":"2026-11-29T13:02:00Z"}},
{"slot":6,"node_id":"mc-3","addr":"10.0.1.3:11211","az":"c","twin_of":2},
{"slot":7,"node_id":"mc-4","addr":"10.0.1.4:11211","az":"a","twin_of":3}],
"spares":[{"node_id":"mc-8","addr":"10.0.1.8:11211","az":"c"}]}`

// TestDashboardShowsResize: a resize under way shows its state, from → to,
// the twins left and split, the step and its interval, the last step and
// when the next is due, and the blocked sentence; the capacity shows the
// slots, nodes and ready spares and how long they have been too many; the
// slot table marks each twin "twin of s" and slot s's row its twin.
func TestDashboardShowsResize(t *testing.T) {
	bin := testenv.ChromiumBinary(t)
	fake, srv := dashServer(t)

	resize := func(blocked string) dashSource {
		return dashStatusDoc(time.Second, func(m map[string]any) {
			m["frozen"], m["freeze"] = false, nil
			m["num_slots"], m["vacant_slots"] = 8, 0
			m["resize"] = map[string]any{"from": 4, "to": 8, "reason": "grown past its slots", "by": "ops@10.0.0.5",
				"at": "2026-11-29T12:59:00Z", "step_percent": 50, "step_interval": "1m30s",
				"twins": 3, "split": 1, "state": "splitting", "blocked": blocked,
				"last_step_at": time.Now().Add(-5 * time.Second).UTC().Format(time.RFC3339)}
			m["capacity"] = map[string]any{"slots": 8, "nodes": 6, "spares_ready": 1, "spares_for": nil}
			twin := func(s int) any { return s + 4 }
			m["nodes"] = []any{
				map[string]any{"id": "mc-1", "addr": "10.0.1.1:11211", "az": "a", "slot": 0, "twin": twin(0), "consul": "present", "reachable": true, "state": "serving"},
				map[string]any{"id": "mc-2", "addr": "10.0.1.2:11211", "az": "b", "slot": 1, "twin": nil, "warming": 5, "consul": "present", "reachable": true, "state": "serving"},
				map[string]any{"id": "mc-3", "addr": "10.0.1.3:11211", "az": "c", "slot": 2, "twin": twin(2), "consul": "present", "reachable": true, "state": "serving"},
				map[string]any{"id": "mc-4", "addr": "10.0.1.4:11211", "az": "a", "slot": 3, "twin": twin(3), "consul": "present", "reachable": true, "state": "serving"},
				map[string]any{"id": "mc-9", "addr": "10.0.1.9:11211", "az": "b", "slot": 5, "twin": nil, "consul": "present", "reachable": true, "state": "serving"},
				map[string]any{"id": "mc-8", "addr": "10.0.1.8:11211", "az": "c", "slot": nil, "twin": nil, "consul": "present", "reachable": true, "state": "spare"},
			}
		})
	}

	fake.set(resize(""), dashAnswer(http.StatusOK, dashResizeSlotMapDoc), dashAnswer(http.StatusOK, dashRateLimitDoc))
	d := dashtest.ParseDOM(t, dashtest.Chromium(t, bin, "--dump-dom", srv.URL+"/"))
	if os.Getenv("MCRIB_SCREENSHOT") != "" {
		dashtest.Screenshot(t, bin, srv.URL+"/", "/tmp/mcrib-dashboard-resize.png", "1280,1100")
	}

	dashtest.WantShown(t, d, "resize", true)
	dashtest.WantShown(t, d, "rs-none", false)
	dashtest.WantText(t, d, "rs-state", "splitting")
	// 90 s between steps, 5 s of it gone.
	dashtest.WantContains(t, d, "rs-next", "next step in 8")
	dashtest.WantText(t, d, "rs-slots", "4 → 8")
	dashtest.WantText(t, d, "rs-twins", "3 twins left, 1 split")
	dashtest.WantText(t, d, "rs-steps", "50 % (2 twins) every 1m30s")
	dashtest.WantContains(t, d, "rs-last", "UTC", "s ago")
	dashtest.WantShown(t, d, "rs-blocked-row", false)
	dashtest.WantContains(t, d, "resize", "grown past its slots", "ops@10.0.0.5", "2026-11-29 12:59:00 UTC")
	dashtest.WantText(t, d, "cap-slots", "8")
	dashtest.WantText(t, d, "cap-nodes", "6")
	dashtest.WantText(t, d, "cap-spares", "1 of 6 (16.7 %)")
	dashtest.WantContains(t, d, "cap-for", "no")

	rows := d.ByID(t, "slots").ElementsNamed("tr")
	if len(rows) != 8 {
		t.Fatalf("#slots has %d rows, want 8:\n%s", len(rows), d.ByID(t, "slots").Text())
	}
	for i, want := range []string{"twin 4", "", "twin 6", "twin 7", "twin of 0", "", "twin of 2", "twin of 3"} {
		text := rows[i].Text()
		if want != "" && !strings.Contains(text, want) || want == "" && strings.Contains(text, "twin") {
			t.Errorf("slot row %d = %q, want it to show %q", i, text, want)
		}
		if twin := rows[i].HasClass("twin"); twin != (i >= 4 && i != 5) {
			t.Errorf("slot row %d (%q) marked twin = %v", i, text, twin)
		}
	}
	for _, w := range []string{"mc-9", "warming from mc-2"} {
		if !strings.Contains(rows[5].Text(), w) {
			t.Errorf("slot row 5 (split) = %q, want %q", rows[5].Text(), w)
		}
	}
	dashtest.WantContains(t, d, "slots-summary", "8 slots", "3 twins not split")

	// Blocked, with the pool outgrown: the sentence is shown and no next
	// step is promised.
	blocked := resize("no ready spare for the next split")
	outgrown := func(n int, now time.Time) (int, string) {
		code, body := blocked(n, now)
		return code, strings.Replace(body, `"spares_for":null`, `"spares_for":"3h0m0s"`, 1)
	}
	fake.set(outgrown, dashAnswer(http.StatusOK, dashResizeSlotMapDoc), dashAnswer(http.StatusOK, dashRateLimitDoc))
	d = dashtest.ParseDOM(t, dashtest.Chromium(t, bin, "--dump-dom", srv.URL+"/"))
	dashtest.WantShown(t, d, "rs-blocked-row", true)
	dashtest.WantText(t, d, "rs-blocked", "no ready spare for the next split")
	dashtest.WantText(t, d, "rs-next", "")
	dashtest.WantContains(t, d, "cap-for", "more than a quarter", "3 h 0 min")

	// No resize: the panel says so.
	fake.set(dashStatusDoc(time.Second, nil), dashAnswer(http.StatusOK, dashSlotMapDoc), dashAnswer(http.StatusOK, dashRateLimitDoc))
	d = dashtest.ParseDOM(t, dashtest.Chromium(t, bin, "--dump-dom", srv.URL+"/"))
	dashtest.WantShown(t, d, "resize", false)
	dashtest.WantShown(t, d, "rs-none", true)
	dashtest.WantText(t, d, "rs-none", "none under way")
	if strings.Contains(d.ByID(t, "slots").Text(), "twin") {
		t.Errorf("#slots without a resize mentions twins: %q", d.ByID(t, "slots").Text())
	}
}
