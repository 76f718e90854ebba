package apiserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/mcribapi"
)

// countingPlane is a control plane that counts the changes it is asked
// for.
type countingPlane struct {
	*fakePlane
	mu      sync.Mutex
	changes int
}

func (c *countingPlane) Freeze(context.Context, string, string) (mcribapi.FreezeDoc, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.changes++
	return mcribapi.FreezeDoc{Frozen: true}, nil
}

func (c *countingPlane) Unfreeze(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.changes++
	return nil
}

// browserFront is the operator server's handler, as Handler builds it,
// over counting fakes.
type browserFront struct {
	h     http.Handler
	plane *countingPlane
	boot  *countingBoot
}

// newBrowserFront returns the front of a server with opts, listening on
// opts.Listen and advertised as it.
func newBrowserFront(t *testing.T, opts Options) browserFront {
	t.Helper()
	plane := &countingPlane{fakePlane: newFakePlane(testSlotMap(t, 1))}
	boot := &countingBoot{}
	opts.Loop, opts.Boot, opts.Bound, opts.ID = plane, boot, opts.Listen, opts.Listen
	opts.Leader = func() (bool, string) { return true, opts.Listen }
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return browserFront{h: a.Handler(), plane: plane, boot: boot}
}

// request is one call to the front.
type request struct {
	method, path, host, body string
	header                   map[string]string
}

func (f browserFront) do(r request) *httptest.ResponseRecorder {
	req := httptest.NewRequest(r.method, "http://"+r.host+r.path, strings.NewReader(r.body))
	req.Host = r.host
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	return rec
}

// noCORS fails when an answer carries an Access-Control-Allow-* header.
func noCORS(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	for name := range rec.Header() {
		if strings.HasPrefix(http.CanonicalHeaderKey(name), "Access-Control-Allow-") {
			t.Errorf("the answer carries %s: %q", name, rec.Header().Get(name))
		}
	}
}

