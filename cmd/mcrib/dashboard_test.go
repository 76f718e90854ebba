package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

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

	frozenPool := dashStatusDoc(45*time.Second, nil)
	tests := []struct {
		name   string
		status dashSource
		check  func(t *testing.T, d *dashNode)
	}{
		{
			name:   "frozen pool",
			status: frozenPool,
			check: func(t *testing.T, d *dashNode) {
				dashWantText(t, d, "pool", "payments-east")
				dashWantText(t, d, "generation", "4817")
				dashWantContains(t, d, "leader", "yes", "host-a:7070")
				dashWantShown(t, d, "frozen-banner", true)
				dashWantText(t, d, "frozen-reason", dashFrozenReason)
				if kids := d.byID(t, "frozen-reason").elements(); len(kids) != 0 {
					t.Errorf("the freeze reason became markup (%d elements): data must be set as text", len(kids))
				}
				dashWantContains(t, d, "frozen-banner", "operator@10.0.0.5:53122", "UTC")
				dashWantShown(t, d, "autofrozen-banner", false)
				dashWantShown(t, d, "fault-banner", false)
				dashWantShown(t, d, "error", false)
				// The last reconcile was 45 s ago: older than 10 s is red.
				if rec := d.byID(t, "reconcile"); !rec.hasClass("bad") || !strings.Contains(rec.text(), "s ago") {
					t.Errorf("#reconcile = %q class %q, want an age in seconds marked bad", rec.text(), rec.attrs["class"])
				}

				rows := d.byID(t, "slots").elementsNamed("tr")
				if len(rows) != 4 {
					t.Fatalf("#slots has %d rows, want 4:\n%s", len(rows), d.byID(t, "slots").text())
				}
				for i, tr := range rows {
					if got := tr.attrs["data-slot"]; got != fmt.Sprint(i) {
						t.Errorf("row %d data-slot = %q, want %d", i, got, i)
					}
					if vacant := tr.hasClass("vacant"); vacant != (i == 2) {
						t.Errorf("row %d (%q) vacant = %v, want %v", i, tr.text(), vacant, i == 2)
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
						if !strings.Contains(rows[c.row].text(), w) {
							t.Errorf("slot row %d = %q, want it to show %q", c.row, rows[c.row].text(), w)
						}
					}
				}
				dashWantContains(t, d, "spares", "mc-9", "10.0.1.9:11211", "spare")
				dashWantContains(t, d, "down", "mc-7", "10.0.1.7:11211")
				dashWantContains(t, d, "bootlimit", "MANUAL", "250 boots/s", "25", "72.0 %", "database recovering",
					"500 boots/s", "cut from 1000 to 500")
				dashWantShown(t, d, "bl-auto-row", true)
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
			check: func(t *testing.T, d *dashNode) {
				dashWantShown(t, d, "frozen-banner", false)
				dashWantShown(t, d, "autofrozen-banner", true)
				dashWantContains(t, d, "autofrozen-banner", "3 of 4 serving nodes absent")
				dashWantShown(t, d, "fault-banner", true)
				dashWantContains(t, d, "fault-banner", "consul listed 0 instances, previously 4")
				dashWantContains(t, d, "leader", "NO LEADER")
				dashWantContains(t, d, "consul", "UNREACHABLE")
				if rec := d.byID(t, "reconcile"); !rec.hasClass("bad") || rec.text() != "never" {
					t.Errorf("#reconcile = %q class %q, want \"never\" marked bad", rec.text(), rec.attrs["class"])
				}
			},
		},
		{
			name:   "status fails",
			status: dashAnswer(http.StatusInternalServerError, `{"error":"the loop is wedged"}`),
			check: func(t *testing.T, d *dashNode) {
				dashWantShown(t, d, "error", true)
				dashWantContains(t, d, "error", "cannot reach mcrib", "v1/status", "HTTP 500", "the loop is wedged")
				dashWantShown(t, d, "frozen-banner", false)
				dashWantText(t, d, "pool", "—")
				// The slot map still answers: its rows are shown, without node states.
				if rows := d.byID(t, "slots").elementsNamed("tr"); len(rows) != 4 {
					t.Errorf("#slots has %d rows, want 4", len(rows))
				}
			},
		},
		{
			name:   "status fails after one answer",
			status: dashFailAfter(1, frozenPool, dashAnswer(http.StatusInternalServerError, `{"error":"the loop is wedged"}`)),
			check: func(t *testing.T, d *dashNode) {
				dashWantShown(t, d, "error", true)
				dashWantContains(t, d, "error", "cannot reach mcrib", "HTTP 500", "the loop is wedged", "last good answer")
				// The old answer stays on screen, marked stale.
				dashWantText(t, d, "pool", "payments-east")
				dashWantShown(t, d, "frozen-banner", true)
				for id, stale := range map[string]bool{"band": true, "banners": true, "slots-panel": true, "bootlimit-panel": false} {
					if got := d.byID(t, id).hasClass("stale"); got != stale {
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
			out := dashRunChromium(t, bin, "--dump-dom", srv.URL+"/")
			tt.check(t, dashParseDOM(t, out))
			if !shots {
				return
			}
			// The first case is the screenshot to look at; the others are
			// kept next to it.
			shot := "/tmp/mcrib-dashboard.png"
			if i > 0 {
				shot = fmt.Sprintf("/tmp/mcrib-dashboard-%d.png", i)
			}
			os.Remove(shot)
			fake.set(tt.status, dashAnswer(http.StatusOK, dashSlotMapDoc), dashAnswer(http.StatusOK, dashRateLimitDoc))
			dashRunChromium(t, bin, "--screenshot="+shot, "--window-size=1280,900", srv.URL+"/")
			if fi, err := os.Stat(shot); err != nil || fi.Size() == 0 {
				t.Fatalf("no screenshot at %s: %v", shot, err)
			}
			t.Logf("screenshot of %q written to %s", tt.name, shot)
		})
	}
}

// dashRunChromium runs headless chromium with args after the common flags and
// returns its standard output. It runs in its own process group, which is
// killed when it returns, on timeout (60 s) and on cleanup.
func dashRunChromium(t *testing.T, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	all := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--virtual-time-budget=5000",
	}, args...)
	cmd := exec.CommandContext(ctx, bin, all...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	pgid := cmd.Process.Pid
	// Cleanups run last-in first-out: this one runs before the user data
	// directory is removed.
	t.Cleanup(func() { dashKillGroup(t, pgid) })
	err := cmd.Wait()
	dashKillGroup(t, pgid)
	if ctx.Err() != nil {
		t.Fatalf("chromium did not finish within 60 s; stderr:\n%s", dashTail(stderr.String(), 4000))
	}
	if err != nil {
		t.Fatalf("chromium failed: %v; stderr:\n%s", err, dashTail(stderr.String(), 4000))
	}
	return stdout.String()
}

// dashKillGroup kills process group pgid and waits up to 5 s until none of
// its processes runs any more. Zombies count as gone: once chromium itself
// is reaped, its orphaned children are init's to reap.
func dashKillGroup(t *testing.T, pgid int) {
	t.Helper()
	if err := syscall.Kill(-pgid, syscall.SIGKILL); errors.Is(err, syscall.ESRCH) {
		return
	}
	deadline := time.Now().Add(5 * time.Second)
	for dashGroupRuns(pgid) {
		if time.Now().After(deadline) {
			t.Logf("chromium process group %d still runs 5 s after SIGKILL", pgid)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// dashGroupRuns reports whether a process of group pgid is alive and not a
// zombie, reading /proc; without /proc it asks kill(2).
func dashGroupRuns(pgid int) bool {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil || len(stats) == 0 {
		return syscall.Kill(-pgid, 0) == nil
	}
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the process ended meanwhile
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(b[i+1:]))
		if len(fields) < 3 || fields[0] == "Z" || fields[0] == "X" {
			continue
		}
		if fields[2] == strconv.Itoa(pgid) {
			return true
		}
	}
	return false
}

func dashTail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// dashNode is an element or text node of a dumped DOM. Text nodes have an
// empty tag.
type dashNode struct {
	tag      string
	attrs    map[string]string
	data     string
	children []*dashNode
}

// dashParseDOM parses chromium's --dump-dom output with encoding/xml in its
// lenient HTML mode, which is enough for the page's own markup.
func dashParseDOM(t *testing.T, s string) *dashNode {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(s))
	dec.Strict = false
	dec.AutoClose = xml.HTMLAutoClose
	dec.Entity = xml.HTMLEntity
	root := &dashNode{tag: "#document"}
	stack := []*dashNode{root}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("parsing the dumped DOM: %v\n%s", err, dashTail(s, 4000))
		}
		top := stack[len(stack)-1]
		switch tok := tok.(type) {
		case xml.StartElement:
			n := &dashNode{tag: strings.ToLower(tok.Name.Local), attrs: map[string]string{}}
			for _, a := range tok.Attr {
				name := a.Name.Local
				if a.Name.Space != "" {
					name = a.Name.Space + ":" + name
				}
				n.attrs[strings.ToLower(name)] = a.Value
			}
			top.children = append(top.children, n)
			stack = append(stack, n)
		case xml.EndElement:
			name := strings.ToLower(tok.Name.Local)
			for i := len(stack) - 1; i > 0; i-- {
				if stack[i].tag == name {
					stack = stack[:i]
					break
				}
			}
		case xml.CharData:
			top.children = append(top.children, &dashNode{data: string(tok)})
		}
	}
	if root.find(func(n *dashNode) bool { return n.tag == "body" }) == nil {
		t.Fatalf("the dumped DOM has no body:\n%s", dashTail(s, 4000))
	}
	return root
}

