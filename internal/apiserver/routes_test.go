package apiserver

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/ratelimit"
)

// routePlane is a control plane that drains, replaces and freezes without
// asking anything.
type routePlane struct {
	*fakePlane
	*fakeZones
}

func (routePlane) Freeze(_ context.Context, reason, _ string) (mcribapi.FreezeDoc, error) {
	return mcribapi.FreezeDoc{Frozen: true, Reason: reason}, nil
}

// routeBoot is a boot limiter with a document.
type routeBoot struct{ *countingBoot }

func (routeBoot) Document() ratelimit.Document { return ratelimit.Document{Mode: "auto", Limit: 5} }

// TestRouting pins how the API routes a request: the method patterns, the
// 405 with its Allow header, the 404 of an unknown path, HEAD answered as
// GET, and a path that is not canonical answered as it was sent (never
// redirected), a zone or node named in it going to its route.
func TestRouting(t *testing.T) {
	a := newServer(Options{Loop: routePlane{newFakePlane(testSlotMap(t, 1)), &fakeZones{}}, Boot: routeBoot{&countingBoot{}}})
	for _, tc := range []struct {
		method, path string
		code         int
		allow        string
		err          string // the error sentence; "" for an answer that is no error
	}{
		{"GET", "/v1/status", 200, "", ""},
		{"HEAD", "/v1/status", 200, "", ""},
		{"GET", "/v1/st%61tus", 200, "", ""},
		{"POST", "/v1/status", 405, "GET", "/v1/status does not take POST; it takes GET"},
		{"GET", "/v1/status/", 404, "", "there is no /v1/status/ in the mcrib API"},
		{"GET", "/v1//status", 404, "", "there is no /v1//status in the mcrib API"},
		{"GET", "/./v1/status", 404, "", "there is no /./v1/status in the mcrib API"},
		{"GET", "*", 404, "", "there is no * in the mcrib API"},
		{"GET", "//", 404, "", "there is no // in the mcrib API"},
		{"GET", "/wp-login.php", 404, "", "there is no /wp-login.php in the mcrib API"},
		{"HEAD", "/v1/freeze", 405, "DELETE, PUT", "/v1/freeze does not take HEAD; it takes DELETE, PUT"},
		{"PUT", "/v1/freeze", 200, "", ""},
		{"DELETE", "/v1/freeze", 200, "", ""},
		{"PATCH", "/v1/ratelimit", 405, "GET, PUT", "/v1/ratelimit does not take PATCH; it takes GET, PUT"},
		{"GET", "/v1/boot", 405, "POST", "/v1/boot does not take GET; it takes POST"},
		{"DELETE", "/v1/slotmap", 405, "GET", "/v1/slotmap does not take DELETE; it takes GET"},
		{"OPTIONS", "/healthz", 405, "GET", "/healthz does not take OPTIONS; it takes GET"},
		{"GET", "/v1/drain", 200, "", ""},
		{"PUT", "/v1/drain", 405, "GET", "/v1/drain does not take PUT; it takes GET"},
		{"PUT", "/v1/drain/a", 200, "", ""},
		{"GET", "/v1/drain/a", 405, "DELETE, PUT", "/v1/drain/a does not take GET; it takes DELETE, PUT"},
		{"PUT", "/v1/drain/", 404, "", "the path names no zone; use PUT /v1/drain/{zone}"},
		{"DELETE", "/v1/drain/a/b", 400, "", `zone "a/b" has a character other than the ASCII letters and digits, '-', '_', '.' and ':'`},
		{"PUT", "/v1/drain/a%2Fb", 400, "", `zone "a/b" has a character other than the ASCII letters and digits, '-', '_', '.' and ':'`},
		{"PUT", "/v1/drain//", 400, "", `zone "/" has a character other than the ASCII letters and digits, '-', '_', '.' and ':'`},
		{"DELETE", "/v1/drain/..", 200, "", ""},
		{"GET", "/v1/drain/..", 405, "DELETE, PUT", "/v1/drain/.. does not take GET; it takes DELETE, PUT"},
		{"POST", "/v1/nodes/x/replace", 200, "", ""},
		{"GET", "/v1/nodes/x/replace", 405, "POST", "/v1/nodes/x/replace does not take GET; it takes POST"},
		{"POST", "/v1/nodes//replace", 404, "", "the path names no node; use POST /v1/nodes/{id}/replace"},
		{"PUT", "/v1/nodes//replace", 405, "POST", "/v1/nodes//replace does not take PUT; it takes POST"},
		{"POST", "/v1/nodes/a/b/replace", 400, "", `node ID "a/b" has a '/' or a character that does not print`},
		{"POST", "/v1/nodes/./replace", 200, "", ""},
		{"POST", "/v1/nodes/x", 404, "", "there is no /v1/nodes/x in the mcrib API"},
		{"POST", "/v1/nodes/x/replace/", 404, "", "there is no /v1/nodes/x/replace/ in the mcrib API"},
		{"GET", "/", 200, "", ""},
		{"HEAD", "/dashboard.js", 200, "", ""},
		{"POST", "/", 405, "GET", "/ does not take POST; it takes GET"},
		{"GET", "/dashboard.js/", 404, "", "there is no /dashboard.js/ in the mcrib API"},
		{"GET", "/index.html", 404, "", "there is no /index.html in the mcrib API"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(`{"reason":"r"}`))
			req.Header.Set("Content-Type", "application/json")
			rr := httptest.NewRecorder()
			a.ServeHTTP(rr, req)
			if rr.Code != tc.code || rr.Header().Get("Allow") != tc.allow {
				t.Fatalf("%d, Allow %q: %s; want %d, Allow %q", rr.Code, rr.Header().Get("Allow"), rr.Body, tc.code, tc.allow)
			}
			if loc := rr.Header().Get("Location"); loc != "" {
				t.Errorf("redirected to %s", loc)
			}
			if tc.err != "" {
				if got := errorSentence(t, rr); got != tc.err {
					t.Errorf("error %q, want %q", got, tc.err)
				}
			}
		})
	}
}
