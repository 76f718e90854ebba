package main

import (
	"strings"
	"testing"
)

func TestClosest(t *testing.T) {
	cmds := commandNames()
	for _, tc := range []struct {
		word, want string
		ok         bool
	}{
		{"stauts", "status", true}, // two letters swapped
		{"statsu", "status", true},
		{"stat", "status", true}, // a prefix of one command
		{"slot", "slots", true},
		{"frezee", "freeze", true},
		{"unfreez", "unfreeze", true},
		{"drian", "drain", true},
		{"ratelimt", "ratelimit", true},
		{"STATUS", "status", true},
		{"restart", "", false}, // nothing near
		{"x", "", false},
		{"s", "", false}, // too short to guess
	} {
		got, ok := closest(tc.word, cmds)
		if got != tc.want || ok != tc.ok {
			t.Errorf("closest(%q) = %q, %v; want %q, %v", tc.word, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := closest("ab", []string{"ac", "ad"}); ok {
		t.Errorf("closest chose between two candidates equally near")
	}
}

// TestTypoSuggestions checks that a mistyped command or flag is answered
// with the one it most likely meant, in one line, and exit 2.
func TestTypoSuggestions(t *testing.T) {
	srv := startFake(t, &fakeAPI{})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"stauts"}, "mcrib: unknown command \"stauts\"; did you mean \"status\"?\n(mcrib help lists the commands)\n"},
		{[]string{"drian", "b"}, `unknown command "drian"; did you mean "drain"?`},
		{[]string{"help", "stauts"}, "mcrib help: unknown command \"stauts\"; did you mean \"status\"?\n"},
		{[]string{"status", "--jsno", "--addr", srv.URL}, "mcrib status: unknown flag --jsno; did you mean --json?\n"},
		{[]string{"drain", "b", "--reasn", "x"}, "mcrib drain: unknown flag --reasn; did you mean --reason?\n"},
		{[]string{"ratelimit", "set", "5", "--brust", "2"}, "unknown flag --brust; did you mean --burst?"},
		{[]string{"freeze", "--froce", "--reason", "x"}, "unknown flag --froce; did you mean --force?"},
		{[]string{"--adr", srv.URL, "status"}, "mcrib: unknown flag --adr before the command; did you mean --addr?"},
		{[]string{"ratelimit", "aut"}, `mcrib ratelimit: unknown subcommand "aut"; did you mean "auto"? (want set or auto)`},
		{[]string{"ratelimit", "st", "50"}, `unknown subcommand "st"; did you mean "set"?`},
	} {
		code, stdout, stderr := runCLI(t, nil, tc.args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("mcrib %s: exit %d, stdout %q, stderr %q; want 2 and %q", strings.Join(tc.args, " "), code, stdout, stderr, tc.want)
		}
	}
	// Without a likely candidate, the list of commands is the help.
	code, _, stderr := runCLI(t, nil, "restart")
	if code != 2 || strings.Contains(stderr, "did you mean") || !strings.Contains(stderr, "commands:") {
		t.Errorf("mcrib restart: exit %d, stderr %q; want 2, no guess, and the list of commands", code, stderr)
	}
	if code, _, stderr := runCLI(t, nil, "status", "--verbose"); code != 2 || strings.Contains(stderr, "did you mean") {
		t.Errorf("mcrib status --verbose: exit %d, stderr %q; want 2 and no guess", code, stderr)
	}
}
