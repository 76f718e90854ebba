package apiserver

import (
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/mcrib/mcrib/mcribapi"
)

// route is one route of the API: a method and a ServeMux pattern, and the
// handler that answers them.
type route struct {
	method, pattern string
	h               handler
}

// The patterns of the routes that carry a name, read by the handlers with
// r.PathValue: a zone is the whole rest of the path (a '/' in it is the
// handler's 400, none is its 404), a node ID one segment.
const (
	drainZonePattern   = "/v1/drain/{zone...}"
	nodeReplacePattern = "/v1/nodes/{id}/replace"
)

// routes returns the API's routes (docs/api.md, "Endpoints"). GET also
// answers HEAD.
func (a *Server) routes() []route {
	rs := []route{
		{http.MethodGet, "/v1/slotmap", a.getSlotMap},
		{http.MethodGet, "/v1/status", a.getStatus},
		{http.MethodPut, "/v1/freeze", a.auth(a.putFreeze)},
		{http.MethodDelete, "/v1/freeze", a.auth(a.deleteFreeze)},
		{http.MethodGet, "/v1/ratelimit", a.getRateLimit},
		{http.MethodPut, "/v1/ratelimit", a.auth(a.putRateLimit)},
		{http.MethodPost, "/v1/boot", a.postBoot},
		{http.MethodGet, "/healthz", a.healthz},
		{http.MethodGet, "/readyz", a.readyz},
		{http.MethodGet, "/metrics", a.serveMetrics},
		{http.MethodGet, "/v1/events", a.getEvents},
		{http.MethodGet, "/v1/history", a.getHistory},
		{http.MethodGet, "/v1/drain", a.getDrains},
		{http.MethodPut, drainZonePattern, a.auth(a.putDrain)},
		{http.MethodDelete, drainZonePattern, a.auth(a.deleteDrain)},
		{http.MethodPost, nodeReplacePattern, a.auth(a.postReplace)},
		{http.MethodGet, "/v1/resize", a.getResize},
		{http.MethodPut, "/v1/resize", a.auth(a.putResize)},
		{http.MethodDelete, "/v1/resize", a.auth(a.deleteResize)},
		{http.MethodGet, "/v1/roll", a.getRoll},
		{http.MethodPut, "/v1/roll", a.auth(a.putRoll)},
		{http.MethodDelete, "/v1/roll", a.auth(a.deleteRoll)},
		{http.MethodPost, "/v1/whatif", a.postWhatIf},
	}
	dash := dashboardHandler()
	serveDash := func(w http.ResponseWriter, r *http.Request) error {
		dash.ServeHTTP(w, r)
		return nil
	}
	for _, p := range dashboardPaths {
		if p == "/" {
			p = "/{$}"
		}
		rs = append(rs, route{http.MethodGet, p, serveDash})
	}
	return rs
}

// mountRoutes builds the server's ServeMux: each route under its
// "METHOD pattern"; each pattern without a method as the 405 of the
// methods it does not take (with Allow); and "/" as the 404 of every path
// no pattern takes (unrouted).
func (a *Server) mountRoutes() {
	a.mux = http.NewServeMux()
	a.byRoute = map[string]handler{}
	a.allow = map[string][]string{}
	var patterns []string
	for _, rt := range a.routes() {
		a.mux.Handle(rt.method+" "+rt.pattern, a.serve(rt.h))
		a.byRoute[rt.method+" "+rt.pattern] = rt.h
		if a.allow[rt.pattern] == nil {
			patterns = append(patterns, rt.pattern)
		}
		a.allow[rt.pattern] = append(a.allow[rt.pattern], rt.method)
	}
	for _, p := range patterns {
		slices.Sort(a.allow[p])
		a.mux.Handle(p, a.serve(notAllowed(a.allow[p])))
	}
	a.mux.Handle("/", a.serve(a.unrouted))
}

// serve turns h into an http.Handler that writes h's error as the JSON
// error body (writeError), Consul's addresses taken out.
func (a *Server) serve(h handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			writeError(w, a.scrub.err(err))
		}
	})
}

// notAllowed returns the handler of a known path called with a method
// other than allow's: 405 with an Allow header.
func notAllowed(allow []string) handler {
	methods := strings.Join(allow, ", ")
	return func(w http.ResponseWriter, r *http.Request) error {
		w.Header().Set("Allow", methods)
		return mcribapi.Errorf(http.StatusMethodNotAllowed, "%s does not take %s; it takes %s", r.URL.Path, r.Method, methods)
	}
}

// unrouted answers a path no pattern takes, and every path that is not
// canonical. A path under /v1/drain/, or under /v1/nodes/ ending in
// /replace, still names a zone or a node however it is written ("//", a
// "." segment, a '/' in a node ID): it goes to that route, whose handler
// refuses the name it cannot take. Any other path is 404.
func (a *Server) unrouted(w http.ResponseWriter, r *http.Request) error {
	pattern := namedRoute(r)
	if pattern == "" {
		return mcribapi.Errorf(http.StatusNotFound, "there is no %s in the mcrib API", r.URL.Path)
	}
	h, ok := a.byRoute[r.Method+" "+pattern]
	if !ok && r.Method == http.MethodHead {
		h, ok = a.byRoute[http.MethodGet+" "+pattern]
	}
	if !ok {
		return notAllowed(a.allow[pattern])(w, r)
	}
	return h(w, r)
}

// namedRoute returns the pattern of the route whose name r's path carries
// however it is written, with the name set as r's path value, or "".
func namedRoute(r *http.Request) string {
	p := r.URL.Path
	if zone, ok := strings.CutPrefix(p, "/v1/drain/"); ok {
		r.SetPathValue("zone", zone)
		return drainZonePattern
	}
	if rest, ok := strings.CutPrefix(p, "/v1/nodes/"); ok {
		if id, ok := strings.CutSuffix(rest, "/replace"); ok {
			r.SetPathValue("id", id)
			return nodeReplacePattern
		}
	}
	return ""
}

// canonicalPath reports whether ServeMux takes r's path as it is: a path
// it would redirect to its cleaned form ("//", "." and ".." segments, no
// leading '/') is not canonical.
func canonicalPath(r *http.Request) bool {
	p := r.URL.EscapedPath()
	if p == "" || p[0] != '/' {
		return false
	}
	clean := path.Clean(p)
	if strings.HasSuffix(p, "/") && clean != "/" {
		clean += "/"
	}
	return clean == p
}

// routeName names r's route for a trace: its pattern as docs/api.md
// writes it ("/v1/drain/{zone}", "/" for the dashboard's page), or
// "other" for a path the API does not know.
func (a *Server) routeName(r *http.Request) string {
	var pattern string
	if canonicalPath(r) {
		_, pattern = a.mux.Handler(r)
		if _, p, ok := strings.Cut(pattern, " "); ok {
			pattern = p
		}
	}
	if pattern == "" || pattern == "/" {
		pattern = namedRoute(r.Clone(r.Context()))
	}
	if pattern == "" {
		return "other"
	}
	return strings.NewReplacer("{$}", "", "...}", "}").Replace(pattern)
}