// TestBrowserRule: a mutating call is 403 with Sec-Fetch-Site cross-site
// or same-site, with an Origin whose scheme, host or port differ from the
// request's own (Origin: null always differs), or, on a loopback --listen,
// with a Host that is neither a loopback address nor localhost; reads
// pass; programs, the CLI and the dashboard (same origin) pass; a refused
// call changes nothing and admits nothing; no Access-Control-Allow-*
// header is ever sent.
func TestBrowserRule(t *testing.T) {
	const loop = "127.0.0.1:7070"
	freeze := func(host string, header map[string]string) request {
		if header == nil {
			header = map[string]string{}
		}
		header["Content-Type"] = "application/json"
		return request{method: http.MethodPut, path: "/v1/freeze", host: host, body: `{"reason":"r"}`, header: header}
	}
	for _, tc := range []struct {
		name   string
		opts   Options
		req    request
		refuse bool
	}{
		{"a program: no browser headers", Options{Listen: loop}, freeze(loop, nil), false},
		{"Sec-Fetch-Site cross-site", Options{Listen: loop}, freeze(loop, map[string]string{"Sec-Fetch-Site": "cross-site"}), true},
		{"Sec-Fetch-Site same-site", Options{Listen: loop}, freeze(loop, map[string]string{"Sec-Fetch-Site": "same-site"}), true},
		{"Sec-Fetch-Site in capitals", Options{Listen: loop}, freeze(loop, map[string]string{"Sec-Fetch-Site": "Cross-Site"}), true},
		{"Sec-Fetch-Site same-origin (the dashboard)", Options{Listen: loop}, freeze(loop, map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://" + loop}), false},
		{"Sec-Fetch-Site none (typed by the user)", Options{Listen: loop}, freeze(loop, map[string]string{"Sec-Fetch-Site": "none"}), false},
		{"Origin the same", Options{Listen: loop}, freeze(loop, map[string]string{"Origin": "http://" + loop}), false},
		{"Origin the same, host in capitals", Options{Listen: "localhost:7070"}, freeze("localhost:7070", map[string]string{"Origin": "http://LOCALHOST:7070"}), false},
		{"Origin null", Options{Listen: loop}, freeze(loop, map[string]string{"Origin": "null"}), true},
		{"Origin of another scheme", Options{Listen: loop}, freeze(loop, map[string]string{"Origin": "https://" + loop}), true},
		{"Origin of another port", Options{Listen: loop}, freeze(loop, map[string]string{"Origin": "http://127.0.0.1:7071"}), true},
		{"Origin without a port (80)", Options{Listen: loop}, freeze(loop, map[string]string{"Origin": "http://127.0.0.1"}), true},
		{"Origin of another host", Options{Listen: loop}, freeze(loop, map[string]string{"Origin": "http://evil.example:7070"}), true},
		{"Origin localhost for Host 127.0.0.1", Options{Listen: loop}, freeze(loop, map[string]string{"Origin": "http://localhost:7070"}), true},
		{"Origin with a path", Options{Listen: loop}, freeze(loop, map[string]string{"Origin": "http://" + loop + "/x"}), true},
		{"Origin empty", Options{Listen: loop}, freeze(loop, map[string]string{"Origin": ""}), false}, // an empty header is no header
		{"DNS rebinding: a page's own origin on a rebound name", Options{Listen: loop},
			freeze("rebound.example:7070", map[string]string{"Origin": "http://rebound.example:7070"}), true},
		{"DNS rebinding without Origin", Options{Listen: loop}, freeze("rebound.example:7070", nil), true},
		{"DNS rebinding with a token", Options{Listen: loop, Token: "t"},
			freeze("rebound.example:7070", map[string]string{"Authorization": "Bearer t"}), true},
		{"Host localhost", Options{Listen: loop, Token: "t"}, freeze("localhost:7070", map[string]string{"Authorization": "Bearer t"}), false},
		{"Host [::1]", Options{Listen: "[::1]:7070"}, freeze("[::1]:7070", nil), false},
		{"Host 127.0.0.2", Options{Listen: loop, Token: "t"}, freeze("127.0.0.2:7070", map[string]string{"Authorization": "Bearer t"}), false},
		{"a network listen takes its own names", Options{Listen: "10.0.0.5:7070", Token: "t"},
			freeze("mcrib.internal:7070", map[string]string{"Authorization": "Bearer t"}), false},
		{"a network listen, a page of another origin", Options{Listen: "10.0.0.5:7070", Token: "t"},
			freeze("mcrib.internal:7070", map[string]string{"Authorization": "Bearer t", "Origin": "http://evil.example"}), true},
		{"DELETE from another site", Options{Listen: loop}, request{method: http.MethodDelete, path: "/v1/freeze", host: loop,
			header: map[string]string{"Origin": "http://evil.example"}}, true},
		{"a text/plain POST of a boot from another site", Options{Listen: loop}, request{method: http.MethodPost, path: "/v1/boot", host: loop,
			body: `{}`, header: map[string]string{"Content-Type": "text/plain", "Sec-Fetch-Site": "cross-site"}}, true},
		{"a boot from another origin", Options{Listen: loop}, request{method: http.MethodPost, path: "/v1/boot", host: loop,
			header: map[string]string{"Origin": "http://evil.example"}}, true},
		{"a replace from another site", Options{Listen: loop}, request{method: http.MethodPost, path: "/v1/nodes/mc-1/replace", host: loop,
			body: `{"reason":"r"}`, header: map[string]string{"Content-Type": "text/plain", "Sec-Fetch-Site": "cross-site"}}, true},
		{"a read from another site passes", Options{Listen: loop}, request{method: http.MethodGet, path: "/v1/status", host: loop,
			header: map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newBrowserFront(t, tc.opts)
			rec := f.do(tc.req)
			noCORS(t, rec)
			if !tc.refuse {
				if rec.Code == http.StatusForbidden {
					t.Fatalf("refused: %s", rec.Body)
				}
				return
			}
			if rec.Code != http.StatusForbidden {
				t.Fatalf("answered %d %s, want 403", rec.Code, rec.Body)
			}
			errorSentence(t, rec)
			if f.plane.changes != 0 || f.boot.pool+f.boot.shares != 0 {
				t.Errorf("a refused call changed %d things and admitted %d boots", f.plane.changes, f.boot.pool+f.boot.shares)
			}
		})
	}
}

// TestBrowserRuleOverTLS: a server that serves https takes an https
// Origin of its own and refuses the http one.
func TestBrowserRuleOverTLS(t *testing.T) {
	cert, _ := testenv.SelfSignedCert(t, t.TempDir())
	for origin, refuse := range map[string]bool{"https://127.0.0.1:7443": false, "http://127.0.0.1:7443": true, "https://127.0.0.1": true} {
		f := newBrowserFront(t, Options{Listen: "127.0.0.1:7443", Token: "t", TLSCert: cert})
		rec := f.do(request{method: http.MethodDelete, path: "/v1/freeze", host: "127.0.0.1:7443",
			header: map[string]string{"Authorization": "Bearer t", "Origin": origin}})
		if (rec.Code == http.StatusForbidden) != refuse {
			t.Errorf("Origin %s: %d %s, want refused %v", origin, rec.Code, rec.Body, refuse)
		}
	}
}

// TestChecksInOrder: a call that breaks every rule is refused by the
// first in the order 403, 401, 413, 415, 400; mending each in turn
// reveals the next; none of the refusals changes anything.
func TestChecksInOrder(t *testing.T) {
	const host = "127.0.0.1:7070"
	big := `{"reason":"` + strings.Repeat("y", 70<<10) + `"}`
	steps := []struct {
		name string
		req  request
		want int
	}{
		{"all wrong", request{body: big, header: map[string]string{"Sec-Fetch-Site": "cross-site", "Content-Type": "text/plain"}}, http.StatusForbidden},
		{"no token", request{body: big, header: map[string]string{"Content-Type": "text/plain"}}, http.StatusUnauthorized},
		{"too large", request{body: big, header: map[string]string{"Content-Type": "text/plain", "Authorization": "Bearer t"}}, http.StatusRequestEntityTooLarge},
		{"not JSON", request{body: `{"reason":""}`, header: map[string]string{"Content-Type": "text/plain", "Authorization": "Bearer t"}}, http.StatusUnsupportedMediaType},
		{"bad input", request{body: `{"reason":""}`, header: map[string]string{"Content-Type": "application/json", "Authorization": "Bearer t"}}, http.StatusBadRequest},
		{"a missing body is 400, never 415", request{header: map[string]string{"Authorization": "Bearer t"}}, http.StatusBadRequest},
		{"right", request{body: `{"reason":"r"}`, header: map[string]string{"Content-Type": "Application/JSON; charset=utf-8", "Authorization": "Bearer t"}}, http.StatusOK},
	}
	f := newBrowserFront(t, Options{Listen: host, Token: "t"})
	for _, s := range steps {
		s.req.method, s.req.path, s.req.host = http.MethodPut, "/v1/freeze", host
		rec := f.do(s.req)
		noCORS(t, rec)
		if rec.Code != s.want {
			t.Errorf("%s: %d %s, want %d", s.name, rec.Code, rec.Body, s.want)
		}
		if s.want != http.StatusOK && f.plane.changes != 0 {
			t.Fatalf("%s: the refused call changed something", s.name)
		}
	}
	if f.plane.changes != 1 {
		t.Errorf("%d changes, want the last call's", f.plane.changes)
	}

	// A boot needs no token: 403, 413, 415, then admitted; the refused
	// ones admit nothing.
	boots := []struct {
		name string
		req  request
		want int
	}{
		{"all wrong", request{body: big, header: map[string]string{"Origin": "null", "Content-Type": "text/plain"}}, http.StatusForbidden},
		{"too large", request{body: big, header: map[string]string{"Content-Type": "text/plain"}}, http.StatusRequestEntityTooLarge},
		{"not JSON", request{body: `{}`, header: map[string]string{"Content-Type": "text/plain"}}, http.StatusUnsupportedMediaType},
		{"curl --json", request{body: `{}`, header: map[string]string{"Content-Type": "application/json", "Accept": "application/json"}}, http.StatusOK},
		{"no body", request{}, http.StatusOK},
	}
	for _, s := range boots {
		admitted := f.boot.pool
		s.req.method, s.req.path, s.req.host = http.MethodPost, "/v1/boot", host
		rec := f.do(s.req)
		noCORS(t, rec)
		if rec.Code != s.want {
			t.Errorf("boot, %s: %d %s, want %d", s.name, rec.Code, rec.Body, s.want)
		}
		if got := f.boot.pool - admitted; (s.want == http.StatusOK) != (got == 1) {
			t.Errorf("boot, %s: %d admitted", s.name, got)
		}
	}
}

// TestNoPreflightAnswer: a CORS preflight gets no Access-Control-Allow-*
// header, so a browser sends nothing that needs one.
func TestNoPreflightAnswer(t *testing.T) {
	f := newBrowserFront(t, Options{Listen: "127.0.0.1:7070"})
	for _, path := range []string{"/v1/freeze", "/v1/boot", "/v1/ratelimit", "/v1/status"} {
		rec := f.do(request{method: http.MethodOptions, path: path, host: "127.0.0.1:7070", header: map[string]string{
			"Origin": "http://evil.example", "Access-Control-Request-Method": "PUT", "Access-Control-Request-Headers": "content-type"}})
		noCORS(t, rec)
		if rec.Code < 400 {
			t.Errorf("OPTIONS %s: %d, want a refusal", path, rec.Code)
		}
	}
}
