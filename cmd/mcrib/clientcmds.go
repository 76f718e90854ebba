package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/mcrib/mcrib/internal/cli"
	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/ratelimit"
)

// The client commands: each parses its arguments (a usage error exits
// 2), connects to the operator API as the client flags say and runs its
// call through internal/cli, which prints the answer.

// followEvery is how often `mcrib events --follow` asks for new events
// (a variable for the tests).
var followEvery = time.Second

// eventsUsage is the usage of `mcrib events`.
const eventsUsage = "usage: mcrib events [--follow] [--json] " + clientUsage

// clientCall is what a client command does once its arguments are
// checked: one call of internal/cli.
type clientCall func(*cli.Client, context.Context) error

// runClient is the part every client command shares: it parses args into
// fs (the client flags o holds and the command's own), hands the
// positional arguments to check, which returns the command's call or a
// usage error, then connects as o says and makes the call.
func (c proc) runClient(ctx context.Context, fs *flag.FlagSet, o *clientOptions, args []string, check func(pos []string) (clientCall, error)) error {
	pos, err := parseClientArgs(fs, args)
	if err != nil {
		return err
	}
	call, err := check(pos)
	if err != nil {
		return err
	}
	cl, err := c.connect(o)
	if err != nil {
		return err
	}
	defer cl.Close()
	return call(cl, ctx)
}

// noArgs is the check of a command that takes no positional argument.
func noArgs(call clientCall) func(pos []string) (clientCall, error) {
	return func(pos []string) (clientCall, error) {
		if len(pos) > 0 {
			return nil, usageError("unexpected argument %q", pos[0])
		}
		return call, nil
	}
}

// needReason refuses an empty --reason.
func needReason(reason string) error {
	if strings.TrimSpace(reason) == "" {
		return usageError("--reason is required and must not be empty")
	}
	return nil
}

// status prints GET /v1/status.
func (c proc) status(ctx context.Context, args []string) error {
	fs, o := clientFlags("status")
	return c.runClient(ctx, fs, o, args, noArgs((*cli.Client).Status))
}

// slots prints GET /v1/slotmap.
func (c proc) slots(ctx context.Context, args []string) error {
	fs, o := clientFlags("slots")
	return c.runClient(ctx, fs, o, args, noArgs((*cli.Client).Slots))
}

// freeze sends PUT /v1/freeze, after checking that the pool is not frozen
// by another operator already (whose reason the freeze would replace)
// unless --force is given.
func (c proc) freeze(ctx context.Context, args []string) error {
	fs, o := clientFlags("freeze")
	reason := fs.String("reason", "", "why membership is frozen, up to 512 characters (required)")
	force := fs.Bool("force", false, "replace a freeze that another operator set")
	return c.runClient(ctx, fs, o, args, func(pos []string) (clientCall, error) {
		if len(pos) > 0 {
			return nil, usageError("unexpected argument %q", pos[0])
		}
		if err := needReason(*reason); err != nil {
			return nil, err
		}
		return func(cl *cli.Client, ctx context.Context) error { return cl.Freeze(ctx, *reason, *force) }, nil
	})
}

// unfreeze sends DELETE /v1/freeze.
func (c proc) unfreeze(ctx context.Context, args []string) error {
	fs, o := clientFlags("unfreeze")
	return c.runClient(ctx, fs, o, args, noArgs((*cli.Client).Unfreeze))
}

// ratelimit prints GET /v1/ratelimit, or changes it with `set N` or `auto`.
func (c proc) ratelimit(ctx context.Context, args []string) error {
	fs, o := clientFlags("ratelimit")
	burst := fs.Int("burst", 0, "bucket size, whole boots >= 1 (with set or auto)")
	explainFlag(fs, "burst", errNotInteger)
	return c.runClient(ctx, fs, o, args, func(pos []string) (clientCall, error) {
		req, err := rateLimitChange(pos)
		if err != nil {
			return nil, err
		}
		switch burstGiven := given(fs, "burst"); {
		case burstGiven && req == nil:
			return nil, usageError("--burst goes with set or auto")
		case burstGiven && *burst < 1:
			return nil, usageError("--burst must be a whole number of at least 1, got %q", strconv.Itoa(*burst))
		case burstGiven:
			req.Burst = burst
		}
		return func(cl *cli.Client, ctx context.Context) error { return cl.RateLimit(ctx, req) }, nil
	})
}

// events prints GET /v1/events; with --follow it then asks for the events
// after the last one printed every second until interrupted.
func (c proc) events(ctx context.Context, args []string) error {
	fs, o := clientFlags("events")
	fs.Lookup("json").Usage = "print each event as one line of JSON"
	follow := fs.Bool("follow", false, "keep printing new events until interrupted")
	return c.runClient(ctx, fs, o, args, noArgs(func(cl *cli.Client, ctx context.Context) error { return cl.Events(ctx, *follow) }))
}

// rateLimitChange reads the positional arguments of `mcrib ratelimit`: none
// (a read, nil), `set N` or `auto`.
func rateLimitChange(pos []string) (*mcribapi.BootLimitRequest, error) {
	switch {
	case len(pos) == 0:
		return nil, nil
	case pos[0] == "set":
		if len(pos) < 2 {
			return nil, usageError("set needs a limit in boots/s")
		}
		if len(pos) > 2 {
			return nil, usageError("unexpected argument %q", pos[2])
		}
		n, err := strconv.ParseFloat(pos[1], 64)
		if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
			return nil, usageError("set: limit %q is not a number", pos[1])
		}
		if n < 0 {
			return nil, usageError("set: limit must not be negative, got %s", pos[1])
		}
		return &mcribapi.BootLimitRequest{Mode: ratelimit.ModeManual, Limit: &n}, nil
	case pos[0] == "auto":
		if len(pos) > 1 {
			return nil, usageError("unexpected argument %q", pos[1])
		}
		return &mcribapi.BootLimitRequest{Mode: ratelimit.ModeAuto}, nil
	}
	return nil, usageError("unknown subcommand %q%s (want set or auto)", pos[0], didYouMean(pos[0], []string{"set", "auto"}, ""))
}

// version prints the version.
func (c proc) version(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("mcrib version", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	asJSON := fs.Bool("json", false, "print the version as JSON: {\"version\": \"…\", \"go\": \"…\"}")
	pos, err := parseClientArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError("unexpected argument %q", pos[0])
	}
	if *asJSON {
		b, err := json.Marshal(struct {
			Version string `json:"version"`
			Go      string `json:"go"`
		}{version, runtime.Version()})
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "%s\n", b)
		return nil
	}
	fmt.Fprintf(c.stdout, "mcrib %s\n", version)
	return nil
}
