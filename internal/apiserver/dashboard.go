package apiserver

import (
	_ "embed"
	"io"
	"net/http"
	"strconv"
)

// The dashboard is a static page plus its script, style sheet and icon, all
// embedded in the binary; the script polls the read API from the browser.
var (
	//go:embed dashboard.html
	dashboardHTML string
	//go:embed dashboard.js
	dashboardJS string
	//go:embed dashboard-ops.js
	dashboardOpsJS string
	//go:embed dashboard.css
	dashboardCSS string
	//go:embed dashboard.svg
	dashboardSVG string
)

// dashboardPaths are the paths the dashboard serves; the API mounts each of
// them for GET and HEAD and hands the request to dashboardHandler.
var dashboardPaths = []string{"/", "/dashboard.js", "/dashboard-ops.js", "/dashboard.css", "/dashboard.svg"}

// dashboardCSP is the Content-Security-Policy of every dashboard answer:
// scripts, styles, images and fetches from the same origin only, no inline
// code, no plugins, no forms, and no framing by other sites.
const dashboardCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// dashboardAsset is one embedded file of the dashboard.
type dashboardAsset struct {
	contentType string
	body        string
}

// dashboardHandler returns the handler of the operator dashboard: the page
// at "/" and its assets at the other dashboardPaths. Every answer carries
// Cache-Control no-store, a strict Content-Security-Policy and nosniff. A
// path outside dashboardPaths is 404, a method other than GET or HEAD 405.
// The handler is safe for concurrent use.
func dashboardHandler() http.Handler {
	assets := map[string]dashboardAsset{
		"/":                 {"text/html; charset=utf-8", dashboardHTML},
		"/dashboard.js":     {"text/javascript; charset=utf-8", dashboardJS},
		"/dashboard-ops.js": {"text/javascript; charset=utf-8", dashboardOpsJS},
		"/dashboard.css":    {"text/css; charset=utf-8", dashboardCSS},
		"/dashboard.svg":    {"image/svg+xml", dashboardSVG},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Cache-Control", "no-store")
		h.Set("Content-Security-Policy", dashboardCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		a, ok := assets[r.URL.Path]
		if !ok {
			http.Error(w, "there is no "+r.URL.Path+" on the mcrib dashboard", http.StatusNotFound)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, r.URL.Path+" takes GET or HEAD", http.StatusMethodNotAllowed)
			return
		}
		h.Set("Content-Type", a.contentType)
		h.Set("Content-Length", strconv.Itoa(len(a.body)))
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			io.WriteString(w, a.body)
		}
	})
}
