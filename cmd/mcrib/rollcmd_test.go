package main

import (
	"strings"
	"testing"
)

// TestRollUsageErrors: mcrib roll refuses, with exit 2 and before any
// call, what a roll cannot be.
func TestRollUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"roll", "--all"}, "--reason is required"},
		{[]string{"roll", "--zone", "a", "--all", "--reason", "r"}, "exactly one of --zone, --nodes and --all"},
		{[]string{"roll", "--reason", "r"}, "exactly one of --zone, --nodes and --all"},
		{[]string{"roll", "--nodes", " , ", "--reason", "r"}, "--nodes needs at least one node ID"},
		{[]string{"roll", "--all", "--reason", "r", "--exec", " "}, "--exec needs a command"},
		{[]string{"roll", "stop", "--all"}, "mcrib roll stop takes no"},
		{[]string{"roll", "go"}, `unexpected argument "go"`},
	} {
		code, _, stderr := runCLI(t, nil, append(tc.args, "--addr", "http://127.0.0.1:1")...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("mcrib %s: exit %d, stderr %q; want 2 with %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
}
