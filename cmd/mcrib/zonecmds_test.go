package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const (
	zonesStatusJSON = `{"pool":"default","leader":true,"zone_alert":"3 of 4 slot holders in zone b are unreachable; to take the cache off it: mcrib drain b --reason \"…\"",` +
		`"zones":[{"zone":"a","nodes":4,"slots":3,"unreachable":0,"absent":0,"hit_rate":0.93,"drain":null},` +
		`{"zone":"b","nodes":4,"slots":2,"unreachable":3,"absent":1,"hit_rate":null,"drain":{"percent":100,"step_percent":10,` +
		`"step_interval":"30s","reason":"link to b flapping","by":"ops","at":"2026-11-29T13:00:00Z","baseline_slots":5,"slots":2,` +
		`"target_slots":0,"state":"draining","blocked":"no spare outside the drained zones"}},` +
		`{"zone":"","nodes":1,"slots":0,"unreachable":0,"absent":0,"hit_rate":null,"drain":null}],` +
		`"nodes":[{"id":"mc-b1","addr":"10.0.1.1:11211","az":"b","slot":null,"consul":"present","reachable":true,"state":"warming","flaps":0,"drained":true,"warming":3}]}`

	zonesOut = `ZONE    NODES  SLOTS  UNREACHABLE  ABSENT  HIT RATE  DRAIN
a       4      3      0            0       0.93      -
b       4      2      3            1       unknown   draining: 2 slots to move, 0 left of a baseline of 5; blocked: no spare outside the drained zones
(none)  1      0      0            0       unknown   -

ALERT: 3 of 4 slot holders in zone b are unreachable; to take the cache off it: mcrib drain b --reason "…"
`

	drainAnswerJSON = `{"zones":{"b":{"percent":50,"step_percent":25,"step_interval":"3s","reason":"link flapping","by":"ops",` +
		`"at":"2026-11-29T13:00:00Z","baseline_slots":4,"slots":4,"target_slots":2,"state":"draining","blocked":""}}}`
	drainOut = `zone b: draining: 2 slots to move, 2 left of a baseline of 4
  pace: 50% of the zone's slots in steps of 25% every 3s
  reason: link flapping (by ops, 2 s ago, at 2026-11-29T13:00:00Z)
`
)

// zoneFake answers the zone routes with fixed documents and records the
// requests.
type zoneFake struct {
	requestLog
	code int    // answer code of the mutating routes (0: 200)
	body string // answer body of the mutating routes
}

func (f *zoneFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.add(seenRequest{r.Method, r.URL.EscapedPath(), r.Header.Get("Authorization"), string(body)})
	if r.Method == http.MethodGet && r.URL.Path == "/v1/status" {
		fakeWriteJSON(w, http.StatusOK, zonesStatusJSON)
		return
	}
	code := f.code
	if code == 0 {
		code = http.StatusOK
	}
	fakeWriteJSON(w, code, f.body)
}

