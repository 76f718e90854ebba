package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// RunAll runs every scenario under every policy, base giving the rest of
// the configuration, and returns the results in that order. progress, when
// not nil, is called after each run.
func RunAll(ctx context.Context, base Config, scenarios []string, policies []Policy, progress func(Result)) ([]Result, error) {
	var out []Result
	for _, sc := range scenarios {
		for _, p := range policies {
			if !Applies(sc, p) {
				continue
			}
			cfg := base
			cfg.Scenario, cfg.Policy = sc, p
			r, err := Run(ctx, cfg)
			if err != nil {
				return nil, fmt.Errorf("%s under %s: %w", sc, p.Name, err)
			}
			if progress != nil {
				progress(r)
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// ReportMeta is what the report says of how it was made.
type ReportMeta struct {
	// Command is the command line that made it.
	Command string
	// Pool describes the pool shape (for --like, where it came from).
	Pool string
	// Config is the base configuration, after WithDefaults.
	Config Config
}

// WriteReport writes report.md, one SVG figure per scenario and
// results.json (the figures without wall-clock times) into dir.
func WriteReport(dir string, rs []Result, meta ReportMeta) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, sc := range scenariosOf(rs) {
		f, err := os.Create(filepath.Join(dir, sc+".svg"))
		if err != nil {
			return err
		}
		err = writeSVG(f, sc, resultsOf(rs, sc), meta.Config.DBCapacity)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	js, err := json.MarshalIndent(jsonResults(rs), "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	var b strings.Builder
	writeMarkdown(&b, rs, meta)
	return os.WriteFile(filepath.Join(dir, "report.md"), []byte(b.String()), 0o644)
}

// jsonResults returns rs for JSON: NaN values (no limit, no reads) become
// -1, which JSON can carry.
func jsonResults(rs []Result) []Result {
	out := slices.Clone(rs)
	for i := range out {
		s := slices.Clone(out[i].Series)
		for k := range s {
			for _, v := range []*float64{&s[k].HitRate, &s[k].DBLoad, &s[k].BootLimit} {
				if math.IsNaN(*v) || math.IsInf(*v, 0) {
					*v = -1
				}
			}
		}
		out[i].Series = s
	}
	return out
}

func scenariosOf(rs []Result) []string {
	var out []string
	for _, r := range rs {
		if !slices.Contains(out, r.Scenario) {
			out = append(out, r.Scenario)
		}
	}
	return out
}

func resultsOf(rs []Result, scenario string) []Result {
	var out []Result
	for _, r := range rs {
		if r.Scenario == scenario {
			out = append(out, r)
		}
	}
	return out
}

// WriteTable writes one scenario's table in Markdown.
func WriteTable(w io.Writer, rs []Result) {
	if len(rs) > 0 && rs[0].Scenario == ZoneDrain {
		writeZoneDrainTable(w, rs)
		return
	}
	if len(rs) > 0 && rs[0].Scenario == Grow {
		writeGrowTable(w, rs)
		return
	}
	fmt.Fprintln(w, "| policy | baseline hit rate | lowest hit rate | DB overload (s) | flushes | replacements | boots refused | back to 95% | speed-up |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rs {
		fmt.Fprintf(w, "| %s | %.2f%% | %.2f%% | %d | %d | %d | %d | %s | %.0f× |\n",
			r.Policy, 100*r.Baseline, 100*r.LowestHitRate, r.OverloadSeconds, r.Flushes, r.Replacements,
			r.BootsRefused, fmtRecovery(r), r.SpeedUp())
	}
}

func fmtRecovery(r Result) string {
	if !r.Recovered {
		return "not by the end"
	}
	return r.Recovery.Round(time.Second).String()
}

func writeMarkdown(b *strings.Builder, rs []Result, meta ReportMeta) {
	c := meta.Config
	// The slots and keys the runs had, when they agree: grow's defaults
	// differ from the other scenarios'.
	if len(rs) > 0 && rs[0].Keys > 0 && !slices.ContainsFunc(rs, func(r Result) bool { return r.Slots != rs[0].Slots || r.Keys != rs[0].Keys }) {
		c.Slots, c.Keys = rs[0].Slots, rs[0].Keys
	}
	fmt.Fprintf(b, "# mcrib sim report\n\nMade by `%s`.\n\n", meta.Command)
	fmt.Fprintf(b, "Pool: %s: %d nodes, %d slots; hold %s, probe interval %s, flush after %s unreachable, max absent fraction %.2f, %d replacements a minute, warm for %s; boot limit %g..%g boots/s, hit rate low %.2f, target %.2f, stats interval %s.\n\n",
		meta.Pool, c.Nodes, c.Slots, c.Hold, c.ProbeInterval, c.FlushAfterUnreachable, c.MaxAbsentFraction, c.MaxReplacementsPerMinute, c.WarmFor,
		c.BootLimitMin, c.BootLimitMax, c.HitRateLow, c.HitRateTarget, c.StatsInterval)
	fmt.Fprintf(b, "Workload: %d clients × %g reads/s (Zipf s=%g over %d keys, %d sampled a second), %d items per node, a boot reads %d keys, %g restarts per client-hour; database capacity %g queries/s. Seed %d; warmup %s.\n\n",
		c.Clients, c.ReadsPerClient, c.ZipfS, c.Keys, c.SampledReads, c.ItemsPerNode, c.BootReads, c.ChurnPerHour, c.DBCapacity, c.Seed, c.Warmup)
	b.WriteString(legend)
	if t := targets(rs); t != "" {
		b.WriteString("## Targets\n\n" + t + "\n")
	}
	for _, sc := range scenariosOf(rs) {
		sub := resultsOf(rs, sc)
		fmt.Fprintf(b, "## %s\n\n%s\n\n", sc, scenarioText[sc])
		WriteTable(b, sub)
		fmt.Fprintf(b, "\nSimulated %s per run.\n\n![%s](%s.svg)\n\n", sub[0].Simulated, sc, sc)
	}
}

const legend = `Policies: **immediate** is the 2022 behaviour (replace a slot holder as soon as Consul stops listing it, flush a node Consul lists again, no boot limit); **mcrib** and **adaptive** run mcrib's control loop with the flags above and the adaptive boot limiter; **static:N** runs the loop with a fixed limit of N boots/s.

Columns: the lowest hit rate is the lowest one-minute hit rate after the scenario starts; DB overload counts the seconds the database was asked for more than its capacity (queries beyond it fail and fill nothing); back to 95% is the time from the start until every client has booted and the one-minute hit rate stays at or above 95% of the baseline (0s: it never left); the speed-up is simulated time over wall-clock time.

`

var scenarioText = map[string]string{
	AgentRollout: "The Consul agents of 25% of the nodes restart one after another (one every 10 s) at peak, each absent 20–90 s; memcached keeps serving.",
	NodeFailure:  "A few nodes (1 in 50, at least one) really die, one a minute.",
	Partition:    "40% of the nodes are unreachable for 30 s; Consul marks them failing after 10 s.",
	ObserverBlip: "mcrib's own host loses the fleet for 3 s: its probes fail and its Consul agent reports every node failing; the clients still reach the nodes.",
	PacketLoss:   "For an hour, a share of the probes (1 in 10,000 unless --loss-rate says otherwise) is lost, and so is the same share of Consul's checks (the node fails its check until the next one, 10 s later).",
	ColdStart:    "At peak every cache is empty and every client (re)boots.",
	ZoneDrain:    zoneDrainText,
	Grow:         growText,
	Deploy:       "At peak every client (re)boots, the caches warm (a deploy of every client at once); back to 95% is when the last client has booted.",
}
