package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
)

// cli is what a command may touch of the process: its output streams and
// its environment. Its zero value is not usable: every field must be set.
// It holds no state between commands.
type cli struct {
	stdout, stderr io.Writer
	getenv         func(string) string
}

// run executes the mcrib command line args (without the program name) and
// returns the process exit code: 0 success, 1 failure, 2 usage error. It reads
// the environment only through getenv and writes only to stdout and stderr,
// so tests call it directly.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText())
		return 2
	}
	cmd, ok := lookupCommand(args[0])
	if !ok {
		fmt.Fprintf(stderr, "mcrib: unknown command %q\n\n%s", args[0], usageText())
		return 2
	}
	c := cli{stdout: stdout, stderr: stderr, getenv: getenv}
	return c.exitCode(cmd, cmd.run(c, ctx, args[1:]))
}

// exitCode reports the outcome err of cmd and returns the exit code: 0 for
// no error and for a help request (the help goes to stdout), the code of an
// *exitError, and 1 for any other error.
func (c cli) exitCode(cmd command, err error) int {
	if err == nil {
		return 0
	}
	if errors.Is(err, flag.ErrHelp) {
		cmd.printHelp(c.stdout)
		return 0
	}
	code, usage := 1, false
	var ee *exitError
	if errors.As(err, &ee) {
		code, usage = ee.code, ee.usage
		if ee.err == nil {
			return code
		}
	}
	fmt.Fprintf(c.stderr, "mcrib %s: %v\n", cmd.name, err)
	if usage {
		fmt.Fprintln(c.stderr, cmd.usage)
	}
	return code
}
