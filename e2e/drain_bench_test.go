package e2e

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/mcclient"
	"github.com/mcrib/mcrib/mcribapi"
)

// drainBenchConfig is one run of the drain benchmark.
type drainBenchConfig struct {
	name        string
	variant     warmVariant
	slots       int // --slots
	zones       []string
	perZone     int // memcached per zone
	keys        uint64
	opsPerSec   int
	warmup      time.Duration // load before the baseline
	baseline    time.Duration // the steady state measured before the drain
	stepPercent int
	interval    time.Duration // step_interval
	// window is how long after the PUT (and after the DELETE) the misses
	// are counted, the same for every run and both phases.
	window time.Duration
}

// Drain benchmark constants: three zones of 9 memcached on loopback, 16
// slots (the first fill spreads them 6/5/5), the zone holding the most
// drained completely in steps of 10% (one slot) every 3 s, and given
// back at the same pace.
const (
	drainBenchSlots    = 16
	drainBenchPerZone  = 9
	drainBenchInterval = 3 * time.Second
	// drainBenchFixedWindow is the fixed-2m run's warming (and the
	// longest warming from a drained zone): the window holds it.
	drainBenchFixedWindow = 2 * time.Minute
	// drainBenchTail is the time counted after the fixed window's last
	// warming could end.
	drainBenchTail = 45 * time.Second
	// drainBenchOverWithin is the bound of "every warming over" after the
	// last step of a phase; drainBenchWatch how long after it a phase is
	// watched for it.
	drainBenchOverWithin = 3 * time.Minute
	drainBenchWatch      = 5 * time.Minute
	// drainBenchLowestSpan is the span of the judged lowest hit rate, as
	// in the growth benchmark.
	drainBenchLowestSpan = 5
	// drainBenchMostLowest and drainBenchMostExtra are the default run's
	// targets: its lowest hit rate (of drainBenchLowestSpan seconds) within
	// 1 point of the steady state, its extra misses at most 0.05× the cold
	// run's.
	drainBenchMostLowest = 0.01
	drainBenchMostExtra  = 0.05
)

// drainBenchVariants are the benchmark's runs, in the report's order.
var drainBenchVariants = []warmVariant{variantDefault, variantCopyOff, variantFixed2m, variantCold}

// drainBenchSteps is the number of steps of a phase: the zone holding the
// most slots after the first fill (6 of 16 over three zones), one a step.
func drainBenchSteps() int { return (drainBenchSlots + 2) / 3 }

// drainBenchConfigFor is the benchmark's configuration of a run: 2,500
// keys a slot at most 1,500 operations/s, as the growth benchmark; the
// window is the steps' time, the announce, the fixed window and the tail.
func drainBenchConfigFor(v warmVariant) drainBenchConfig {
	return drainBenchConfig{name: v.name, variant: v, slots: drainBenchSlots, zones: []string{"a", "b", "c"}, perZone: drainBenchPerZone,
		keys: 2500 * drainBenchSlots, opsPerSec: 1500, warmup: 5 * time.Second, baseline: 10 * time.Second,
		stepPercent: 10, interval: drainBenchInterval,
		window: time.Duration(drainBenchSteps()-1)*drainBenchInterval + cachenodes.AnnounceLead + drainBenchFixedWindow + drainBenchTail}
}

// drainPhase is what one phase of a run (the drain, or the undrain after
// it) measured, from its request on.
type drainPhase struct {
	name  string        // "drain" or "undrain"
	start time.Duration // the request, since the load began
	steps []drainLook   // the zone's slots as GET /v1/drain showed them
	// lastStep is when the last step was seen (the zone empty, or back at
	// its baseline), since the request; over when no slot warmed any
	// more after it (notOver: not within drainBenchWatch).
	lastStep, over time.Duration
	notOver        bool
	warmings       warmEnds
	lowest         float64 // lowest hit rate of a second in the window
	lowestSpan     float64 // lowest of drainBenchLowestSpan seconds
	belowNinety    int
	reads, misses  int64
	extra          float64
}

// overAfterLast is how long after the last step every warming was over.
func (p drainPhase) overAfterLast() time.Duration { return p.over - p.lastStep }

// overText is the time from the last step to every warming over.
func (p drainPhase) overText() string {
	if p.notOver {
		return "not within " + drainBenchWatch.String()
	}
	return p.overAfterLast().Round(100 * time.Millisecond).String()
}

