package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mcrib/mcrib/internal/cli"
	"github.com/mcrib/mcrib/sim"
)

// simUsage is the usage line of `mcrib sim`.
const simUsage = "usage: mcrib sim [--scenario LIST] [--policy LIST] [--like URL] [--out DIR] [flags]"

// simFlags are the flags of `mcrib sim` bound to cfg; the pool's take the
// names of mcrib serve's.
func simFlags(cfg *sim.Config) (fs *flag.FlagSet, scenarios, policies, like, out *string) {
	fs = flag.NewFlagSet("mcrib sim", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	scenarios = fs.String("scenario", "all", "scenarios, comma-separated, or all: "+strings.Join(sim.Scenarios(), ", "))
	policies = fs.String("policy", "immediate,mcrib", "policies, comma-separated: immediate, mcrib, mcrib-cold (--warm-for 0s), adaptive, static:N")
	like = fs.String("like", "", "shape the pool like the running mcrib at this URL (GET /v1/status and /v1/slotmap)")
	out = fs.String("out", "", "write report.md, one SVG per scenario and results.json into this directory")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "random seed: the same flags give the same numbers")
	fs.IntVar(&cfg.Nodes, "nodes", 64, "memcached nodes")
	fs.IntVar(&cfg.Slots, "slots", 0, "slots, a power of two (0: the largest not above 7/8 of --nodes)")
	fs.DurationVar(&cfg.Duration, "duration", 0, "time simulated after the warmup (0: the scenario's own length)")
	fs.DurationVar(&cfg.Warmup, "warmup", 0, "time simulated before the scenario (0: 10m)")
	fs.DurationVar(&cfg.Hold, "hold", 0, "mcrib serve --hold (0: 60s)")
	fs.DurationVar(&cfg.ProbeInterval, "probe-interval", 0, "mcrib serve --probe-interval (0: 2s)")
	fs.DurationVar(&cfg.FlushAfterUnreachable, "flush-after-unreachable", 0, "mcrib serve --flush-after-unreachable")
	fs.Float64Var(&cfg.MaxAbsentFraction, "max-absent-fraction", 0, "mcrib serve --max-absent-fraction (0: 0.25)")
	fs.IntVar(&cfg.MaxReplacementsPerMinute, "max-replacements-per-minute", 0, "mcrib serve --max-replacements-per-minute (0: 2)")
	fs.DurationVar(&cfg.StatsInterval, "stats-interval", 0, "mcrib serve --stats-interval (0: 5s)")
	fs.Float64Var(&cfg.BootLimitMin, "boot-limit-min", 0, "mcrib serve --boot-limit-min (0: 10)")
	fs.Float64Var(&cfg.BootLimitMax, "boot-limit-max", 0, "mcrib serve --boot-limit-max (0: 1000)")
	fs.Float64Var(&cfg.HitRateLow, "hit-rate-low", 0, "mcrib serve --hit-rate-low (0: 0.80)")
	fs.Float64Var(&cfg.HitRateTarget, "hit-rate-target", 0, "mcrib serve --hit-rate-target (0: 0.90)")
	fs.DurationVar(&cfg.WarmFor, "warm-for", 0, "mcrib serve --warm-for (0: 2m; the policy mcrib-cold runs with 0s)")
	fs.DurationVar(&cfg.WarmMin, "warm-min", 0, "mcrib serve --warm-min: above 0 a warming ends once its new holder is warm (0: every warming lasts its --warm-for)")
	fs.Int64Var(&cfg.WarmCopyRate, "warm-copy-rate", 0, "mcrib serve --warm-copy-rate in bytes/s: above 0 the leader copies the hot keys (0: no copy)")
	fs.IntVar(&cfg.Clients, "clients", 0, "application processes reading the cache (0: 2000)")
	fs.Float64Var(&cfg.ReadsPerClient, "reads-per-client", 0, "reads a second per client (0: 10)")
	fs.IntVar(&cfg.SampledReads, "sampled-reads", 0, "reads a second simulated one by one at the full fleet (0: all; fewer is faster, but a sampled miss refills one key for all it stands for)")
	fs.IntVar(&cfg.ItemsPerNode, "items-per-node", 0, "items each memcached holds (0: 4000)")
	fs.IntVar(&cfg.Keys, "keys", 0, "distinct keys (0: 4 × slots × items per node)")
	fs.IntVar(&cfg.BootReads, "boot-reads", 0, "keys a client boot reads (0: 200)")
	fs.Float64Var(&cfg.DBCapacity, "db-capacity", 0, "database capacity, queries a second (0: 2400)")
	fs.Float64Var(&cfg.LossRate, "loss-rate", 0, "share of probes and Consul checks lost in packet-loss (0: 1e-4)")
	return fs, scenarios, policies, like, out
}

