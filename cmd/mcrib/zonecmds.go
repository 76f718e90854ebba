package main

import (
	"context"
	"flag"
	"strings"
	"time"

	"github.com/mcrib/mcrib/internal/cli"
	"github.com/mcrib/mcrib/mcribapi"
)

// The zone commands: zones, drain, undrain and replace.

// zones prints the zones of GET /v1/status, one line each; --json prints
// the status document's "zones" array as it came.
func (c proc) zones(ctx context.Context, args []string) error {
	fs, o := clientFlags("zones")
	fs.Lookup("json").Usage = "print the status document's array of zones as it came"
	return c.runClient(ctx, fs, o, args, noArgs((*cli.Client).Zones))
}

// drain sends PUT /v1/drain/ZONE and prints the zone's entry.
func (c proc) drain(ctx context.Context, args []string) error {
	fs, o := clientFlags("drain")
	reason := fs.String("reason", "", "why the zone is drained, up to 512 characters (required)")
	percent := fs.Int("percent", 0, "share of the zone's slots to move off it, `P` from 1 to 100 (server default 100)")
	step := fs.Int("step", 0, "share of the zone's slots one step moves, `S` from 1 to 100 (server default 10)")
	every := fs.String("every", "", "time between steps, a duration `D` from 1s to 1h (server default 30s)")
	dryRun := dryRunFlag(fs)
	explainFlag(fs, "percent", errNotInteger)
	explainFlag(fs, "step", errNotInteger)
	return c.runClient(ctx, fs, o, args, func(pos []string) (clientCall, error) {
		zone, err := onePositional(pos, "ZONE")
		if err != nil {
			return nil, err
		}
		if err := needReason(*reason); err != nil && !*dryRun {
			return nil, err
		}
		req := mcribapi.DrainRequest{Reason: *reason}
		if given(fs, "percent") {
			req.Percent = percent
		}
		if given(fs, "step") {
			req.StepPercent = step
		}
		if req.StepInterval, err = stepEvery(fs, every); err != nil {
			return nil, err
		}
		if *dryRun {
			return func(cl *cli.Client, ctx context.Context) error {
				return cl.WhatIf(ctx, mcribapi.WhatIfDrain, zone, req)
			}, nil
		}
		return func(cl *cli.Client, ctx context.Context) error { return cl.Drain(ctx, zone, req) }, nil
	})
}

// undrain sends DELETE /v1/drain/ZONE and prints the zone's entry.
func (c proc) undrain(ctx context.Context, args []string) error {
	fs, o := clientFlags("undrain")
	return c.runClient(ctx, fs, o, args, func(pos []string) (clientCall, error) {
		zone, err := onePositional(pos, "ZONE")
		if err != nil {
			return nil, err
		}
		return func(cl *cli.Client, ctx context.Context) error { return cl.Undrain(ctx, zone) }, nil
	})
}

// replace sends POST /v1/nodes/NODE/replace and prints the move.
func (c proc) replace(ctx context.Context, args []string) error {
	fs, o := clientFlags("replace")
	reason := fs.String("reason", "", "why the node is replaced, up to 512 characters (required)")
	return c.runClient(ctx, fs, o, args, func(pos []string) (clientCall, error) {
		node, err := onePositional(pos, "NODE")
		if err != nil {
			return nil, err
		}
		if err := needReason(*reason); err != nil {
			return nil, err
		}
		return func(cl *cli.Client, ctx context.Context) error { return cl.Replace(ctx, node, *reason) }, nil
	})
}

// onePositional returns the one positional argument a command takes,
// named what in its usage; none or more is a usage error.
func onePositional(pos []string, what string) (string, error) {
	switch {
	case len(pos) == 0:
		return "", usageError("missing %s", what)
	case len(pos) > 1:
		return "", usageError("unexpected argument %q", pos[1])
	case strings.TrimSpace(pos[0]) == "":
		return "", usageError("%s must not be empty", what)
	}
	return pos[0], nil
}

// stepEvery returns --every for a drain's or a resize's request: nil when
// it is not given, and a usage error when it is no duration.
func stepEvery(fs *flag.FlagSet, every *string) (*string, error) {
	if !given(fs, "every") {
		return nil, nil
	}
	if _, err := time.ParseDuration(*every); err != nil {
		return nil, usageError("invalid value %q for --every: not a duration (like 30s, 1m or 1m30s)", *every)
	}
	return every, nil
}
