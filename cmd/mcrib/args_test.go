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
			fs, addr := clientFlags("ratelimit")
			burst := fs.String("burst", "", "")
			pos, err := parseInterspersed(fs, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(pos, "|") != strings.Join(tt.wantPos, "|") || *addr != tt.wantAddr || *burst != tt.wantBurst {
				t.Errorf("got pos %q addr %q burst %q, want %q %q %q", pos, *addr, *burst, tt.wantPos, tt.wantAddr, tt.wantBurst)
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
