package main

import (
	"context"
	"strings"

	"github.com/mcrib/mcrib/internal/cli"
	"github.com/mcrib/mcrib/mcribapi"
)

// roll prints GET /v1/roll; with --zone, --nodes or --all it sends PUT
// /v1/roll (with --exec it stays in the foreground and runs the command
// for each released node); `mcrib roll stop` sends DELETE /v1/roll.
func (c proc) roll(ctx context.Context, args []string) error {
	fs, o := clientFlags("roll")
	zone := fs.String("zone", "", "roll every node of zone `Z`")
	nodes := fs.String("nodes", "", "roll these nodes, in this order: a comma-separated list of node IDs `A,B`")
	all := fs.Bool("all", false, "roll every node of the pool")
	reason := fs.String("reason", "", "why the nodes restart, up to 512 characters (required to start a roll)")
	timeout := fs.String("restart-timeout", "", "how long a released node may take to restart, a duration `D` from 10s to 1h (server default 10m)")
	execCmd := fs.String("exec", "", "stay in the foreground and run `CMD` through sh -c for each released node (MCRIB_NODE_ID, MCRIB_NODE_ADDR, MCRIB_NODE_AZ set)")
	return c.runClient(ctx, fs, o, args, func(pos []string) (clientCall, error) {
		starting := given(fs, "zone") || given(fs, "nodes") || given(fs, "all") || given(fs, "reason") || given(fs, "restart-timeout") || given(fs, "exec")
		switch {
		case len(pos) > 1 || (len(pos) == 1 && pos[0] != "stop"):
			return nil, usageError("unexpected argument %q (mcrib roll takes only stop)", pos[len(pos)-1])
		case len(pos) == 1 && starting:
			return nil, usageError("mcrib roll stop takes no --zone, --nodes, --all, --reason, --restart-timeout or --exec")
		case len(pos) == 1:
			return (*cli.Client).StopRoll, nil
		case !starting:
			return (*cli.Client).Roll, nil
		}
		req := mcribapi.RollRequest{Reason: *reason, All: *all}
		picked := 0
		if given(fs, "zone") {
			picked++
			req.Zone = zone
		}
		if given(fs, "nodes") {
			picked++
			for _, id := range strings.Split(*nodes, ",") {
				if id = strings.TrimSpace(id); id != "" {
					req.Nodes = append(req.Nodes, id)
				}
			}
			if len(req.Nodes) == 0 {
				return nil, usageError("--nodes needs at least one node ID")
			}
		}
		if *all {
			picked++
		}
		if picked != 1 {
			return nil, usageError("a roll takes exactly one of --zone, --nodes and --all")
		}
		if err := needReason(*reason); err != nil {
			return nil, err
		}
		if given(fs, "restart-timeout") {
			req.RestartTimeout = timeout
		}
		if given(fs, "exec") {
			if strings.TrimSpace(*execCmd) == "" {
				return nil, usageError("--exec needs a command")
			}
			cmd := *execCmd
			return func(cl *cli.Client, ctx context.Context) error { return cl.RollExec(ctx, req, cmd) }, nil
		}
		return func(cl *cli.Client, ctx context.Context) error { return cl.StartRoll(ctx, req) }, nil
	})
}
