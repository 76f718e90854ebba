package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// goOutput runs the go command in dir with env added to the process's
// environment and returns its standard output; on failure the error
// carries the tail of what it printed.
func goOutput(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, tail(stdout.String()+stderr.String(), 20))
	}
	return stdout.String(), nil
}

// passes runs go test with args in dir and reports whether it passed: a
// failing or hanging test (go test's -timeout) is a failure; an error is
// returned only when the go command could not run at all.
func passes(ctx context.Context, dir string, env []string, args ...string) (bool, string, error) {
	cmd := exec.CommandContext(ctx, "go", append([]string{"test"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err == nil {
		return true, "", nil
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return false, tail(string(out), 30), nil
	}
	return false, "", err
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// goflags returns GOFLAGS as the environment has it with flags added.
func goflags(flags ...string) string {
	return "GOFLAGS=" + strings.TrimSpace(os.Getenv("GOFLAGS")+" "+strings.Join(flags, " "))
}
