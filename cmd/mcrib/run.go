package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"time"
)

// cli is what a command may touch of the process: its output streams, its
// environment, its clock (for "2 s ago") and the host's name (for the
// default --who). Its zero value is not usable: every field must be set.
// It holds no state between commands.
type cli struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	now            func() time.Time
	hostname       func() (string, error)
	// account returns the login name of the user this process runs as
	// ("" when unknown): the operator's name when neither USER nor
	// LOGNAME is set (under sudo -i, cron or systemd). nil is "".
	account func() string
}

// run executes the mcrib command line args (without the program name) and
// returns the process exit code: 0 success, 1 failure, 2 usage error. It reads
// the environment only through getenv and writes only to stdout and stderr,
// so tests call it directly.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	c := cli{stdout: stdout, stderr: stderr, getenv: getenv, now: time.Now, hostname: os.Hostname, account: accountName}
	return c.main(ctx, args)
}

// main runs the command line args and returns the exit code. The client
// flags may come before the command ("mcrib --addr URL status"): they are
// handed to the command with its own arguments.
func (c cli) main(ctx context.Context, args []string) int {
	lead, args, err := leadingFlags(args)
	if err != nil {
		fmt.Fprintf(c.stderr, "mcrib: %v\n", err)
		return 2
	}
	if len(args) == 0 {
		if len(lead) > 0 {
			fmt.Fprintf(c.stderr, "mcrib: %s: which command? (mcrib help lists them)\n", lead[0])
			return 2
		}
		fmt.Fprint(c.stderr, usageText())
		return 2
	}
	cmd, ok := lookupCommand(args[0])
	if !ok {
		if hint := didYouMean(args[0], commandNames(), ""); hint != "" {
			fmt.Fprintf(c.stderr, "mcrib: unknown command %q%s\n(mcrib help lists the commands)\n", args[0], hint)
			return 2
		}
		fmt.Fprintf(c.stderr, "mcrib: unknown command %q\n\n%s", args[0], usageText())
		return 2
	}
	if len(lead) > 0 && !cmd.client {
		fmt.Fprintf(c.stderr, "mcrib %s: %s is a flag of the client commands (status, freeze, drain…), which talk to a running mcrib; %s takes none of them (mcrib help %s)\n",
			cmd.name, lead[0], cmd.name, cmd.name)
		return 2
	}
	return c.exitCode(cmd, cmd.run(c, ctx, append(lead, args[1:]...)))
}

// exitCode reports the outcome err of cmd and returns the exit code: 0 for
// no error and for a help request (the help goes to stdout), the code of an
// *exitError, and 1 for any other error.
func (c cli) exitCode(cmd command, err error) int {
	if err == nil {
		return 0
	}
	if errors.Is(err, flag.ErrHelp) {
		var hr *helpRequest
		if errors.As(err, &hr) {
			cmd.printHelp(c.stdout, hr.fs)
		} else {
			cmd.printHelp(c.stdout, nil)
		}
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
		fmt.Fprintf(c.stderr, "(mcrib help %s lists its flags, with an example)\n", cmd.name)
	}
	return code
}

// accountName returns the login name of the user this process runs as,
// "" when it cannot be told.
func accountName() string {
	u, err := user.Current()
	if err != nil {
		return ""
	}
	return u.Username
}