func (n *dashNode) find(match func(*dashNode) bool) *dashNode {
	for _, c := range n.children {
		if c.tag != "" && match(c) {
			return c
		}
		if f := c.find(match); f != nil {
			return f
		}
	}
	return nil
}

func (n *dashNode) byID(t *testing.T, id string) *dashNode {
	t.Helper()
	e := n.find(func(c *dashNode) bool { return c.attrs["id"] == id })
	if e == nil {
		t.Fatalf("the page has no element #%s", id)
	}
	return e
}

// elements returns the element children of n.
func (n *dashNode) elements() []*dashNode {
	var out []*dashNode
	for _, c := range n.children {
		if c.tag != "" {
			out = append(out, c)
		}
	}
	return out
}

// elementsNamed returns the element children of n with tag.
func (n *dashNode) elementsNamed(tag string) []*dashNode {
	var out []*dashNode
	for _, c := range n.elements() {
		if c.tag == tag {
			out = append(out, c)
		}
	}
	return out
}

// text is the text content of n with runs of white space collapsed.
func (n *dashNode) text() string {
	var b strings.Builder
	var walk func(*dashNode)
	walk = func(m *dashNode) {
		if m.tag == "" {
			b.WriteString(m.data)
		}
		for _, c := range m.children {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

func (n *dashNode) hasClass(c string) bool {
	return slices.Contains(strings.Fields(n.attrs["class"]), c)
}

// shown reports whether n lacks the hidden attribute, which is how the
// page hides its banners and optional rows.
func (n *dashNode) shown() bool {
	_, hidden := n.attrs["hidden"]
	return !hidden
}

func dashWantText(t *testing.T, d *dashNode, id, want string) {
	t.Helper()
	if got := d.byID(t, id).text(); got != want {
		t.Errorf("#%s = %q, want %q", id, got, want)
	}
}

func dashWantContains(t *testing.T, d *dashNode, id string, wants ...string) {
	t.Helper()
	got := d.byID(t, id).text()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("#%s = %q, want it to contain %q", id, got, w)
		}
	}
}

func dashWantShown(t *testing.T, d *dashNode, id string, want bool) {
	t.Helper()
	if got := d.byID(t, id).shown(); got != want {
		t.Errorf("#%s shown = %v, want %v (text %q)", id, got, want, d.byID(t, id).text())
	}
}
