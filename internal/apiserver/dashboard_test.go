package apiserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcrib/mcrib/internal/dashtest"
	"github.com/mcrib/mcrib/internal/testenv"
)

func TestDashboardServesAssets(t *testing.T) {
	h := dashboardHandler()
	tests := []struct {
		method      string
		path        string
		status      int
		contentType string
		bodyHas     string
	}{
		{http.MethodGet, "/", http.StatusOK, "text/html; charset=utf-8", `<script src="dashboard.js"`},
		{http.MethodHead, "/", http.StatusOK, "text/html; charset=utf-8", ""},
		{http.MethodGet, "/dashboard.js", http.StatusOK, "text/javascript; charset=utf-8", `"v1/status"`},
		{http.MethodGet, "/dashboard.css", http.StatusOK, "text/css; charset=utf-8", ".vacant"},
		{http.MethodGet, "/dashboard.svg", http.StatusOK, "image/svg+xml", "<svg"},
		{http.MethodGet, "/index.html", http.StatusNotFound, "", ""},
		{http.MethodGet, "/dashboard.js.map", http.StatusNotFound, "", ""},
		{http.MethodPost, "/", http.StatusMethodNotAllowed, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
			res := rec.Result()
			if res.StatusCode != tt.status {
				t.Fatalf("status = %d, want %d", res.StatusCode, tt.status)
			}
			for name, want := range map[string]string{
				"Content-Security-Policy": dashboardCSP,
				"Cache-Control":           "no-store",
				"X-Content-Type-Options":  "nosniff",
			} {
				if got := res.Header.Get(name); got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
			if tt.status != http.StatusOK {
				if tt.method == http.MethodPost && res.Header.Get("Allow") != "GET, HEAD" {
					t.Errorf("Allow = %q, want %q", res.Header.Get("Allow"), "GET, HEAD")
				}
				return
			}
			if got := res.Header.Get("Content-Type"); got != tt.contentType {
				t.Errorf("Content-Type = %q, want %q", got, tt.contentType)
			}
			body := rec.Body.String()
			if tt.method == http.MethodHead {
				if body != "" {
					t.Errorf("HEAD answered with a body of %d bytes", len(body))
				}
				if res.Header.Get("Content-Length") == "" || res.Header.Get("Content-Length") == "0" {
					t.Errorf("HEAD Content-Length = %q, want the page's length", res.Header.Get("Content-Length"))
				}
				return
			}
			if !strings.Contains(body, tt.bodyHas) {
				t.Errorf("body does not contain %q", tt.bodyHas)
			}
		})
	}
}

func TestDashboardCSPIsStrict(t *testing.T) {
	directives := map[string]string{}
	for d := range strings.SplitSeq(dashboardCSP, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
		directives[name] = value
	}
	for name, want := range map[string]string{
		"default-src":     "'self'",
		"script-src":      "'self'",
		"style-src":       "'self'",
		"connect-src":     "'self'",
		"object-src":      "'none'",
		"frame-ancestors": "'none'",
	} {
		if got := directives[name]; got != want {
			t.Errorf("CSP %s = %q, want %q (CSP %q)", name, got, want, dashboardCSP)
		}
	}
	if strings.Contains(dashboardCSP, "unsafe") || strings.Contains(dashboardCSP, "*") {
		t.Errorf("CSP %q allows unsafe sources", dashboardCSP)
	}
}

func TestDashboardPathsMatchHandler(t *testing.T) {
	h := dashboardHandler()
	if !slices.Contains(dashboardPaths, "/") {
		t.Fatalf("dashboardPaths %q lacks /", dashboardPaths)
	}
	for _, p := range dashboardPaths {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p, nil))
		if rec.Code != http.StatusOK {
			t.Errorf("GET %s = %d, want 200: every path in dashboardPaths must be served", p, rec.Code)
		}
	}
	// Every asset the page loads must be mounted by the API.
	page := dashFetch(t, h, "/")
	for _, m := range regexp.MustCompile(`(?:src|href)="([^"]+)"`).FindAllStringSubmatch(page, -1) {
		if !slices.Contains(dashboardPaths, "/"+m[1]) {
			t.Errorf("the page loads %q, which is not in dashboardPaths %q", m[1], dashboardPaths)
		}
	}
}