func TestZoneCommands(t *testing.T) {
	tok := map[string]string{"MCRIB_TOKEN": fakeToken}
	auth := "Bearer " + fakeToken
	tests := []struct {
		name       string
		args       []string
		code       int    // the fake's answer code
		body       string // the fake's answer body
		wantCode   int
		wantStdout string
		wantStderr string
		wantReq    []seenRequest
	}{
		{name: "zones", args: []string{"zones"}, wantStdout: zonesOut,
			wantReq: []seenRequest{{method: "GET", path: "/v1/status", auth: auth}}},
		{name: "zones json", args: []string{"zones", "--json"},
			wantStdout: zonesStatusJSON[strings.Index(zonesStatusJSON, `[{"zone":"a"`):strings.Index(zonesStatusJSON, `,"nodes":[{"id"`)] + "\n",
			wantReq:    []seenRequest{{method: "GET", path: "/v1/status", auth: auth}}},
		{name: "zones extra", args: []string{"zones", "b"}, wantCode: 2, wantStderr: `"b"`},
		{name: "drain with every flag", args: []string{"drain", "b", "--reason", "link flapping", "--percent", "50", "--step", "25", "--every", "3s"},
			body: drainAnswerJSON, wantStdout: drainOut,
			wantReq: []seenRequest{{method: "PUT", path: "/v1/drain/b", auth: auth,
				body: `{"reason":"link flapping","percent":50,"step_percent":25,"step_interval":"3s"}`}}},
		{name: "drain sends only the flags given", args: []string{"drain", "--reason=r", "b"}, body: drainAnswerJSON, wantStdout: drainOut,
			wantReq: []seenRequest{{method: "PUT", path: "/v1/drain/b", auth: auth, body: `{"reason":"r"}`}}},
		{name: "drain step only", args: []string{"drain", "b", "--reason=r", "--step", "1"}, body: drainAnswerJSON, wantStdout: drainOut,
			wantReq: []seenRequest{{method: "PUT", path: "/v1/drain/b", auth: auth, body: `{"reason":"r","step_percent":1}`}}},
		{name: "drain zone escaped", args: []string{"drain", "a b", "--reason=r"}, body: `{"zones":{}}`,
			wantStdout: "zone a b: not drained (it holds its slots again)\n",
			wantReq:    []seenRequest{{method: "PUT", path: "/v1/drain/a%20b", auth: auth, body: `{"reason":"r"}`}}},
		{name: "drain refused", args: []string{"drain", "a", "--reason=r"}, code: 409, body: `{"error":"draining a would leave no undrained zone"}`,
			wantCode: 1, wantStderr: "draining a would leave no undrained zone",
			wantReq: []seenRequest{{method: "PUT", path: "/v1/drain/a", auth: auth, body: `{"reason":"r"}`}}},
		{name: "drain out of range goes to the server", args: []string{"drain", "b", "--reason=r", "--percent", "0"}, code: 400,
			body: `{"error":"\"percent\" must be an integer from 1 to 100, not 0"}`, wantCode: 1, wantStderr: "percent",
			wantReq: []seenRequest{{method: "PUT", path: "/v1/drain/b", auth: auth, body: `{"reason":"r","percent":0}`}}},
		{name: "drain without zone", args: []string{"drain", "--reason=r"}, wantCode: 2, wantStderr: "missing ZONE"},
		{name: "drain without reason", args: []string{"drain", "b"}, wantCode: 2, wantStderr: "--reason"},
		{name: "drain blank reason", args: []string{"drain", "b", "--reason", " "}, wantCode: 2, wantStderr: "--reason"},
		{name: "drain two zones", args: []string{"drain", "b", "c", "--reason=r"}, wantCode: 2, wantStderr: `"c"`},
		{name: "drain bad percent", args: []string{"drain", "b", "--reason=r", "--percent", "half"}, wantCode: 2, wantStderr: "--percent"},
		{name: "drain bad every", args: []string{"drain", "b", "--reason=r", "--every", "soon"}, wantCode: 2, wantStderr: "--every"},
		{name: "drain unknown flag", args: []string{"drain", "b", "--reason=r", "--fast"}, wantCode: 2, wantStderr: "--fast"},
		{name: "undrain", args: []string{"undrain", "b"},
			body:       `{"zones":{"b":{"percent":100,"step_percent":10,"step_interval":"30s","reason":"r","by":"ops","at":"2026-11-29T13:00:00Z","baseline_slots":5,"slots":1,"target_slots":5,"state":"returning","blocked":""}}}`,
			wantStdout: "zone b: returning: 4 slots to give back, 1 held of a baseline of 5\n  pace: 100% of the zone's slots in steps of 10% every 30s\n  reason: r (by ops, 2 s ago, at 2026-11-29T13:00:00Z)\n",
			wantReq:    []seenRequest{{method: "DELETE", path: "/v1/drain/b", auth: auth}}},
		{name: "undrain not drained", args: []string{"undrain", "b"}, code: 404, body: `{"error":"zone \"b\" is not drained"}`,
			wantCode: 1, wantStderr: "is not drained", wantReq: []seenRequest{{method: "DELETE", path: "/v1/drain/b", auth: auth}}},
		{name: "undrain without zone", args: []string{"undrain"}, wantCode: 2, wantStderr: "missing ZONE"},
		{name: "undrain extra", args: []string{"undrain", "b", "c"}, wantCode: 2, wantStderr: `"c"`},
		{name: "replace warm", args: []string{"replace", "mc-1", "--reason", "retire"}, body: `{"slot":3,"from":"mc-1","to":"mc-9","warm":true}`,
			wantStdout: "slot 3: from mc-1 to mc-9 (warm: mc-1 stays the slot's warm source until --warm-for passes)\n",
			wantReq:    []seenRequest{{method: "POST", path: "/v1/nodes/mc-1/replace", auth: auth, body: `{"reason":"retire"}`}}},
		{name: "replace cold", args: []string{"replace", "mc-1", "--reason", "retire"}, body: `{"slot":0,"from":"mc-1","to":"mc-2","warm":false}`,
			wantStdout: "slot 0: from mc-1 to mc-2 (cold (mc-1 did not answer, or --warm-for is 0s): the slot starts empty)\n",
			wantReq:    []seenRequest{{method: "POST", path: "/v1/nodes/mc-1/replace", auth: auth, body: `{"reason":"retire"}`}}},
		{name: "replace refused", args: []string{"replace", "mc-1", "--reason", "r"}, code: 409, body: `{"error":"membership is frozen"}`,
			wantCode: 1, wantStderr: "membership is frozen",
			wantReq: []seenRequest{{method: "POST", path: "/v1/nodes/mc-1/replace", auth: auth, body: `{"reason":"r"}`}}},
		{name: "replace without node", args: []string{"replace", "--reason", "r"}, wantCode: 2, wantStderr: "missing NODE"},
		{name: "replace without reason", args: []string{"replace", "mc-1"}, wantCode: 2, wantStderr: "--reason"},
		{name: "replace extra", args: []string{"replace", "mc-1", "mc-2", "--reason=r"}, wantCode: 2, wantStderr: `"mc-2"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &zoneFake{code: tt.code, body: tt.body}
			srv := startFake(t, fake)
			code, stdout, stderr := runCLI(t, tok, append(tt.args, "--addr", srv.URL)...)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tt.wantCode, stderr)
			}
			if stdout != tt.wantStdout {
				t.Errorf("stdout\n got %q\nwant %q\n%s", stdout, tt.wantStdout, stdout)
			}
			if tt.wantStderr == "" && stderr != "" || !strings.Contains(stderr, tt.wantStderr) {
				t.Errorf("stderr %q, want %q", stderr, tt.wantStderr)
			}
			wantRequests(t, fake.requests(), tt.wantReq)
		})
	}
}

func TestStatusShowsZones(t *testing.T) {
	srv := httptest.NewServer(&zoneFake{})
	defer srv.Close()
	code, stdout, stderr := runCLI(t, nil, "status", "--addr", srv.URL)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"zone alert:", "mcrib drain b",
		"warming (slot 3), drained",
		"zones:\nZONE    NODES",
		"draining: 2 slots to move, 0 left of a baseline of 5",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("status output lacks %q:\n%s", want, stdout)
		}
	}
}
