package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	fakeToken = "s3cret"

	statusJSON = `{"pool":"default","leader":true,"leader_id":"host-a:7070","frozen":false,"freeze":null,` +
		`"auto_frozen":false,"auto_freeze_reason":"","generation":7,"last_reconcile_at":"2026-11-29T13:00:00Z",` +
		`"consul_reachable":true,"hit_rate":0.97,"boot_limit":{"mode":"auto","limit":1000,"burst":100},` +
		`"nodes":[{"id":"mc-1","addr":"127.0.0.1:11211","az":"a","slot":0,"consul":"present","reachable":true,"state":"serving","absent_since":null,"flaps":0},` +
		`{"id":"mc-9","addr":"127.0.0.1:11219","az":"","slot":-1,"consul":"absent","reachable":false,"state":"down","absent_since":"2026-11-29T12:59:00Z","flaps":3}]}`

	statusOut = `pool:              default
leader:            yes (host-a:7070)
frozen:            no
auto-frozen:       no
generation:        7
last reconcile:    2 s ago, at 2026-11-29T13:00:00Z
consul reachable:  yes
hit rate:          0.97
boot limit:        auto, 1000 boots/s, burst 100

ID    ADDR             AZ  SLOT  CONSUL   REACHABLE  STATE    FLAPS
mc-1  127.0.0.1:11211  a   0     present  yes        serving  0
mc-9  127.0.0.1:11219  -   -     absent   no         down     3
`

	// statusTroubleJSON is frozen, auto-frozen, with a discovery fault, an
	// unknown extra field and several fields missing.
	statusTroubleJSON = `{"pool":"p2","leader":false,"leader_id":"host-b:7070","frozen":true,` +
		`"freeze":{"frozen":true,"reason":"deploy","at":"2026-11-29T12:00:00Z","by":"alice"},` +
		`"auto_frozen":true,"auto_freeze_reason":"3 of 4 nodes absent","discovery_fault":true,` +
		`"discovery_fault_reason":"consul listed no instance","generation":2,"hit_rate":null,` +
		`"something_new":{"x":1},"nodes":[{"id":"mc-2","addr":"10.0.0.2:11211","state":"held"}]}`

	slotMapJSON = `{"pool":"default","num_slots":4,"generation":7,"updated_at":"2026-11-29T13:00:00Z",` +
		`"slots":[{"slot":0,"node_id":"mc-1","addr":"127.0.0.1:11211","az":"a"},` +
		`{"slot":1,"node_id":"","addr":"","az":""},` +
		`{"slot":2,"node_id":"mc-3","addr":"127.0.0.1:11213","az":""},` +
		`{"slot":3,"node_id":"mc-4","addr":"127.0.0.1:11214","az":"c"}],` +
		`"spares":[{"node_id":"mc-9","addr":"127.0.0.1:11219","az":"b"}]}`

	slotMapOut = `pool default  generation 7  slots 4  updated 2 s ago, at 2026-11-29T13:00:00Z

SLOT  NODE      ADDR             AZ
0     mc-1      127.0.0.1:11211  a
1     (vacant)  -                -
2     mc-3      127.0.0.1:11213  -
3     mc-4      127.0.0.1:11214  c

SPARES:
  mc-9  127.0.0.1:11219  b
`

	rateLimitJSON = `{"mode":"auto","limit":250.0,"burst":25,"hit_rate":0.72,"floor":10,"ceiling":1000,` +
		`"updated_at":"2026-11-29T13:00:00Z","reason":"hit rate 0.72 below 0.80: cut from 500 to 250"}`

	rateLimitOut = "mode auto, limit 250 boots/s, burst 25, hit rate 0.72\n" +
		"reason: hit rate 0.72 below 0.80: cut from 500 to 250\n"
)

// seenRequest is one request the fake API received.
type seenRequest struct {
	method, path, auth, body string
}

// fakeAPI mimics the mcrib operator API: fixed documents for reads, token
// checks and validation for writes, JSON errors. It is safe for concurrent
// use.
type fakeAPI struct {
	status string // body of GET /v1/status
	broken bool   // answer everything with a plain-text 502

	requestLog
}