// drainBenchResult is what one run measured.
type drainBenchResult struct {
	cfg         drainBenchConfig
	started     time.Time
	zone, fill  string
	baseline    int     // the zone's slots before the drain
	steady      float64 // hit rate over the baseline
	readsPerSec float64
	phases      [2]drainPhase // the drain and the undrain
	errs        int64
	seconds     []loadSecond
}

// TestBenchDrain is make bench-drain (its targets in docs/performance.md),
// run only with MCRIB_BENCH_DRAIN=1: on loopback, Consul and 27 memcached
// in zones a, b and c, mcrib serve --slots 16, a cache-aside load through
// mcclient, and the zone holding the most slots drained completely in
// steps of 10% (one slot) every 3 s, then undrained, four times on a pool
// of its own: at the default warm flags, with the copy off, with the old
// fixed 2m window, and cold. The default run is judged against the cold
// one. With MCRIB_BENCH_DRAIN_OUT=DIR it writes report.md there;
// MCRIB_BENCH_DRAIN_RUNS=default runs only those (and the cold run, the
// baseline).
func TestBenchDrain(t *testing.T) {
	if os.Getenv("MCRIB_BENCH_DRAIN") != "1" {
		t.Skip("the drain benchmark runs with MCRIB_BENCH_DRAIN=1 (make bench-drain)")
	}
	var runs []*drainBenchResult
	for _, v := range benchVariants(t, drainBenchVariants, os.Getenv("MCRIB_BENCH_DRAIN_RUNS")) {
		var r *drainBenchResult
		t.Run(strings.ReplaceAll(v.name, " ", "-"), func(t *testing.T) { r = runDrainBench(t, drainBenchConfigFor(v)) })
		if r == nil {
			t.Fatalf("the %s run did not complete: no comparison", v.name)
		}
		t.Logf("%s: %s", r.cfg.name, r.summary())
		runs = append(runs, r)
	}
	missed := drainBenchTargets(runs[0], runs[len(runs)-1])
	if dir := os.Getenv("MCRIB_BENCH_DRAIN_OUT"); dir != "" {
		if err := writeDrainBenchReport(dir, runs, missed); err != nil {
			t.Fatal(err)
		}
		t.Logf("report written to %s", dir)
	}
	for _, m := range missed {
		t.Error(m)
	}
}

// drainBenchFlags are mcrib serve's flags of a run, as the growth
// benchmark's (--stats-interval at its default, for the convergence
// rule), then the variant's warm flags.
func drainBenchFlags(cfg drainBenchConfig) []string {
	return append([]string{"--slots", fmt.Sprint(cfg.slots), "--hold", "60s",
		"--probe-interval", "1s", "--flush-after-unreachable", "30s"}, cfg.variant.flags...)
}