// TestDashboardNoInlineCodeNoExternalResources checks what the CSP would
// otherwise break at run time, and that data never reaches the page as HTML.
func TestDashboardNoInlineCodeNoExternalResources(t *testing.T) {
	h := dashboardHandler()
	page := dashFetch(t, h, "/")
	js := dashFetch(t, h, "/dashboard.js")
	css := dashFetch(t, h, "/dashboard.css")
	tests := []struct {
		name, text string
		bad        *regexp.Regexp
	}{
		{"inline script", page, regexp.MustCompile(`<script(?:\s[^>]*)?>[^<\s]`)},
		{"script without src", page, regexp.MustCompile(`<script(?:\s(?:[^>s]|s[^r])*)?>`)},
		{"inline style element", page, regexp.MustCompile(`<style`)},
		{"style attribute", page, regexp.MustCompile(`\sstyle=`)},
		{"event handler attribute", page, regexp.MustCompile(`\son[a-z]+=`)},
		{"external URL in page", page, regexp.MustCompile(`(?:https?:)?//[a-z]`)},
		{"external URL in script", js, regexp.MustCompile(`https?://`)},
		{"external URL in style", css, regexp.MustCompile(`https?://|@import|url\(`)},
		{"HTML sink in script", js, regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function`)},
		{"absolute API path in script", js, regexp.MustCompile(`"/v1/`)},
	}
	for _, tt := range tests {
		if m := tt.bad.FindString(tt.text); m != "" {
			t.Errorf("%s: found %q", tt.name, m)
		}
	}
}

func dashFetch(t *testing.T, h http.Handler, path string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s = %d", path, rec.Code)
	}
	return rec.Body.String()
}

// dashSource answers one path of the fake API; n counts the requests to
// that path since the fake was last set, from 1.
type dashSource func(n int, now time.Time) (code int, body string)

// dashServer serves the dashboard in front of a fake of the read API it
// polls, until the test ends.
func dashServer(t *testing.T) (*dashFakeAPI, *httptest.Server) {
	fake := &dashFakeAPI{}
	dash := dashboardHandler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/") {
			fake.ServeHTTP(w, r)
			return
		}
		dash.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return fake, srv
}

// dashFakeAPI is a fake of the read API the dashboard polls. Answers are
// built per request, so times can be relative to now.
type dashFakeAPI struct {
	mu      sync.Mutex
	sources map[string]dashSource
	counts  map[string]int
}

func (f *dashFakeAPI) set(status, slotmap, ratelimit dashSource) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sources = map[string]dashSource{"/v1/status": status, "/v1/slotmap": slotmap, "/v1/ratelimit": ratelimit}
	f.counts = map[string]int{}
}

func (f *dashFakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	src := f.sources[r.URL.Path]
	f.counts[r.URL.Path]++
	n := f.counts[r.URL.Path]
	f.mu.Unlock()
	if src == nil || r.Method != http.MethodGet {
		http.Error(w, `{"error":"not in the fake"}`, http.StatusNotFound)
		return
	}
	code, body := src(n, time.Now())
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	io.WriteString(w, body)
}

func dashAnswer(code int, body string) dashSource {
	return func(int, time.Time) (int, string) { return code, body }
}

// dashFailAfter answers with ok for the first k requests, then with fail.
func dashFailAfter(k int, ok, fail dashSource) dashSource {
	return func(n int, now time.Time) (int, string) {
		if n <= k {
			return ok(n, now)
		}
		return fail(n, now)
	}
}

// dashFrozenReason has markup in it: the page must show it as text.
const dashFrozenReason = `INC-4711 <b>db failover</b> & cache refill`

// dashStatusDoc is a status document of pool payments-east, generation 4817,
// whose last reconcile was reconcileAge ago, with four slots (slot 2
// vacant), spare mc-9 and down node mc-7. mutate edits it before encoding.
func dashStatusDoc(reconcileAge time.Duration, mutate func(map[string]any)) dashSource {
	return func(_ int, now time.Time) (int, string) {
		ts := func(d time.Duration) string { return now.Add(-d).UTC().Format(time.RFC3339) }
		node := func(id, addr, az string, slot any, consul string, reachable bool, state string, absentSince any, flaps int, suppressed bool) map[string]any {
			return map[string]any{"id": id, "addr": addr, "az": az, "slot": slot, "consul": consul, "reachable": reachable,
				"state": state, "absent_since": absentSince, "flaps": flaps, "suppressed": suppressed}
		}
		doc := map[string]any{
			"pool":                   "payments-east",
			"leader":                 true,
			"leader_id":              "host-a:7070",
			"frozen":                 true,
			"freeze":                 map[string]any{"frozen": true, "reason": dashFrozenReason, "at": ts(7 * time.Minute), "by": "operator@10.0.0.5:53122"},
			"auto_frozen":            false,
			"auto_freeze_reason":     "",
			"generation":             4817,
			"last_reconcile_at":      ts(reconcileAge),
			"consul_reachable":       true,
			"hit_rate":               0.72,
			"boot_limit":             map[string]any{"mode": "manual", "limit": 250.0, "burst": 25},
			"discovery_fault":        false,
			"discovery_fault_reason": "",
			"replacements_blocked":   1,
			"last_error":             "",
			"vacant_slots":           1,
			"nodes": []any{
				node("mc-1", "10.0.1.1:11211", "a", 0, "present", true, "serving", nil, 0, false),
				node("mc-2", "10.0.1.2:11211", "b", 1, "absent", true, "held", ts(40*time.Second), 1, false),
				node("mc-4", "10.0.1.4:11211", "a", 3, "present", true, "serving", nil, 3, true),
				node("mc-9", "10.0.1.9:11211", "b", nil, "present", true, "spare", nil, 0, false),
				node("mc-7", "10.0.1.7:11211", "c", nil, "absent", false, "down", ts(3*time.Minute), 2, false),
			},
		}
		if mutate != nil {
			mutate(doc)
		}
		b, err := json.Marshal(doc)
		if err != nil {
			return http.StatusInternalServerError, `{"error":"fake: ` + err.Error() + `"}`
		}
		return http.StatusOK, string(b)
	}
}

