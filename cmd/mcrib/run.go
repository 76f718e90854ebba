package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
)

// usage is the top-level help text.
const usage = `usage: mcrib <command> [flags]

commands:
  serve                    run the control plane (mcrib serve -h lists its flags)
  status [--json]          print the status of a running server
  slots [--json]           print the slot map
  freeze --reason TEXT     freeze membership changes
  unfreeze                 lift the freeze
  ratelimit [--json]       print the boot limit
  ratelimit set N [--burst B]
                           pin the boot limit to N boots/s
  ratelimit auto           hand the boot limit back to the controller
  version                  print the version
  help [command]           print this text, or the help of one command

The client commands take --addr URL (default http://127.0.0.1:7070, env
MCRIB_ADDR) and send the token from env MCRIB_TOKEN when it is set. They exit
0 on success, 1 when the server answers with an error or cannot be reached,
and 2 on a usage error.
`

// run executes the mcrib command line args (without the program name) and
// returns the process exit code: 0 success, 1 failure, 2 usage error. It reads
// the environment only through getenv and writes only to stdout and stderr,
// so tests call it directly.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	c := cli{stdout: stdout, stderr: stderr, getenv: getenv}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "serve":
		return serveCommand(ctx, rest, stdout, stderr, getenv)
	case "status":
		return c.status(ctx, rest)
	case "slots":
		return c.slots(ctx, rest)
	case "freeze":
		return c.freeze(ctx, rest)
	case "unfreeze":
		return c.unfreeze(ctx, rest)
	case "ratelimit":
		return c.ratelimit(ctx, rest)
	case "version":
		return c.version(rest)
	case "help", "-h", "-help", "--help":
		return help(rest, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "mcrib: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
}

// serveCommand parses the serve flags and hands over to runServe. A bad flag
// is one line on stderr and exit 2; -h prints the flag help on stdout.
func serveCommand(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	cfg, err := parseServeConfig(args, getenv)
	if errors.Is(err, flag.ErrHelp) {
		printServeHelp(stdout)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcrib serve: %v\n", err)
		return 2
	}
	return runServe(ctx, cfg, stdout, stderr)
}

// help prints the top-level usage, or the help of one command.
func help(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		fmt.Fprint(stdout, usage)
		return 0
	case len(args) > 1:
		fmt.Fprintf(stderr, "mcrib help: too many arguments\n\n%s", usage)
		return 2
	case args[0] == "serve":
		printServeHelp(stdout)
		return 0
	}
	if u, ok := commandUsage(args[0]); ok {
		fmt.Fprintln(stdout, u)
		return 0
	}
	fmt.Fprintf(stderr, "mcrib help: unknown command %q\n\n%s", args[0], usage)
	return 2
}
