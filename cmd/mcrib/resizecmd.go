package main

import (
	"context"
	"strconv"

	"github.com/mcrib/mcrib/internal/cli"
	"github.com/mcrib/mcrib/mcribapi"
)

// resize prints GET /v1/resize; with --slots it sends PUT /v1/resize (a
// start, or with the pool's own count the resume of a stopped resize);
// `mcrib resize stop` sends DELETE /v1/resize.
func (c proc) resize(ctx context.Context, args []string) error {
	fs, o := clientFlags("resize")
	slots := fs.Int("slots", 0, "the pool's new slot count `N`: twice its slots (or its slots, to resume a stopped resize)")
	reason := fs.String("reason", "", "why the pool grows, up to 512 characters (required with --slots)")
	step := fs.Int("step", 0, "share of the twins one step splits, `S` from 1 to 100 (server default 10)")
	every := fs.String("every", "", "time between steps, a duration `D` from 1s to 1h (server default 30s)")
	dryRun := dryRunFlag(fs)
	explainFlag(fs, "slots", errNotInteger)
	explainFlag(fs, "step", errNotInteger)
	return c.runClient(ctx, fs, o, args, func(pos []string) (clientCall, error) {
		starting := given(fs, "slots") || given(fs, "reason") || given(fs, "step") || given(fs, "every") || *dryRun
		switch {
		case len(pos) > 1 || (len(pos) == 1 && pos[0] != "stop"):
			return nil, usageError("unexpected argument %q (mcrib resize takes only stop)", pos[len(pos)-1])
		case len(pos) == 1 && starting:
			return nil, usageError("mcrib resize stop takes no --slots, --reason, --step, --every or --dry-run")
		case len(pos) == 1:
			return (*cli.Client).StopResize, nil
		case !starting:
			return (*cli.Client).Resize, nil
		case !given(fs, "slots") || *slots < 1:
			return nil, usageError("--slots is required to start a resize: twice the pool's slots, a power of two up to 4096, got %q", strconv.Itoa(*slots))
		}
		if err := needReason(*reason); err != nil && !*dryRun {
			return nil, err
		}
		req := mcribapi.ResizeRequest{NumSlots: *slots, Reason: *reason}
		if given(fs, "step") {
			req.StepPercent = step
		}
		var err error
		if req.StepInterval, err = stepEvery(fs, every); err != nil {
			return nil, err
		}
		if *dryRun {
			return func(cl *cli.Client, ctx context.Context) error { return cl.WhatIf(ctx, mcribapi.WhatIfResize, "", req) }, nil
		}
		return func(cl *cli.Client, ctx context.Context) error { return cl.StartResize(ctx, req) }, nil
	})
}