const dashSlotMapDoc = `{"pool":"payments-east","num_slots":4,"generation":4817,"updated_at":"2026-11-29T13:00:00Z",
"slots":[{"slot":0,"node_id":"mc-1","addr":"10.0.1.1:11211","az":"a"},
{"slot":1,"node_id":"mc-2","addr":"10.0.1.2:11211","az":"b"},
{"slot":2,"node_id":"","addr":"","az":""},
{"slot":3,"node_id":"mc-4","addr":"10.0.1.4:11211","az":"a"}],
"spares":[{"node_id":"mc-9","addr":"10.0.1.9:11211","az":"b"}]}`

const dashRateLimitDoc = `{"mode":"manual","limit":250,"burst":25,"hit_rate":0.72,"floor":10,"ceiling":1000,
"updated_at":"2026-11-29T13:00:00Z","reason":"pinned to 250 by operator@10.0.0.5: database recovering",
"auto_limit":500,"auto_reason":"hit rate 0.72 below 0.80: cut from 1000 to 500"}`

func TestDashboardInChromium(t *testing.T) {
	bin := testenv.ChromiumBinary(t)
	fake, srv := dashServer(t)

	frozenPool := dashStatusDoc(45*time.Second, nil)
	tests := []struct {
		name   string
		status dashSource
		check  func(t *testing.T, d *dashtest.Node)
	}{
		{
			name:   "frozen pool",
			status: frozenPool,
			check: func(t *testing.T, d *dashtest.Node) {
				dashtest.WantText(t, d, "pool", "payments-east")
				dashtest.WantText(t, d, "generation", "4817")
				dashtest.WantContains(t, d, "leader", "yes", "host-a:7070")
				dashtest.WantShown(t, d, "frozen-banner", true)
				dashtest.WantText(t, d, "frozen-reason", dashFrozenReason)
				if kids := d.ByID(t, "frozen-reason").Elements(); len(kids) != 0 {
					t.Errorf("the freeze reason became markup (%d elements): data must be set as text", len(kids))
				}
				dashtest.WantContains(t, d, "frozen-banner", "operator@10.0.0.5:53122", "UTC")
				dashtest.WantShown(t, d, "autofrozen-banner", false)
				dashtest.WantShown(t, d, "fault-banner", false)
				dashtest.WantShown(t, d, "error", false)
				// The last reconcile was 45 s ago: older than 10 s is red.
				if rec := d.ByID(t, "reconcile"); !rec.HasClass("bad") || !strings.Contains(rec.Text(), "s ago") {
					t.Errorf("#reconcile = %q class %q, want an age in seconds marked bad", rec.Text(), rec.Attrs["class"])
				}

				rows := d.ByID(t, "slots").ElementsNamed("tr")
				if len(rows) != 4 {
					t.Fatalf("#slots has %d rows, want 4:\n%s", len(rows), d.ByID(t, "slots").Text())
				}
				for i, tr := range rows {
					if got := tr.Attrs["data-slot"]; got != fmt.Sprint(i) {
						t.Errorf("row %d data-slot = %q, want %d", i, got, i)
					}
					if vacant := tr.HasClass("vacant"); vacant != (i == 2) {
						t.Errorf("row %d (%q) vacant = %v, want %v", i, tr.Text(), vacant, i == 2)
					}
				}
				for _, c := range []struct {
					row  int
					want []string
				}{
					{0, []string{"mc-1", "10.0.1.1:11211", "serving", "yes", "present"}},
					{1, []string{"mc-2", "held", "absent"}},
					{2, []string{"VACANT"}},
					{3, []string{"mc-4", "serving", "3", "suppressed"}},
				} {
					for _, w := range c.want {
						if !strings.Contains(rows[c.row].Text(), w) {
							t.Errorf("slot row %d = %q, want it to show %q", c.row, rows[c.row].Text(), w)
						}
					}
				}
				dashtest.WantContains(t, d, "spares", "mc-9", "10.0.1.9:11211", "spare")
				dashtest.WantContains(t, d, "down", "mc-7", "10.0.1.7:11211")
				dashtest.WantContains(t, d, "bootlimit", "MANUAL", "250 boots/s", "25", "72.0 %", "database recovering",
					"500 boots/s", "cut from 1000 to 500")
				dashtest.WantShown(t, d, "bl-auto-row", true)
			},
		},
		{
			name: "auto-frozen, discovery fault, no leader",
			status: dashStatusDoc(time.Second, func(m map[string]any) {
				m["frozen"], m["freeze"] = false, nil
				m["leader"], m["leader_id"] = false, ""
				m["auto_frozen"], m["auto_freeze_reason"] = true, "3 of 4 serving nodes absent, more than 0.25"
				m["discovery_fault"], m["discovery_fault_reason"] = true, "consul listed 0 instances, previously 4"
				m["consul_reachable"] = false
				m["last_reconcile_at"] = nil
			}),
			check: func(t *testing.T, d *dashtest.Node) {
				dashtest.WantShown(t, d, "frozen-banner", false)
				dashtest.WantShown(t, d, "autofrozen-banner", true)
				dashtest.WantContains(t, d, "autofrozen-banner", "3 of 4 serving nodes absent")
				dashtest.WantShown(t, d, "fault-banner", true)
				dashtest.WantContains(t, d, "fault-banner", "consul listed 0 instances, previously 4")
				dashtest.WantContains(t, d, "leader", "NO LEADER")
				dashtest.WantContains(t, d, "consul", "UNREACHABLE")
				if rec := d.ByID(t, "reconcile"); !rec.HasClass("bad") || rec.Text() != "never" {
					t.Errorf("#reconcile = %q class %q, want \"never\" marked bad", rec.Text(), rec.Attrs["class"])
				}
			},
		},
		{
			name:   "status fails",
			status: dashAnswer(http.StatusInternalServerError, `{"error":"the loop is wedged"}`),
			check: func(t *testing.T, d *dashtest.Node) {
				dashtest.WantShown(t, d, "error", true)
				dashtest.WantContains(t, d, "error", "cannot reach mcrib", "v1/status", "HTTP 500", "the loop is wedged")
				dashtest.WantShown(t, d, "frozen-banner", false)
				dashtest.WantText(t, d, "pool", "—")
				// The slot map still answers: its rows are shown, without node states.
				if rows := d.ByID(t, "slots").ElementsNamed("tr"); len(rows) != 4 {
					t.Errorf("#slots has %d rows, want 4", len(rows))
				}
			},
		},
		{
			name:   "status fails after one answer",
			status: dashFailAfter(1, frozenPool, dashAnswer(http.StatusInternalServerError, `{"error":"the loop is wedged"}`)),
			check: func(t *testing.T, d *dashtest.Node) {
				dashtest.WantShown(t, d, "error", true)
				dashtest.WantContains(t, d, "error", "cannot reach mcrib", "HTTP 500", "the loop is wedged", "last good answer")
				// The old answer stays on screen, marked stale.
				dashtest.WantText(t, d, "pool", "payments-east")
				dashtest.WantShown(t, d, "frozen-banner", true)
				for id, stale := range map[string]bool{"band": true, "banners": true, "slots-panel": true, "bootlimit-panel": false} {
					if got := d.ByID(t, id).HasClass("stale"); got != stale {
						t.Errorf("#%s stale = %v, want %v", id, got, stale)
					}
				}
			},
		},
	}
	shots := os.Getenv("MCRIB_SCREENSHOT") != ""
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake.set(tt.status, dashAnswer(http.StatusOK, dashSlotMapDoc), dashAnswer(http.StatusOK, dashRateLimitDoc))
			out := dashtest.Chromium(t, bin, "--dump-dom", srv.URL+"/")
			tt.check(t, dashtest.ParseDOM(t, out))
			if !shots {
				return
			}
			// The first case is the screenshot to look at; the others are
			// kept next to it.
			shot := "/tmp/mcrib-dashboard.png"
			if i > 0 {
				shot = fmt.Sprintf("/tmp/mcrib-dashboard-%d.png", i)
			}
			fake.set(tt.status, dashAnswer(http.StatusOK, dashSlotMapDoc), dashAnswer(http.StatusOK, dashRateLimitDoc))
			dashtest.Screenshot(t, bin, srv.URL+"/", shot, "1280,900")
		})
	}
}