// requestLog records the requests a fake API received. It is safe for
// concurrent use.
type requestLog struct {
	mu   sync.Mutex
	seen []seenRequest
}

func (l *requestLog) add(r seenRequest) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, r)
}

// requests returns the requests recorded so far, in order.
func (l *requestLog) requests() []seenRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]seenRequest(nil), l.seen...)
}

// wantRequests fails the test unless got are the requests want, in order.
func wantRequests(t *testing.T, got, want []seenRequest) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("server saw %d requests %+v, want %+v", len(got), got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("request %d\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

func fakeWriteJSON(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	io.WriteString(w, body)
}

func fakeWriteError(w http.ResponseWriter, code int, msg string) {
	b, _ := json.Marshal(map[string]string{"error": msg})
	fakeWriteJSON(w, code, string(b))
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.add(seenRequest{r.Method, r.URL.Path, r.Header.Get("Authorization"), string(body)})

	if f.broken {
		http.Error(w, "upstream is gone", http.StatusBadGateway)
		return
	}
	if r.Method != http.MethodGet && r.Header.Get("Authorization") != "Bearer "+fakeToken {
		fakeWriteError(w, http.StatusUnauthorized, "missing or wrong token")
		return
	}
	switch r.Method + " " + r.URL.Path {
	case "GET /v1/status":
		s := f.status
		if s == "" {
			s = statusJSON
		}
		fakeWriteJSON(w, http.StatusOK, s)
	case "GET /v1/slotmap":
		fakeWriteJSON(w, http.StatusOK, slotMapJSON)
	case "PUT /v1/freeze":
		var in struct{ Reason string }
		if err := json.Unmarshal(body, &in); err != nil || in.Reason == "" {
			fakeWriteError(w, http.StatusBadRequest, "reason must not be empty")
			return
		}
		b, _ := json.Marshal(map[string]any{"frozen": true, "reason": in.Reason, "at": "2026-11-29T13:00:00Z", "by": "operator"})
		fakeWriteJSON(w, http.StatusOK, string(b))
	case "DELETE /v1/freeze":
		fakeWriteJSON(w, http.StatusOK, `{"frozen": false}`)
	case "GET /v1/ratelimit":
		fakeWriteJSON(w, http.StatusOK, rateLimitJSON)
	case "PUT /v1/ratelimit":
		var in struct {
			Mode  string   `json:"mode"`
			Limit *float64 `json:"limit"`
			Burst *int     `json:"burst"`
		}
		if err := json.Unmarshal(body, &in); err != nil {
			fakeWriteError(w, http.StatusBadRequest, "body is not JSON")
			return
		}
		limit, burst := 1000.0, 100
		if in.Limit != nil {
			limit = *in.Limit
		}
		if in.Burst != nil {
			burst = *in.Burst
		}
		fakeWriteJSON(w, http.StatusOK, fmt.Sprintf(`{"mode":%q,"limit":%g,"burst":%d,"hit_rate":0.5,"reason":"set by operator"}`, in.Mode, limit, burst))
	default:
		fakeWriteError(w, http.StatusNotFound, "no such path")
	}
}

// startFake starts a fake API server for one test.
func startFake(t *testing.T, f http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return srv
}

// deadAddr returns the URL of a server that no longer listens.
func deadAddr(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	u := srv.URL
	srv.Close()
	return u
}

// testNow is the clock of the CLI in the tests: 2 s after the
// last_reconcile_at of statusJSON.
var testNow = time.Date(2026, 11, 29, 13, 0, 2, 0, time.UTC)

// testCLI returns a proc writing to out and errOut, with env as its
// environment, testNow as its clock and "testhost" as its host name.
func testCLI(out, errOut io.Writer, env map[string]string) proc {
	return proc{stdout: out, stderr: errOut, getenv: envOf(env),
		now: func() time.Time { return testNow }, hostname: func() (string, error) { return "testhost", nil }}
}

// runCLI runs mcrib with args and env and returns the exit code and output.
func runCLI(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = testCLI(&out, &errOut, env).main(context.Background(), args)
	return code, out.String(), errOut.String()
}

func TestClientCommands(t *testing.T) {
	withToken := map[string]string{"MCRIB_TOKEN": fakeToken}
	tests := []struct {
		name       string
		args       []string // --addr <fake> is appended
		env        map[string]string
		status     string // status document the fake serves ("" = statusJSON)
		wantCode   int
		wantStdout string   // exact
		wantStderr []string // substrings; none means stderr must be empty
		wantReq    []seenRequest
	}{
		{name: "status", args: []string{"status"}, wantStdout: statusOut,
			wantReq: []seenRequest{{method: "GET", path: "/v1/status"}}},
		{name: "status json", args: []string{"status", "--json"}, wantStdout: statusJSON + "\n",
			wantReq: []seenRequest{{method: "GET", path: "/v1/status"}}},
		{name: "status sends token when set", args: []string{"status", "--json"}, env: withToken, wantStdout: statusJSON + "\n",
			wantReq: []seenRequest{{method: "GET", path: "/v1/status", auth: "Bearer " + fakeToken}}},
		{name: "slots", args: []string{"slots"}, wantStdout: slotMapOut,
			wantReq: []seenRequest{{method: "GET", path: "/v1/slotmap"}}},
		{name: "slots json", args: []string{"slots", "-json"}, wantStdout: slotMapJSON + "\n",
			wantReq: []seenRequest{{method: "GET", path: "/v1/slotmap"}}},
		{name: "freeze", args: []string{"freeze", "--reason", "deploy in progress"}, env: withToken,
			wantStdout: "frozen: deploy in progress (by operator)\n",
			wantReq: []seenRequest{{method: "GET", path: "/v1/status", auth: "Bearer " + fakeToken},
				{method: "PUT", path: "/v1/freeze", auth: "Bearer " + fakeToken, body: `{"reason":"deploy in progress"}`}}},
		{name: "freeze json", args: []string{"freeze", "--reason", "deploy in progress", "--json"}, env: withToken,
			wantStdout: `{"at":"2026-11-29T13:00:00Z","by":"operator","frozen":true,"reason":"deploy in progress"}` + "\n",
			wantReq: []seenRequest{{method: "GET", path: "/v1/status", auth: "Bearer " + fakeToken},
				{method: "PUT", path: "/v1/freeze", auth: "Bearer " + fakeToken, body: `{"reason":"deploy in progress"}`}}},
		{name: "freeze without token", args: []string{"freeze", "--reason=x"}, wantCode: 1,
			wantStderr: []string{"mcrib freeze: this call changes state and needs the operator token, and none was given (401 Unauthorized); " +
				"set MCRIB_TOKEN (or --token-file) to the operator token\n"},
			wantReq: []seenRequest{{method: "GET", path: "/v1/status"}, {method: "PUT", path: "/v1/freeze", body: `{"reason":"x"}`}}},
		{name: "freeze with wrong token", args: []string{"freeze", "--reason=x"}, env: map[string]string{"MCRIB_TOKEN": "nope"}, wantCode: 1,
			wantStderr: []string{"refused the operator token from MCRIB_TOKEN (401 Unauthorized); set MCRIB_TOKEN (or --token-file) to the operator token"},
			wantReq: []seenRequest{{method: "GET", path: "/v1/status", auth: "Bearer nope"},
				{method: "PUT", path: "/v1/freeze", auth: "Bearer nope", body: `{"reason":"x"}`}}},
		{name: "freeze without reason", args: []string{"freeze"}, env: withToken, wantCode: 2,
			wantStderr: []string{"--reason"}},
		{name: "freeze with blank reason", args: []string{"freeze", "--reason", "  "}, env: withToken, wantCode: 2,
			wantStderr: []string{"--reason"}},
		{name: "unfreeze", args: []string{"unfreeze"}, env: withToken, wantStdout: "unfrozen\n",
			wantReq: []seenRequest{{method: "DELETE", path: "/v1/freeze", auth: "Bearer " + fakeToken}}},
		{name: "unfreeze json", args: []string{"unfreeze", "--json"}, env: withToken, wantStdout: `{"frozen": false}` + "\n",
			wantReq: []seenRequest{{method: "DELETE", path: "/v1/freeze", auth: "Bearer " + fakeToken}}},
		{name: "ratelimit", args: []string{"ratelimit"}, wantStdout: rateLimitOut,
			wantReq: []seenRequest{{method: "GET", path: "/v1/ratelimit"}}},
		{name: "ratelimit json", args: []string{"ratelimit", "--json"}, wantStdout: rateLimitJSON + "\n",
			wantReq: []seenRequest{{method: "GET", path: "/v1/ratelimit"}}},
		{name: "ratelimit set", args: []string{"ratelimit", "set", "100"}, env: withToken,
			wantStdout: "mode manual, limit 100 boots/s, burst 100, hit rate 0.50\nreason: set by operator\n",
			wantReq:    []seenRequest{{method: "PUT", path: "/v1/ratelimit", auth: "Bearer " + fakeToken, body: `{"mode":"manual","limit":100}`}}},
		{name: "ratelimit set with burst, flags anywhere", args: []string{"ratelimit", "--burst", "10", "set", "2.5"}, env: withToken,
			wantStdout: "mode manual, limit 2.5 boots/s, burst 10, hit rate 0.50\nreason: set by operator\n",
			wantReq:    []seenRequest{{method: "PUT", path: "/v1/ratelimit", auth: "Bearer " + fakeToken, body: `{"mode":"manual","limit":2.5,"burst":10}`}}},
		{name: "ratelimit set zero", args: []string{"ratelimit", "set", "0", "--json"}, env: withToken,
			wantStdout: `{"mode":"manual","limit":0,"burst":100,"hit_rate":0.5,"reason":"set by operator"}` + "\n",
			wantReq:    []seenRequest{{method: "PUT", path: "/v1/ratelimit", auth: "Bearer " + fakeToken, body: `{"mode":"manual","limit":0}`}}},
		{name: "ratelimit auto", args: []string{"ratelimit", "auto"}, env: withToken,
			wantStdout: "mode auto, limit 1000 boots/s, burst 100, hit rate 0.50\nreason: set by operator\n",
			wantReq:    []seenRequest{{method: "PUT", path: "/v1/ratelimit", auth: "Bearer " + fakeToken, body: `{"mode":"auto"}`}}},
		{name: "ratelimit set without token", args: []string{"ratelimit", "set", "5"}, wantCode: 1,
			wantStderr: []string{"mcrib ratelimit: this call changes state and needs the operator token", "set MCRIB_TOKEN (or --token-file)"},
			wantReq:    []seenRequest{{method: "PUT", path: "/v1/ratelimit", body: `{"mode":"manual","limit":5}`}}},
		{name: "ratelimit set without number", args: []string{"ratelimit", "set"}, env: withToken, wantCode: 2,
			wantStderr: []string{"set needs a limit"}},
		{name: "ratelimit set non-number", args: []string{"ratelimit", "set", "fast"}, env: withToken, wantCode: 2,
			wantStderr: []string{`"fast"`, "not a number"}},
		{name: "ratelimit set NaN", args: []string{"ratelimit", "set", "NaN"}, env: withToken, wantCode: 2,
			wantStderr: []string{"not a number"}},
		{name: "ratelimit set negative", args: []string{"ratelimit", "set", "-5"}, env: withToken, wantCode: 2,
			wantStderr: []string{"negative"}},
		{name: "ratelimit set bad burst", args: []string{"ratelimit", "set", "5", "--burst", "0"}, env: withToken, wantCode: 2,
			wantStderr: []string{"--burst"}},
		{name: "ratelimit burst without set", args: []string{"ratelimit", "--burst", "3"}, wantCode: 2,
			wantStderr: []string{"--burst"}},
		{name: "ratelimit unknown subcommand", args: []string{"ratelimit", "turbo"}, wantCode: 2,
			wantStderr: []string{`"turbo"`}},
		{name: "ratelimit set extra argument", args: []string{"ratelimit", "set", "5", "6"}, env: withToken, wantCode: 2,
			wantStderr: []string{`"6"`}},
		{name: "unknown flag", args: []string{"status", "--verbose"}, wantCode: 2,
			wantStderr: []string{"--verbose"}},
		{name: "unexpected argument", args: []string{"slots", "now"}, wantCode: 2,
			wantStderr: []string{`"now"`}},
		{name: "status with trouble and missing fields", args: []string{"status"}, status: statusTroubleJSON,
			wantStdout: `pool:              p2
leader:            no (leader is host-b:7070)
frozen:            yes: "deploy" by alice, 1 h ago, at 2026-11-29T12:00:00Z
auto-frozen:       yes: 3 of 4 nodes absent
discovery fault:   yes: consul listed no instance
generation:        2
last reconcile:    never
consul reachable:  unknown
hit rate:          unknown
boot limit:        unknown

ID    ADDR            AZ  SLOT  CONSUL   REACHABLE  STATE  FLAPS
mc-2  10.0.0.2:11211  -   -     unknown  unknown    held   unknown
`,
			wantReq: []seenRequest{{method: "GET", path: "/v1/status"}}},
		{name: "status not a document", args: []string{"status"}, status: `"hello"`, wantCode: 1,
			wantStderr: []string{"status document"},
			wantReq:    []seenRequest{{method: "GET", path: "/v1/status"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeAPI{status: tt.status}
			srv := startFake(t, fake)
			code, stdout, stderr := runCLI(t, tt.env, append(tt.args, "--addr", srv.URL)...)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tt.wantCode, stderr)
			}
			if stdout != tt.wantStdout {
				t.Errorf("stdout\n got %q\nwant %q\n%s", stdout, tt.wantStdout, stdout)
			}
			if len(tt.wantStderr) == 0 && stderr != "" {
				t.Errorf("stderr %q, want nothing", stderr)
			}
			for _, w := range tt.wantStderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not contain %q", stderr, w)
				}
			}
			wantRequests(t, fake.requests(), tt.wantReq)
		})
	}
}