// runDrainBench runs one drain and undrain on a pool of its own and
// returns what it measured, or fails the test.
func runDrainBench(t *testing.T, cfg drainBenchConfig) *drainBenchResult {
	p := newZonedPool(t, cfg.zones, cfg.perZone)
	m := startMcrib(t, p.consul.HTTPAddr, append(withToken(t), drainBenchFlags(cfg)...)...)
	filled(t, p, m, cfg.slots)
	api := newAPIClient(m.Addr, apiTimeout)
	res := &drainBenchResult{cfg: cfg}
	zones := mustZones(t, api)
	var fill []string
	for _, z := range slices.Sorted(maps.Keys(zones)) {
		fill = append(fill, fmt.Sprintf("%s:%d", z, zones[z].Slots))
		if res.zone == "" || zones[z].Slots > res.baseline {
			res.zone, res.baseline = z, zones[z].Slots
		}
	}
	res.fill = strings.Join(fill, " ")
	t.Logf("%s: the first fill spread the slots %s; draining zone %s", cfg.name, res.fill, res.zone)

	f, err := mcclient.NewHTTPFollower(mcclient.HTTPFollowerOptions{URL: "http://" + m.Addr, WaitTime: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c := followingClient(t, f, growClientTimeout)
	testenv.Eventually(t, 10*time.Second, "the client follows the map", func() bool { return c.SlotMap() != nil })
	l := startMeasuredLoad(t, cfg.name, c, cfg.keys, cfg.opsPerSec, cfg.warmup, cfg.baseline)
	defer l.stop()
	res.started, res.steady, res.readsPerSec = l.started, l.steady, l.readsPerSec

	body := drainBody("drain benchmark", 100, cfg.stepPercent, cfg.interval.String())
	res.phases[0] = runDrainPhase(t, api, l, res, "drain", "PUT", body, func(e mcribapi.DrainEntry, ok bool) bool {
		return ok && e.Slots == 0
	})
	res.phases[1] = runDrainPhase(t, api, l, res, "undrain", "DELETE", "", func(e mcribapi.DrainEntry, ok bool) bool {
		return !ok || e.Slots >= res.baseline
	})
	l.stop()
	res.seconds = l.all()
	_, _, res.errs = sum(res.seconds)
	return res
}

// runDrainPhase sends the phase's request for the run's zone, watches the
// zone's slots until lastStep holds and then until no slot warms (at most
// drainBenchWatch after the last step), waits out the window, and returns
// the phase's figures.
func runDrainPhase(t *testing.T, api *apiClient, l *measuredLoad, res *drainBenchResult, name, method, body string,
	lastStep func(mcribapi.DrainEntry, bool) bool) drainPhase {
	cfg := res.cfg
	ph := drainPhase{name: name}
	seq := lastSeq(t, api)
	keys0, bytes0 := copiedSoFar(api)
	ph.start = time.Since(l.started)
	sent := time.Now()
	if code, b := api.do(method, "/v1/drain/"+res.zone, body, token); code != 200 {
		t.Fatalf("%s /v1/drain/%s: %d %s", method, res.zone, code, b)
	}
	limit := time.Duration(drainBenchSteps()+1)*cfg.interval + cachenodes.AnnounceLead + drainBenchWatch
	stepped := false
	if !within(limit, func() bool {
		if !stepped {
			d, _, err := api.drain()
			if err != nil {
				return false
			}
			e, ok := drainEntry(d, res.zone)
			slots := e.Slots
			if !ok {
				slots = res.baseline
			}
			if n := len(ph.steps); n == 0 || ph.steps[n-1].slots != slots {
				ph.steps = append(ph.steps, drainLook{at: time.Since(sent), slots: slots})
			}
			if !lastStep(e, ok) {
				return false
			}
			stepped, ph.lastStep = true, time.Since(sent)
		}
		sm, _, err := api.slotMap("")
		return err == nil && !sm.WarmsAt(time.Now())
	}) {
		if !stepped {
			t.Fatalf("%s: the %s of zone %s did not reach its last step within %v: %s", cfg.name, name, res.zone, limit, stepsText(ph.steps))
		}
		t.Logf("%s: after the %s a slot still warmed %v after the last step", cfg.name, name, drainBenchWatch)
		ph.notOver = true
	}
	ph.over = time.Since(sent)
	if rest := cfg.window - time.Since(sent); rest > 0 {
		time.Sleep(rest + 1500*time.Millisecond) // the window's last second counted
	}
	w, err := readWarmEnds(api, seq, keys0, bytes0)
	if err != nil {
		t.Fatal(err)
	}
	ph.warmings = w
	win := l.window(ph.start, ph.start+cfg.window)
	ph.reads, ph.misses, ph.extra, ph.lowest, ph.belowNinety = windowFigures(win, res.steady)
	ph.lowestSpan = lowestOver(win, drainBenchLowestSpan)
	t.Logf("%s: %s", cfg.name, ph.summary())
	return ph
}

// stepsText describes the zone's slot counts as seen, with when each was
// first seen after the request.
func stepsText(steps []drainLook) string {
	parts := make([]string, len(steps))
	for i, s := range steps {
		parts[i] = fmt.Sprintf("%d@%.1fs", s.slots, s.at.Seconds())
	}
	return strings.Join(parts, " → ")
}

// summary is one line of the phase's figures.
func (p drainPhase) summary() string {
	return fmt.Sprintf("%s: %s, last step at %.1f s, every warming over %s after it; lowest %s (%d s) and %s (1 s), %d s below 90%%, %d misses of %d reads (%.0f above the steady rate); %s",
		p.name, stepsText(p.steps), p.lastStep.Seconds(), p.overText(), pct(p.lowestSpan), drainBenchLowestSpan, pct(p.lowest), p.belowNinety, p.misses, p.reads, p.extra, p.warmings.text())
}

// summary is one line of the run's figures.
func (r *drainBenchResult) summary() string {
	return fmt.Sprintf("steady %s; zone %s (%s); %s; %s; %d client errors", pct(r.steady), r.zone, r.fill, r.phases[0].summary(), r.phases[1].summary(), r.errs)
}

// drainBenchTargets returns the drain targets that run r missed against
// the cold run, for each phase: the lowest hit rate (of
// drainBenchLowestSpan seconds) within 1 point of the steady state, the
// extra misses at most 0.05× the cold run's in the same phase, and every
// warming over within 3 minutes of the last step.
func drainBenchTargets(r, cold *drainBenchResult) []string {
	var missed []string
	for i, p := range r.phases {
		c := cold.phases[i]
		if p.lowestSpan < r.steady-drainBenchMostLowest {
			missed = append(missed, fmt.Sprintf("the %s run's %s: the lowest hit rate %s (%d s) is more than 1 point below the steady %s", r.cfg.name, p.name, pct(p.lowestSpan), drainBenchLowestSpan, pct(r.steady)))
		}
		switch {
		case c.extra <= 0:
			missed = append(missed, fmt.Sprintf("the cold %s cost no extra misses (%.0f): the comparison says nothing", c.name, c.extra))
		case p.extra > drainBenchMostExtra*c.extra:
			missed = append(missed, fmt.Sprintf("the %s run's %s: %.0f extra misses, %s the cold %s's %.0f (at most 0.05×)", r.cfg.name, p.name, p.extra, ratio(p.extra, c.extra), c.name, c.extra))
		}
		if p.notOver || p.overAfterLast() > drainBenchOverWithin {
			missed = append(missed, fmt.Sprintf("the %s run's %s: every warming over %s after the last step, more than %v", r.cfg.name, p.name, p.overText(), drainBenchOverWithin))
		}
	}
	return missed
}

// writeDrainBenchReport writes report.md for the runs (the default run
// first, the cold run last) into dir; missed are the default run's
// targets missed.
func writeDrainBenchReport(dir string, runs []*drainBenchResult, missed []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	def, cold := runs[0], runs[len(runs)-1]
	c := def.cfg
	var b strings.Builder
	rates := make([]string, len(runs))
	for i, r := range runs {
		rates[i] = fmt.Sprintf("%.0f", r.readsPerSec)
	}
	fmt.Fprintf(&b, "# Zone drain and undrain: the warm flags' defaults, each part off, and cold\n\n")
	fmt.Fprintf(&b, "Measured by `make bench-drain` (`TestBenchDrain` in `e2e/`), started %s.\n\n", def.started.UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "On loopback: a Consul dev agent, %d memcached in zones %s (%d each, mc-a-1…%d and so on, service meta `az`), and `mcrib serve %s` and the run's warm flags. "+
		"The first fill spread the slots %s; zone %s, the one holding the most (%d), is drained completely (`PUT /v1/drain/%s` with percent 100, step_percent %d, step_interval %s: one slot a step), "+
		"then given back (`DELETE /v1/drain/%s`, the same pace) %v after the PUT. "+
		"A load generator does cache-aside reads through `mcclient` (get; on a miss, a read of the \"database\" and a set) of %d Zipf-distributed keys "+
		"(%d a slot; s = 1.1; 100-byte values; every key set but a random 3%% before the load) and 3%% writes that invalidate their key (delete), at most %d operations/s "+
		"(%s reads/s measured in the baselines); the steady state is its hit rate over a %s baseline after %s of warmup. Each run has a pool of its own:\n\n",
		len(c.zones)*c.perZone, strings.Join(c.zones, ", "), c.perZone, c.perZone, strings.Join(drainBenchFlags(drainBenchConfig{slots: c.slots}), " "),
		def.fill, def.zone, def.baseline, def.zone, c.stepPercent, c.interval, def.zone, c.window, c.keys, c.keys/uint64(c.slots), c.opsPerSec, strings.Join(rates, ", "), c.baseline, c.warmup)
	for _, r := range runs {
		fmt.Fprintf(&b, "- %s: %s;\n", r.cfg.name, r.cfg.variant.what)
	}
	fmt.Fprintf(&b, "\nA warming from a drained zone lasts at most 2 minutes whatever the flags, so in the drain the fixed window differs from the default only by the copy and the end at convergence; "+
		"the undrain's warm sources are in undrained zones, where the default `--warm-for` is 30m. "+
		"Hit rates are the application's, per second. Each phase's window, the same for every run, is the %v from its request: the steps (%d, %s apart), "+
		"the %s announce, the fixed window (%s) and %s, so that it holds the misses of the keys nobody read while their slot warmed; "+
		"\"over\" is from the phase's last step (the zone empty, or back at its baseline) until no slot warms, watched for up to %s. The judged lowest hit rate is of %d s, as in the growth benchmark.\n\n",
		c.window, drainBenchSteps(), c.interval, cachenodes.AnnounceLead, drainBenchFixedWindow, drainBenchTail, drainBenchWatch, drainBenchLowestSpan)
	fmt.Fprintf(&b, "| run | phase | warm flags | steady hit rate | last step | every warming over after it | lowest hit rate (%d s) | lowest hit rate (1 s) | seconds below 90%% | misses that reached the database | above the steady rate | vs cold |\n", drainBenchLowestSpan)
	fmt.Fprintf(&b, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range runs {
		for i, p := range r.phases {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %.1f s | %s | %s | %s | %d | %d of %d reads | %.0f | %s |\n", r.cfg.name, p.name, r.cfg.variant.flagText(), pct(r.steady),
				p.lastStep.Seconds(), p.overText(), pct(p.lowestSpan), pct(p.lowest), p.belowNinety, p.misses, p.reads, p.extra, ratio(p.extra, cold.phases[i].extra))
		}
	}
	fmt.Fprintf(&b, "\nZone %s's slots as `GET /v1/drain` showed them (seconds after the request), and the warmings as the events `warm start` and `warm end` tell them:\n\n", def.zone)
	for _, r := range runs {
		for _, p := range r.phases {
			fmt.Fprintf(&b, "- %s, %s: %s; %s\n", r.cfg.name, p.name, stepsText(p.steps), p.warmings.text())
		}
	}
	fmt.Fprintf(&b, "\nClient errors over each run: ")
	var errs []string
	for _, r := range runs {
		errs = append(errs, fmt.Sprintf("%s %d", r.cfg.name, r.errs))
	}
	fmt.Fprintf(&b, "%s.\n", strings.Join(errs, ", "))
	fmt.Fprintf(&b, "\n## Targets\n\n")
	fmt.Fprintf(&b, "Judged on the %s run; the other warm runs against the same targets show what each part gains.\n\n", def.cfg.name)
	fmt.Fprintf(&b, "| run | phase | lowest hit rate (%d s) within 1 point of the steady state | extra misses at most 0.05× the cold run's | every warming over within %v of the last step |\n", drainBenchLowestSpan, drainBenchOverWithin)
	fmt.Fprintf(&b, "|---|---|---|---|---|\n")
	for _, r := range runs {
		if !r.cfg.variant.warm {
			continue
		}
		all := drainBenchTargets(r, cold)
		for i, p := range r.phases {
			var mine []string
			for _, m := range all {
				if strings.Contains(m, "'s "+p.name+":") {
					mine = append(mine, m)
				}
			}
			s := strings.Join(mine, "\n")
			fmt.Fprintf(&b, "| %s | %s | %s: %.2f points | %s: %s | %s: %s |\n", r.cfg.name, p.name, met(!strings.Contains(s, "lowest hit rate")), 100*(r.steady-p.lowestSpan),
				met(!strings.Contains(s, "extra misses")), ratio(p.extra, cold.phases[i].extra), met(!strings.Contains(s, "every warming over")), p.overText())
		}
	}
	fmt.Fprintln(&b)
	for _, m := range missed {
		fmt.Fprintf(&b, "- missed: %s\n", m)
	}
	fmt.Fprintf(&b, "\n## Hit rate per second from 5 s before the drain\n\n")
	for _, r := range runs {
		var parts []string
		for _, s := range r.seconds {
			if s.at < r.phases[0].start-5*time.Second {
				continue
			}
			if h, ok := s.hitRate(); ok {
				mark := ""
				for _, p := range r.phases {
					if s.at > p.start && s.at <= p.start+r.cfg.window {
						mark = "*"
					}
				}
				if s.at > r.phases[1].start && s.at <= r.phases[1].start+time.Second {
					mark = "|"
				}
				parts = append(parts, fmt.Sprintf("%.1f%s", 100*h, mark))
			}
		}
		fmt.Fprintf(&b, "- %s: %s\n", r.cfg.name, strings.Join(parts, " "))
	}
	fmt.Fprintf(&b, "\n(* : a second of a phase's window; | : the first second of the undrain.)\n")
	return os.WriteFile(filepath.Join(dir, "report.md"), []byte(b.String()), 0o644)
}
