package apiserver

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/internal/dashtest"
	"github.com/mcrib/mcrib/internal/testenv"
)

// TestDashboardShowsWaitsAndUnknowns runs the page in Chromium against the
// fake API: before any traffic the hit rate reads "unknown" (not 0 %), the
// slots unserved a share of the slots, a held slot holder shows its hold
// countdown, a returning one its pending flush and what it waits for,
// the hit-rate chart says the rate is unknown, and the decisions are
// listed newest first with their markup shown as text.
func TestDashboardShowsWaitsAndUnknowns(t *testing.T) {
	bin := testenv.ChromiumBinary(t)
	fake, srv := dashServer(t)

	status := dashStatusDoc(time.Second, func(m map[string]any) {
		m["hit_rate"] = nil
		m["slots_unserved"], m["num_slots"] = 1, 4
		delete(m, "replacements_blocked") // an older mcrib: not sent, so not known
		nodes := m["nodes"].([]any)
		nodes[1].(map[string]any)["hold_remaining_seconds"] = 42.0
		nodes[0].(map[string]any)["flush_pending"] = true
		nodes[0].(map[string]any)["state"] = "flushing"
	})
	fake.set(status, dashAnswer(http.StatusOK, dashSlotMapDoc), dashAnswer(http.StatusOK, dashRateLimitDoc))
	fake.mu.Lock()
	fake.sources["/v1/history"] = func(_ int, now time.Time) (int, string) {
		at := func(d time.Duration) string { return `"` + now.Add(-d).UTC().Format(time.RFC3339) + `"` }
		return http.StatusOK, `{"interval_seconds":5,"window_seconds":1800,"at":[` + at(10*time.Second) + `,` + at(5*time.Second) + `,` + at(0) + `],` +
			`"hit_rate":[null,null,null],"boot_limit":[1000,500,250],"boot_mode":["auto","auto","manual"],` +
			`"admissions":[3,4,0],"refusals":[0,2,9],"flushes":[0,1,0],"replacements":[0,1,0]}`
	}
	fake.sources["/v1/events"] = dashAnswer(http.StatusOK, `[`+
		`{"seq":1,"at":"2026-12-01T05:00:00Z","kind":"hold started","node":"mc-2","reason":"a Consul check is not passing","who":"mcrib"},`+
		`{"seq":2,"at":"2026-12-01T05:01:00Z","kind":"operator change","reason":"freeze: <b>rollout</b>","who":"operator@10.0.0.5:53122"}]`)
	fake.mu.Unlock()

	d := dashtest.ParseDOM(t, dashtest.Chromium(t, bin, "--dump-dom", srv.URL+"/"))
	dashtest.WantText(t, d, "hitrate", "unknown")
	dashtest.WantText(t, d, "bl-hitrate", "unknown")
	dashtest.WantText(t, d, "unserved", "1 of 4 (25 %)")
	dashtest.WantText(t, d, "blocked", "unknown")
	rows := d.ByID(t, "slots").ElementsNamed("tr")
	if len(rows) != 4 {
		t.Fatalf("#slots has %d rows, want 4", len(rows))
	}
	for _, c := range []struct {
		row  int
		want string
	}{{1, "hold 42 s left"}, {0, "flush pending: held back by the freeze"}} {
		if !strings.Contains(rows[c.row].Text(), c.want) {
			t.Errorf("slot row %d = %q, want %q", c.row, rows[c.row].Text(), c.want)
		}
	}
	dashtest.WantContains(t, d, "chart-hitrate", "unknown: no traffic measured yet", "hit rate unknown")
	dashtest.WantContains(t, d, "chart-boots", "admitted 0", "refused 9")
	dashtest.WantContains(t, d, "chart-bootlimit", "limit 250")
	dashtest.WantShown(t, d, "ops-error", false)
	ev := d.ByID(t, "events").ElementsNamed("tr")
	if len(ev) != 2 {
		t.Fatalf("#events has %d rows, want 2", len(ev))
	}
	if !strings.Contains(ev[0].Text(), "operator change") || !strings.Contains(ev[0].Text(), "freeze: <b>rollout</b>") ||
		!strings.Contains(ev[1].Text(), "hold started") || !strings.Contains(ev[1].Text(), "mc-2") {
		t.Errorf("#events rows %q / %q: want the operator change (its markup as text) first, then mc-2's hold", ev[0].Text(), ev[1].Text())
	}
	if kids := ev[0].ElementsNamed("b"); len(kids) != 0 {
		t.Errorf("an event's reason became markup")
	}
}

// TestDashboardOpsScriptIsClean holds dashboard-ops.js to the rules of
// dashboard.js: no URL (the SVG namespace comes from the page), no HTML
// sink, API paths relative to the page.
func TestDashboardOpsScriptIsClean(t *testing.T) {
	js := dashFetch(t, dashboardHandler(), "/dashboard-ops.js")
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`https?://`),
		regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function`),
		regexp.MustCompile(`"/v1/`),
	} {
		if m := bad.FindString(js); m != "" {
			t.Errorf("dashboard-ops.js contains %q", m)
		}
	}
	for _, want := range []string{`"v1/history"`, `"v1/events?since="`} {
		if !strings.Contains(js, want) {
			t.Errorf("dashboard-ops.js does not fetch %s", want)
		}
	}
}