func TestClientAddress(t *testing.T) {
	fake := &fakeAPI{}
	srv := startFake(t, fake)
	hostPort := strings.TrimPrefix(srv.URL, "http://")
	dead := deadAddr(t)
	tests := []struct {
		name       string
		args       []string
		env        map[string]string
		wantCode   int
		wantStderr string
	}{
		{name: "MCRIB_ADDR honoured", args: []string{"ratelimit"}, env: map[string]string{"MCRIB_ADDR": hostPort}},
		{name: "MCRIB_ADDR with scheme and slash", args: []string{"ratelimit"}, env: map[string]string{"MCRIB_ADDR": srv.URL + "/"}},
		{name: "--addr host:port", args: []string{"ratelimit", "--addr", hostPort}},
		{name: "--addr beats MCRIB_ADDR", args: []string{"ratelimit", "--addr", srv.URL}, env: map[string]string{"MCRIB_ADDR": dead}},
		{name: "unreachable", args: []string{"ratelimit", "--addr", dead}, wantCode: 1, wantStderr: "cannot reach mcrib at " + dead},
		{name: "unreachable through MCRIB_ADDR", args: []string{"unfreeze"}, env: map[string]string{"MCRIB_ADDR": dead}, wantCode: 1, wantStderr: "cannot reach"},
		{name: "bad scheme", args: []string{"status", "--addr", "ftp://host:21"}, wantCode: 2, wantStderr: "--addr"},
		{name: "bad MCRIB_ADDR", args: []string{"status"}, env: map[string]string{"MCRIB_ADDR": "http://"}, wantCode: 2, wantStderr: "MCRIB_ADDR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tt.env, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tt.wantCode, stderr)
			}
			if tt.wantStderr == "" && stderr != "" {
				t.Errorf("stderr %q, want nothing", stderr)
			}
			if !strings.Contains(stderr, tt.wantStderr) {
				t.Errorf("stderr %q does not contain %q", stderr, tt.wantStderr)
			}
		})
	}
	// Every successful call above reached the fake: 4 ratelimit reads.
	if n := len(fake.requests()); n != 4 {
		t.Errorf("fake saw %d requests, want 4", n)
	}
}