// printSimHelp writes the help of `mcrib sim`.
func printSimHelp(w io.Writer) {
	fmt.Fprintln(w, simUsage)
	fmt.Fprintln(w, "\nSimulates the cache tier on a simulated clock, driving mcrib's own control loop and boot limiter,")
	fmt.Fprintln(w, "and prints a table per scenario and policy (with --out, a Markdown report with SVG charts).")
	fmt.Fprintln(w, "\nFlags:")
	fs, _, _, _, _ := simFlags(&sim.Config{})
	fs.VisitAll(func(f *flag.Flag) {
		fmt.Fprintf(w, "  --%s\n        %s (default %q)\n", f.Name, f.Usage, f.DefValue)
	})
}

// sim runs `mcrib sim`.
func (c proc) sim(ctx context.Context, args []string) error {
	var cfg sim.Config
	fs, scenarioList, policyList, like, out := simFlags(&cfg)
	pos, err := parseClientArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError("unexpected argument %q", pos[0])
	}
	scenarios := sim.Scenarios()
	if *scenarioList != "all" {
		scenarios = strings.Split(*scenarioList, ",")
	}
	var policies []sim.Policy
	for _, p := range strings.Split(*policyList, ",") {
		pol, err := sim.ParsePolicy(strings.TrimSpace(p))
		if err != nil {
			return usageError("%v", err)
		}
		policies = append(policies, pol)
	}
	pool := "simulated"
	if *like != "" {
		shape, err := c.poolShape(ctx, *like)
		if err != nil {
			return err
		}
		cfg = shape.Apply(cfg)
		pool = fmt.Sprintf("like %s (pool %q)", *like, shape.Pool)
	}
	for _, sc := range scenarios {
		probe := cfg
		probe.Scenario, probe.Policy = sc, policies[0]
		for _, p := range policies {
			if sim.Applies(sc, p) {
				probe.Policy = p
				break
			}
		}
		if err := probe.WithDefaults().Validate(); err != nil {
			return usageError("%v", err)
		}
	}
	rs, err := sim.RunAll(ctx, cfg, scenarios, policies, func(r sim.Result) {
		fmt.Fprintf(c.stderr, "sim: %s under %s: %s simulated in %s (%.0f× real time)\n",
			r.Scenario, r.Policy, r.Simulated, r.Wall.Round(1e6), r.SpeedUp())
	})
	if err != nil {
		return err
	}
	for _, sc := range scenarios {
		fmt.Fprintf(c.stdout, "\n## %s\n\n", sc)
		var sub []sim.Result
		for _, r := range rs {
			if r.Scenario == sc {
				sub = append(sub, r)
			}
		}
		sim.WriteTable(c.stdout, sub)
	}
	checks := sim.Checks(rs)
	if len(checks) > 0 {
		fmt.Fprintln(c.stdout, "\n## Targets")
		for _, ch := range checks {
			mark := "met"
			if !ch.OK {
				mark = "NOT MET"
			}
			fmt.Fprintf(c.stdout, "- %s: %s (%s)\n", ch.Target, mark, ch.Detail)
		}
	}
	if *out == "" {
		return nil
	}
	meta := sim.ReportMeta{Command: "mcrib sim " + strings.Join(args, " "), Pool: pool, Config: cfg.WithDefaults()}
	if err := sim.WriteReport(*out, rs, meta); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	fmt.Fprintf(c.stdout, "\nreport written to %s\n", strings.TrimSuffix(*out, string(os.PathSeparator))+"/report.md")
	return nil
}

// poolShape reads the shape of the running pool at addr.
func (c proc) poolShape(ctx context.Context, addr string) (sim.Shape, error) {
	cl, err := c.connect(&clientOptions{addr: addr})
	if err != nil {
		return sim.Shape{}, err
	}
	defer cl.Close()
	// sim.ParseShape reads the documents and words what does not read.
	var unreadable *cli.DocumentError
	st, err := cl.API().Status(ctx)
	if err != nil && !errors.As(err, &unreadable) {
		return sim.Shape{}, err
	}
	m, err := cl.API().SlotMap(ctx)
	if err != nil && !errors.As(err, &unreadable) {
		return sim.Shape{}, err
	}
	shape, err := sim.ParseShape(st.Body, m.Body)
	if errors.Is(err, sim.ErrBadConfig) {
		return sim.Shape{}, fmt.Errorf("--like %s: %w", addr, err)
	}
	return shape, err
}
