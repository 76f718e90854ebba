package main

import (
	"strings"
	"testing"
)

const resizeAnswerJSON = `{"resize":{"from":16,"to":32,"reason":"grown past its slots","by":"ops","at":"2026-11-29T13:00:00Z",` +
	`"step_percent":10,"step_interval":"30s","last_step_at":"2026-11-29T13:00:00Z","twins":9,"split":7,"state":"splitting","blocked":""}}`

func TestResizeCommand(t *testing.T) {
	tok := map[string]string{"MCRIB_TOKEN": fakeToken}
	auth := "Bearer " + fakeToken
	splitting := "resize from 16 to 32 slots: splitting: 7 of 16 twins split, 9 left\n"
	tests := []struct {
		name       string
		args       []string
		code       int
		body       string
		wantCode   int
		wantStdout string // a prefix of stdout
		wantStderr string
		wantReq    []seenRequest
	}{
		{name: "none", args: []string{"resize"}, body: `{"resize":null}`, wantStdout: "no resize under way\n",
			wantReq: []seenRequest{{method: "GET", path: "/v1/resize", auth: auth}}},
		{name: "print", args: []string{"resize"}, body: resizeAnswerJSON, wantStdout: splitting,
			wantReq: []seenRequest{{method: "GET", path: "/v1/resize", auth: auth}}},
		{name: "json", args: []string{"resize", "--json"}, body: resizeAnswerJSON, wantStdout: resizeAnswerJSON + "\n",
			wantReq: []seenRequest{{method: "GET", path: "/v1/resize", auth: auth}}},
		{name: "start", args: []string{"resize", "--slots", "32", "--reason", "grown past its slots", "--step", "10", "--every", "30s"},
			body: resizeAnswerJSON, wantStdout: splitting,
			wantReq: []seenRequest{{method: "PUT", path: "/v1/resize", auth: auth,
				body: `{"num_slots":32,"reason":"grown past its slots","step_percent":10,"step_interval":"30s"}`}}},
		{name: "start sends only the flags given", args: []string{"resize", "--slots=32", "--reason=r"}, body: resizeAnswerJSON, wantStdout: splitting,
			wantReq: []seenRequest{{method: "PUT", path: "/v1/resize", auth: auth, body: `{"num_slots":32,"reason":"r"}`}}},
		{name: "start refused", args: []string{"resize", "--slots=48", "--reason=r"}, code: 400,
			body:     `{"error":"\"num_slots\" must be exactly twice the pool's 16 slots (32), not 48"}`,
			wantCode: 1, wantStderr: "exactly twice",
			wantReq: []seenRequest{{method: "PUT", path: "/v1/resize", auth: auth, body: `{"num_slots":48,"reason":"r"}`}}},
		{name: "stop", args: []string{"resize", "stop"}, body: strings.Replace(resizeAnswerJSON, `"splitting"`, `"stopped"`, 1),
			wantStdout: "resize from 16 to 32 slots: stopped: 7 of 16 twins split, 9 left",
			wantReq:    []seenRequest{{method: "DELETE", path: "/v1/resize", auth: auth}}},
		{name: "stop with none", args: []string{"resize", "stop"}, code: 404, body: `{"error":"no resize runs"}`,
			wantCode: 1, wantStderr: "no resize runs", wantReq: []seenRequest{{method: "DELETE", path: "/v1/resize", auth: auth}}},
		{name: "no reason", args: []string{"resize", "--slots", "32"}, wantCode: 2, wantStderr: "--reason"},
		{name: "no slots", args: []string{"resize", "--reason", "r"}, wantCode: 2, wantStderr: "--slots is required"},
		{name: "bad slots", args: []string{"resize", "--slots", "many", "--reason", "r"}, wantCode: 2, wantStderr: "--slots"},
		{name: "bad every", args: []string{"resize", "--slots", "32", "--reason", "r", "--every", "soon"}, wantCode: 2, wantStderr: "--every"},
		{name: "stop with flags", args: []string{"resize", "stop", "--slots", "32"}, wantCode: 2, wantStderr: "takes no --slots"},
		{name: "unknown word", args: []string{"resize", "start"}, wantCode: 2, wantStderr: `"start"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &zoneFake{code: tt.code, body: tt.body}
			srv := startFake(t, fake)
			code, stdout, stderr := runCLI(t, tok, append(tt.args, "--addr", srv.URL)...)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tt.wantCode, stderr)
			}
			if !strings.HasPrefix(stdout, tt.wantStdout) || (tt.wantStdout == "" && stdout != "") {
				t.Errorf("stdout\n got %q\nwant %q", stdout, tt.wantStdout)
			}
			if tt.wantStderr == "" && stderr != "" || !strings.Contains(stderr, tt.wantStderr) {
				t.Errorf("stderr %q, want %q", stderr, tt.wantStderr)
			}
			wantRequests(t, fake.requests(), tt.wantReq)
		})
	}
}