func TestClientNonJSONError(t *testing.T) {
	srv := startFake(t, &fakeAPI{broken: true})
	code, stdout, stderr := runCLI(t, nil, "status", "--addr", srv.URL)
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if stdout != "" {
		t.Errorf("stdout %q, want nothing", stdout)
	}
	if want := "mcrib status: server answered 502 Bad Gateway\n"; stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
}

func TestTopLevel(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string // substring
		wantStderr string // substring
	}{
		{name: "version", args: []string{"version"}, wantStdout: "mcrib dev\n"},
		{name: "version extra", args: []string{"version", "x"}, wantCode: 2, wantStderr: `"x"`},
		{name: "help", args: []string{"help"}, wantStdout: "usage: mcrib <command>"},
		{name: "-h", args: []string{"-h"}, wantStdout: "usage: mcrib <command>"},
		{name: "--help", args: []string{"--help"}, wantStdout: "usage: mcrib <command>"},
		{name: "help ratelimit", args: []string{"help", "ratelimit"}, wantStdout: "mcrib ratelimit set N"},
		{name: "status -h", args: []string{"status", "-h"}, wantStdout: "usage: mcrib status"},
		{name: "help unknown", args: []string{"help", "nope"}, wantCode: 2, wantStderr: `"nope"`},
		{name: "no command", args: nil, wantCode: 2, wantStderr: "usage: mcrib <command>"},
		{name: "unknown command", args: []string{"restart"}, wantCode: 2, wantStderr: `unknown command "restart"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, nil, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d", code, tt.wantCode)
			}
			if !strings.Contains(stdout, tt.wantStdout) || (tt.wantStdout == "" && stdout != "") {
				t.Errorf("stdout %q, want it to contain %q", stdout, tt.wantStdout)
			}
			if !strings.Contains(stderr, tt.wantStderr) || (tt.wantStderr == "" && stderr != "") {
				t.Errorf("stderr %q, want it to contain %q", stderr, tt.wantStderr)
			}
		})
	}
}

// TestFreezeOverAnotherOperator checks that a freeze over a freeze another
// operator set is refused (exit 1, one sentence naming who froze, when and
// why, and nothing sent), that the same operator may change the reason,
// and that --force replaces the other's freeze.
func TestFreezeOverAnotherOperator(t *testing.T) {
	frozen := `{"pool":"default","leader":true,"frozen":true,` +
		`"freeze":{"frozen":true,"reason":"deploy of web 1.42","at":"2026-11-29T12:48:02Z","by":"alice@laptop"}}`
	tok := map[string]string{"MCRIB_TOKEN": fakeToken}
	for _, tc := range []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr string
		wantPut    bool
	}{
		{name: "another operator", args: []string{"freeze", "--reason", "incident", "--who", "bob@desk"}, wantCode: 1,
			wantStderr: "mcrib freeze: the pool is frozen already, by alice@laptop 12 min ago, at 2026-11-29T12:48:02Z: \"deploy of web 1.42\". " +
				"Not changed: mcrib freeze --force replaces that freeze and its reason, mcrib unfreeze lifts it\n"},
		{name: "the same operator", args: []string{"freeze", "--reason", "deploy of web 1.43", "--who", "alice@laptop"}, wantPut: true},
		{name: "--force", args: []string{"freeze", "--force", "--reason", "incident", "--who", "bob@desk"}, wantPut: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeAPI{status: frozen}
			srv := startFake(t, fake)
			code, _, stderr := runCLI(t, tok, append(tc.args, "--addr", srv.URL)...)
			if code != tc.wantCode || !strings.Contains(stderr, tc.wantStderr) || (tc.wantStderr == "" && stderr != "") {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tc.wantCode, tc.wantStderr)
			}
			put := false
			for _, r := range fake.requests() {
				put = put || r.method == "PUT"
			}
			if put != tc.wantPut {
				t.Errorf("requests %+v: a PUT sent %v, want %v", fake.requests(), put, tc.wantPut)
			}
		})
	}
}

// jsonAnswers is what jsonFake answers, by method and path.
var jsonAnswers = map[string]string{
	"GET /v1/status":              statusJSON,
	"GET /v1/slotmap":             slotMapJSON,
	"GET /v1/ratelimit":           rateLimitJSON,
	"PUT /v1/ratelimit":           `{"mode":"manual","limit":5,"burst":1,"hit_rate":null,"reason":"set by operator"}`,
	"PUT /v1/freeze":              `{"frozen":true,"reason":"r","at":"2026-11-29T13:00:00Z","by":"alice"}`,
	"DELETE /v1/freeze":           `{"frozen":false}`,
	"PUT /v1/drain/b":             drainAnswerJSON,
	"DELETE /v1/drain/b":          `{"zones":{"b":{"baseline_slots":5,"slots":1,"target_slots":5,"state":"returning","returning":true}}}`,
	"POST /v1/nodes/mc-1/replace": `{"slot":3,"from":"mc-1","to":"mc-9","warm":true}`,
	"GET /v1/resize":              resizeAnswerJSON,
	"PUT /v1/resize":              resizeAnswerJSON,
	"DELETE /v1/resize":           `{"resize":{"from":16,"to":32,"state":"stopped"}}`,
	"GET /v1/roll":                `{"roll":null}`,
	"PUT /v1/roll":                `{"roll":{"reason":"r","state":"rolling","nodes":[{"node_id":"mc-1","state":"released","slot":null}]}}`,
	"DELETE /v1/roll":             `{"roll":{"reason":"r","state":"stopped","nodes":[]}}`,
	"GET /v1/events":              `[{"seq":1,"at":"2026-11-29T13:00:00Z","kind":"placement","node":"mc-1","reason":"first fill","who":"mcrib"}]`,
}

// TestVersionJSON: mcrib version takes --json too, as every command that
// prints something does.
func TestVersionJSON(t *testing.T) {
	code, stdout, stderr := runCLI(t, nil, "version", "--json")
	var v struct{ Version, Go string }
	if err := json.Unmarshal([]byte(stdout), &v); code != 0 || err != nil || v.Version != version || v.Go == "" {
		t.Errorf("mcrib version --json: exit %d, stdout %q, stderr %q (%v); want {\"version\": %q, \"go\": …}", code, stdout, stderr, err, version)
	}
	if code, stdout, _ := runCLI(t, nil, "version"); code != 0 || stdout != "mcrib "+version+"\n" {
		t.Errorf("mcrib version: exit %d, stdout %q", code, stdout)
	}
}

// TestEveryClientCommandTakesJSON runs every client command of the command
// table with --json and checks that it prints the server's answer as it
// came (zones: the status document's zones; events: one line per event).
func TestEveryClientCommandTakesJSON(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := jsonAnswers[r.Method+" "+r.URL.Path]
		if !ok {
			fakeWriteError(w, http.StatusNotFound, "no such path")
			return
		}
		fakeWriteJSON(w, http.StatusOK, body)
	}))
	defer srv.Close()
	cases := map[string][]struct {
		args []string
		want string
	}{
		"status":    {{[]string{"status"}, statusJSON}},
		"slots":     {{[]string{"slots"}, slotMapJSON}},
		"freeze":    {{[]string{"freeze", "--reason", "r"}, jsonAnswers["PUT /v1/freeze"]}},
		"unfreeze":  {{[]string{"unfreeze"}, jsonAnswers["DELETE /v1/freeze"]}},
		"ratelimit": {{[]string{"ratelimit"}, rateLimitJSON}, {[]string{"ratelimit", "set", "5"}, jsonAnswers["PUT /v1/ratelimit"]}, {[]string{"ratelimit", "auto"}, jsonAnswers["PUT /v1/ratelimit"]}},
		"zones":     {{[]string{"zones"}, "[]"}},
		"drain":     {{[]string{"drain", "b", "--reason", "r"}, drainAnswerJSON}},
		"undrain":   {{[]string{"undrain", "b"}, jsonAnswers["DELETE /v1/drain/b"]}},
		"replace":   {{[]string{"replace", "mc-1", "--reason", "r"}, jsonAnswers["POST /v1/nodes/mc-1/replace"]}},
		"resize": {{[]string{"resize"}, resizeAnswerJSON}, {[]string{"resize", "--slots", "32", "--reason", "r"}, resizeAnswerJSON},
			{[]string{"resize", "stop"}, jsonAnswers["DELETE /v1/resize"]}},
		"roll": {{[]string{"roll"}, jsonAnswers["GET /v1/roll"]}, {[]string{"roll", "--all", "--reason", "r"}, jsonAnswers["PUT /v1/roll"]},
			{[]string{"roll", "stop"}, jsonAnswers["DELETE /v1/roll"]}},
		"events": {{[]string{"events"}, `{"seq":1,"at":"2026-11-29T13:00:00Z","kind":"placement","node":"mc-1","reason":"first fill","who":"mcrib"}`}},
	}
	for _, cmd := range commands() {
		if !cmd.client {
			continue
		}
		tcs, ok := cases[cmd.name]
		if !ok {
			t.Errorf("no --json case for the client command %q: add one", cmd.name)
			continue
		}
		for _, tc := range tcs {
			code, stdout, stderr := runCLI(t, nil, append(tc.args, "--json", "--addr", srv.URL)...)
			if code != 0 || stdout != tc.want+"\n" {
				t.Errorf("mcrib %s --json: exit %d, stdout %q, stderr %q; want the answer %q", strings.Join(tc.args, " "), code, stdout, stderr, tc.want)
			}
		}
	}
}

// TestUnknownIsSaidOneWay runs the commands that show a hit rate, against
// documents in which it is null, and checks that each says "unknown" and
// never a number or another word for it.
func TestUnknownIsSaidOneWay(t *testing.T) {
	status := `{"pool":"default","leader":true,"hit_rate":null,"boot_limit":{"mode":"auto","limit":10,"burst":1,"hit_rate":null},` +
		`"zones":[{"zone":"a","nodes":2,"slots":2,"unreachable":0,"absent":0,"hit_rate":null,"drain":null}],` +
		`"nodes":[{"id":"mc-1","addr":"127.0.0.1:11211","az":"a","slot":0,"state":"serving"}]}`
	ratelimitDoc := `{"mode":"auto","limit":10,"burst":1,"hit_rate":null,"reason":"new pool"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/ratelimit" {
			fakeWriteJSON(w, http.StatusOK, ratelimitDoc)
			return
		}
		fakeWriteJSON(w, http.StatusOK, status)
	}))
	defer srv.Close()
	for _, tc := range []struct {
		cmd  string
		want []string
	}{
		{"status", []string{"hit rate:          unknown\n", "mc-1  127.0.0.1:11211  a   0     unknown  unknown    serving  unknown\n",
			"a     2      2      0            0       unknown   -\n"}},
		{"zones", []string{"a     2      2      0            0       unknown   -\n"}},
		{"ratelimit", []string{"hit rate unknown\n"}},
	} {
		code, stdout, stderr := runCLI(t, nil, tc.cmd, "--addr", srv.URL)
		if code != 0 {
			t.Fatalf("mcrib %s: exit %d: %s", tc.cmd, code, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("mcrib %s lacks %q:\n%s", tc.cmd, w, stdout)
			}
		}
		for _, bad := range []string{"0.00", "n/a", "N/A", "—", "null", "(unknown)"} {
			if strings.Contains(stdout, bad) {
				t.Errorf("mcrib %s says %q for an unknown value:\n%s", tc.cmd, bad, stdout)
			}
		}
	}
}
