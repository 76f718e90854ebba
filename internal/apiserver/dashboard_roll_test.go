package apiserver

import (
	"net/http"
	"testing"
	"time"

	"github.com/mcrib/mcrib/internal/dashtest"
	"github.com/mcrib/mcrib/internal/testenv"
)

// TestDashboardShowsRoll: a roll under way shows its state, how many of
// its nodes restarted, the node to restart now, each node in order, the
// restart timeout and the reason; a blocked roll its sentence; no roll
// says so.
func TestDashboardShowsRoll(t *testing.T) {
	bin := testenv.ChromiumBinary(t)
	fake, srv := dashServer(t)
	roll := func(state, blocked string) dashSource {
		return dashStatusDoc(time.Second, func(m map[string]any) {
			m["roll"] = map[string]any{"reason": "memcached 1.6.38", "by": "ops@10.0.0.5", "at": "2026-12-04T10:00:00Z",
				"restart_timeout": "10m", "state": state, "blocked": blocked,
				"nodes": []any{
					map[string]any{"node_id": "mc-a-1", "state": "restarted", "slot": 0, "to": "mc-c-4"},
					map[string]any{"node_id": "mc-a-2", "state": "released", "slot": 3, "to": "mc-b-4", "released_at": "2026-12-04T10:04:10Z"},
					map[string]any{"node_id": "mc-a-3", "state": "waiting", "slot": nil},
				}}
		})
	}
	fake.set(roll("rolling", ""), dashAnswer(http.StatusOK, dashSlotMapDoc), dashAnswer(http.StatusOK, dashRateLimitDoc))
	d := dashtest.ParseDOM(t, dashtest.Chromium(t, bin, "--dump-dom", srv.URL+"/"))
	dashtest.WantShown(t, d, "roll", true)
	dashtest.WantShown(t, d, "rl-none", false)
	dashtest.WantText(t, d, "rl-state", "rolling")
	dashtest.WantText(t, d, "rl-progress", "1 of 3 restarted")
	dashtest.WantContains(t, d, "rl-now", "released mc-a-2 (slot 3 to mc-b-4): restart it now")
	dashtest.WantContains(t, d, "rl-nodes", "restarted mc-a-1 (slot 0 to mc-c-4)", "waiting mc-a-3")
	dashtest.WantText(t, d, "rl-timeout", "10m")
	dashtest.WantContains(t, d, "roll", "memcached 1.6.38", "ops@10.0.0.5")
	dashtest.WantShown(t, d, "rl-blocked-row", false)

	fake.set(roll("blocked", "node mc-a-2 did not restart within 10m of its release"), dashAnswer(http.StatusOK, dashSlotMapDoc), dashAnswer(http.StatusOK, dashRateLimitDoc))
	d = dashtest.ParseDOM(t, dashtest.Chromium(t, bin, "--dump-dom", srv.URL+"/"))
	dashtest.WantShown(t, d, "rl-blocked-row", true)
	dashtest.WantText(t, d, "rl-blocked", "node mc-a-2 did not restart within 10m of its release")
	dashtest.WantContains(t, d, "roll-summary", "blocked")

	fake.set(dashStatusDoc(time.Second, nil), dashAnswer(http.StatusOK, dashSlotMapDoc), dashAnswer(http.StatusOK, dashRateLimitDoc))
	d = dashtest.ParseDOM(t, dashtest.Chromium(t, bin, "--dump-dom", srv.URL+"/"))
	dashtest.WantShown(t, d, "roll", false)
	dashtest.WantText(t, d, "rl-none", "none under way")
}
