package main

import (
	"strings"
	"testing"
)

func TestParseInterspersed(t *testing.T) {
	tests := []struct {
		args      []string
		wantPos   []string
		wantAddr  string
		wantBurst string
	}{
		{args: []string{"set", "5", "--burst", "3"}, wantPos: []string{"set", "5"}, wantBurst: "3"},
		{args: []string{"--addr", "x:1", "set", "-5"}, wantPos: []string{"set", "-5"}, wantAddr: "x:1"},
		{args: []string{"set", "--burst=-2", "7"}, wantPos: []string{"set", "7"}, wantBurst: "-2"},
		{args: []string{"--", "--addr", "y"}, wantPos: []string{"--addr", "y"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			fs, o := clientFlags("ratelimit")
			burst := fs.String("burst", "", "")
			pos, err := parseInterspersed(fs, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(pos, "|") != strings.Join(tt.wantPos, "|") || o.addr != tt.wantAddr || *burst != tt.wantBurst {
				t.Errorf("got pos %q addr %q burst %q, want %q %q %q", pos, o.addr, *burst, tt.wantPos, tt.wantAddr, tt.wantBurst)
			}
		})
	}
}

func TestDashDash(t *testing.T) {
	for in, want := range map[string]string{
		"flag provided but not defined: -bogus":             "flag provided but not defined: --bogus",
		"flag provided but not defined: --bogus":            "flag provided but not defined: --bogus",
		"flag needs an argument: -hold":                     "flag needs an argument: --hold",
		`invalid value "x" for flag -hold: not a duration`:  `invalid value "x" for --hold: not a duration`,
		`invalid boolean value "x" for -json: parse error`:  `invalid boolean value "x" for --json: parse error`,
		`invalid boolean value "x" for --json: parse error`: `invalid boolean value "x" for --json: parse error`,
	} {
		if got := dashDash(in); got != want {
			t.Errorf("dashDash(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestFlagsBeforeCommand checks that the client flags work before the
// command name as after it, and that anything else there is explained, never
// taken for the command.
func TestFlagsBeforeCommand(t *testing.T) {
	srv := startFake(t, &fakeAPI{})
	for _, tc := range []struct {
		args       []string
		wantCode   int
		wantStdout string // exact, when wantCode is 0
		wantStderr string // substring
	}{
		{args: []string{"--addr", srv.URL, "status"}, wantStdout: statusOut},
		{args: []string{"--addr=" + srv.URL, "--json", "status"}, wantStdout: statusJSON + "\n"},
		{args: []string{"--json", "slots", "--addr", srv.URL}, wantStdout: slotMapJSON + "\n"},
		{args: []string{"--addr", srv.URL, "--", "ratelimit"}, wantStdout: rateLimitOut},
		{args: []string{"--addr", srv.URL, "serve"}, wantCode: 2,
			wantStderr: "mcrib serve: --addr is a flag of the client commands (status, freeze, drain…), which talk to a running mcrib; serve takes none of them"},
		{args: []string{"--addr", srv.URL, "version"}, wantCode: 2, wantStderr: "version takes none of them"},
		{args: []string{"--addr", srv.URL}, wantCode: 2, wantStderr: "mcrib: --addr: which command?"},
		{args: []string{"--addr"}, wantCode: 2, wantStderr: "mcrib: --addr needs a value"},
		{args: []string{"--verbose", "status"}, wantCode: 2,
			wantStderr: "mcrib: unknown flag --verbose before the command (only the client flags --addr, --json, --token-file, --who may come before it)"},
		{args: []string{"--help"}, wantStdout: usageText()},
	} {
		code, stdout, stderr := runCLI(t, nil, tc.args...)
		if code != tc.wantCode || !strings.Contains(stderr, tc.wantStderr) || (tc.wantCode == 0 && stdout != tc.wantStdout) {
			t.Errorf("mcrib %s: exit %d, stdout %q, stderr %q; want %d, %q, %q", strings.Join(tc.args, " "), code, stdout, stderr,
				tc.wantCode, tc.wantStdout, tc.wantStderr)
		}
		if strings.Contains(stderr, "unknown command") {
			t.Errorf("mcrib %s: a flag was taken for the command: %q", strings.Join(tc.args, " "), stderr)
		}
	}
}
