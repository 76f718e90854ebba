package e2e

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcrib/mcrib/mcribapi"
)

// writeBenchRealReport writes report.md and hit-rate.svg for one run into
// dir.
func writeBenchRealReport(dir string, r *benchRealResult, missed []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "hit-rate.svg"), []byte(benchRealSVG(r)), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "report.md"), []byte(benchRealMarkdown(r, missed)), 0o644)
}

func pct(f float64) string { return fmt.Sprintf("%.2f%%", 100*f) }

// benchRealMarkdown is the report's text.
func benchRealMarkdown(r *benchRealResult, missed []string) string {
	var b strings.Builder
	c := r.cfg
	fmt.Fprintf(&b, "# Real-stack agent rollout\n\n")
	fmt.Fprintf(&b, "Measured by `make bench-real` (`TestBenchRealAgentRollout` in `e2e/`), started %s, %s of load.\n\n",
		r.started.UTC().Format(time.RFC3339), r.elapsed.Round(time.Second))
	fmt.Fprintf(&b, "A Consul dev server and %d Consul client agents on 127.0.0.2–127.0.0.%d, %d real memcached each registered in its own agent, "+
		"`mcrib serve --slots %d --probe-interval 250ms` (every damping flag at its default: `--hold 60s`), "+
		"a load generator doing cache-aside reads (get, set on a miss) of %d Zipf-distributed keys (s = 1.1; before the load every key is set but a random 3%%, the state the load converges to) "+
		"and 3%% writes that invalidate their key (delete), at most %d operations/s, routed by the slot map mcrib serves "+
		"(`cachenodes.NewSelector`). After %s of warmup and a %s baseline, the client agents of %d slot holders (25%% of the nodes) "+
		"are stopped gracefully one after another (each leaves: its node and service vanish from Consul) and started again after %s; "+
		"then %s more. Hit rates are from memcached's own `get_hits`/`get_misses`, summed over the pool.\n\n",
		c.nodes, c.nodes+1, c.nodes, c.slots, c.keys, c.opsPerSec, c.warmup, c.baseline, c.restarts, fmtDurations(c.absences), c.tail)

	fmt.Fprintf(&b, "| baseline hit rate | during and after the rollout | lowest %s interval | flushes (`cmd_flush`, all nodes) | replacements | slot map generation | reads | sets on a miss | writes | client errors |\n", c.interval)
	fmt.Fprintf(&b, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var flushes uint64
	for _, n := range r.flushes {
		flushes += n
	}
	fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %d → %d | %d | %d | %d | %d |\n\n",
		pct(r.baseline), pct(r.during), pct(r.lowest), flushes, r.events[mcribapi.EventReplacement], r.gen0, r.gen1, r.reads, r.sets, r.writes, r.errs)

	fmt.Fprintf(&b, "| agent of | stopped at | started at | hit rate while away |\n|---|---:|---:|---:|\n")
	for _, a := range r.absences {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", a.node, a.stopped.Round(100*time.Millisecond), a.started.Round(100*time.Millisecond), pct(a.hitRate))
	}
	fmt.Fprintf(&b, "\n`cmd_flush` per node:")
	for _, id := range slices.Sorted(maps.Keys(r.flushes)) {
		fmt.Fprintf(&b, " %s %d;", id, r.flushes[id])
	}
	fmt.Fprintf(&b, "\n\nmcrib's `/v1/events` over the run:")
	for _, k := range slices.Sorted(maps.Keys(r.events)) {
		fmt.Fprintf(&b, " %s %d;", k, r.events[k])
	}
	fmt.Fprintf(&b, " the load generator saw %d slot map generation(s).\n\n", r.generationsSeen)
	if len(r.log) > 0 {
		fmt.Fprintf(&b, "Events other than the first placements (time since the load started): %s.\n\n", strings.Join(r.log, "; "))
	}

	fmt.Fprintf(&b, "## Targets (real-stack agent rollout)\n\n")
	fmt.Fprintf(&b, "- 0 flushes: %s\n- 0 replacements: %s\n- hit rate within 1 point of the baseline (during the rollout and while each agent was away): %s\n\n",
		met(flushes == 0), met(r.gen0 == r.gen1 && r.events[mcribapi.EventReplacement] == 0 && r.events[mcribapi.EventFlush] == 0),
		met(!slices.ContainsFunc(missed, func(s string) bool { return strings.Contains(s, "hit rate") })))
	for _, m := range missed {
		fmt.Fprintf(&b, "- missed: %s\n", m)
	}
	fmt.Fprintf(&b, "![hit rate over time](hit-rate.svg)\n\nThe hit rate of each %s interval; shaded: an agent away; dashed: the baseline.\n", c.interval)
	return b.String()
}

func met(ok bool) string {
	if ok {
		return "**met**"
	}
	return "**not met**"
}

func fmtDurations(ds []time.Duration) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = d.String()
	}
	return strings.Join(s, ", ")
}

// benchRealSVG draws the hit rate per interval, the absences and the
// baseline: plain SVG, nothing fetched.
func benchRealSVG(r *benchRealResult) string {
	const w, h, left, right, top, bottom = 720.0, 260.0, 56.0, 16.0, 16.0, 36.0
	lo := 1.0
	for _, s := range r.samples {
		if s.hits+s.misses > 0 {
			lo = min(lo, float64(s.hits)/float64(s.hits+s.misses))
		}
	}
	lo = max(0, float64(int(lo*100)-1)/100)
	tMax := r.elapsed.Seconds()
	x := func(sec float64) float64 { return left + (w-left-right)*sec/tMax }
	y := func(rate float64) float64 { return top + (h-top-bottom)*(1-(rate-lo)/(1-lo)) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="11">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	for _, a := range r.absences {
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.0f" width="%.1f" height="%.0f" fill="#fde2c8"/>`+"\n",
			x(a.stopped.Seconds()), top, x(a.started.Seconds())-x(a.stopped.Seconds()), h-top-bottom)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" fill="#a0522d">%s</text>`+"\n", x(a.stopped.Seconds())+2, top+12, a.node)
	}
	for i := 0; i <= 4; i++ {
		v := lo + (1-lo)*float64(i)/4
		fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%.0f" y="%.1f" text-anchor="end">%.1f%%</text>`+"\n",
			left, w-right, y(v), y(v), left-4, y(v)+4, 100*v)
	}
	for sec := 0.0; sec <= tMax; sec += 30 {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%ds</text>`+"\n", x(sec), h-bottom+14, int(sec))
	}
	fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#555" stroke-dasharray="4 3"/>`+"\n", left, w-right, y(r.baseline), y(r.baseline))
	var pts []string
	for _, s := range r.samples {
		if s.hits+s.misses > 0 {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(s.at.Seconds()), y(float64(s.hits)/float64(s.hits+s.misses))))
		}
	}
	fmt.Fprintf(&b, `<polyline fill="none" stroke="#1f77b4" stroke-width="1.5" points="%s"/>`+"\n", strings.Join(pts, " "))
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">seconds since the load started; hit rate per %s (memcached get_hits / (get_hits + get_misses))</text>`+"\n", (left+w-right)/2, h-6, r.cfg.interval)
	b.WriteString("</svg>\n")
	return b.String()
}
