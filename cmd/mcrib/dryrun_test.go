package main

import (
	"strings"
	"testing"
)

const predictionJSON = `{"action":"drain","duration":"4m30s","lowest_hit_rate":0.95,"extra_misses":12000,"lowest_boot_limit":1000,"blocked":""}`

// TestDryRun: mcrib drain and mcrib resize with --dry-run send POST
// /v1/whatif with their own request (the reason optional) and print the
// prediction; they start nothing.
func TestDryRun(t *testing.T) {
	tok := map[string]string{"MCRIB_TOKEN": fakeToken}
	auth := "Bearer " + fakeToken
	printed := "what-if, the drain of zone b (simulated on the pool as it is now; nothing was started):\n" +
		"  duration: 4m30s (until it is over and no slot warms)\n" +
		"  lowest hit rate: 95.00% (of 5 seconds)\n" +
		"  extra misses: 12000 (database reads beyond the same time without it)\n" +
		"  lowest boot limit: 1000 boots/s\n"
	tests := []struct {
		name       string
		args       []string
		code       int
		body       string
		wantCode   int
		wantStdout string
		wantStderr string
		wantReq    []seenRequest
	}{
		{name: "drain", args: []string{"drain", "b", "--dry-run", "--step", "50", "--every", "5s"}, body: predictionJSON, wantStdout: printed,
			wantReq: []seenRequest{{method: "POST", path: "/v1/whatif", auth: auth,
				body: `{"action":"drain","step_interval":"5s","step_percent":50,"zone":"b"}`}}},
		{name: "drain with a reason", args: []string{"drain", "b", "--dry-run", "--reason", "r", "--percent", "50"}, body: predictionJSON, wantStdout: printed,
			wantReq: []seenRequest{{method: "POST", path: "/v1/whatif", auth: auth,
				body: `{"action":"drain","percent":50,"reason":"r","zone":"b"}`}}},
		{name: "drain json", args: []string{"drain", "b", "--dry-run", "--json"}, body: predictionJSON, wantStdout: predictionJSON + "\n",
			wantReq: []seenRequest{{method: "POST", path: "/v1/whatif", auth: auth, body: `{"action":"drain","zone":"b"}`}}},
		{name: "resize", args: []string{"resize", "--slots", "32", "--dry-run"},
			body:       strings.Replace(predictionJSON, `"drain"`, `"resize"`, 1),
			wantStdout: "what-if, the resize (simulated on the pool as it is now; nothing was started):\n  duration: 4m30s",
			wantReq:    []seenRequest{{method: "POST", path: "/v1/whatif", auth: auth, body: `{"action":"resize","num_slots":32}`}}},
		{name: "blocked", args: []string{"resize", "--slots", "32", "--dry-run"},
			body:       `{"action":"resize","duration":"0s","lowest_hit_rate":0.97,"extra_misses":0,"lowest_boot_limit":1000,"blocked":"cannot resize the pool now: zone \"b\" is drained"}`,
			wantStdout: "what-if, the resize (simulated on the pool as it is now; nothing was started):\n  blocked: cannot resize the pool now: zone \"b\" is drained\n",
			wantReq:    []seenRequest{{method: "POST", path: "/v1/whatif", auth: auth, body: `{"action":"resize","num_slots":32}`}}},
		{name: "unknown zone", args: []string{"drain", "x", "--dry-run"}, code: 404, body: `{"error":"no node is known in zone \"x\""}`,
			wantCode: 1, wantStderr: `no node is known in zone "x"`,
			wantReq: []seenRequest{{method: "POST", path: "/v1/whatif", auth: auth, body: `{"action":"drain","zone":"x"}`}}},
		{name: "resize without slots", args: []string{"resize", "--dry-run"}, wantCode: 2, wantStderr: "--slots is required"},
		{name: "resize stop", args: []string{"resize", "stop", "--dry-run"}, wantCode: 2, wantStderr: "--dry-run"},
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
