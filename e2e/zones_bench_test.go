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

	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/mcclient"
	"github.com/mcrib/mcrib/mcribapi"
)

// zoneDrainConfig is one run of the zone-drain benchmark.
type zoneDrainConfig struct {
	name        string // "warm" or "cold"
	warmFor     string // --warm-for
	slots       int    // --slots
	zones       int    // zones a, b, …
	perZone     int    // memcached per zone
	perHost     int    // memcached per host
	keys        uint64
	opsPerSec   int
	warmup      time.Duration // load before the baseline
	baseline    time.Duration // the steady state measured before the drain
	tail        time.Duration // load after the zone is drained
	stepPercent int
	interval    time.Duration // step_interval
}

// zoneDrainResult is what one run measured. The drain window runs from the
// PUT to the tail's end; the hit rates are the application's (a hit is a
// get served from the cache, warm reads included; a miss reached the
// database).
type zoneDrainResult struct {
	cfg     zoneDrainConfig
	started time.Time
	// zone is the zone drained: the first by name that holds a multiple of
	// 100/stepPercent slots after the first fill, so that every step moves
	// exactly one step_percent of its baseline.
	zone          string
	fill          string // slots per zone after the first fill, "a:11 b:11 c:10"
	baselineSlots int
	steps         []drainLook   // the zone's slots as GET /v1/drain showed them
	warmMoves     float64       // mcrib_slot_moves_total{kind="warm"} over the drain
	coldMoves     float64       // mcrib_slot_moves_total{kind="cold"} over the drain
	steady        float64       // hit rate over the baseline
	readsPerSec   float64       // reads a second over the baseline (the load achieved)
	drainStart    time.Duration // the PUT, since the load began
	drainTook     time.Duration // PUT → state "drained"
	lowest        float64       // lowest hit rate of a second in the drain window
	belowNinety   int           // seconds of the drain window below 90%
	reads, misses int64         // in the drain window
	extra         float64       // misses above the steady miss rate in the drain window
	errs          int64         // client errors over the whole run
	seconds       []loadSecond
}

// drainLook is a change of the drained zone's slot count seen in the drain
// document, and when (since the PUT).
type drainLook struct {
	at    time.Duration
	slots int
}

// zoneDrainConfigFor is the benchmark's configuration of a run: 32 slots
// (a power of two, as --slots must be) spread 11/11/10 over three zones, so
// a 10% step of the zone holding 10 moves exactly one slot and its drain
// takes 10 steps; 18 memcached per zone (six on each of three hosts), so
// the other zones have a spare for each slot they take (5 each) and some
// left; 2,500 keys a slot, so that each slot's contents matter.
func zoneDrainConfigFor(name, warmFor string) zoneDrainConfig {
	const slots = 32
	return zoneDrainConfig{name: name, warmFor: warmFor, slots: slots, zones: 3, perZone: 18, perHost: 6,
		keys: 2500 * slots, opsPerSec: 1500,
		warmup: 5 * time.Second, baseline: 10 * time.Second, tail: 10 * time.Second,
		stepPercent: 10, interval: 3 * time.Second}
}

// TestBenchZoneDrain is make bench-zones (its targets in docs/performance.md),
// run only with MCRIB_BENCH_ZONES=1 and root (a bed of hosts): three zones
// of 18 memcached (six on each of three hosts), 32 slots (11/11/10), a
// cache-aside load through mcclient, and the zone holding 10 slots drained
// completely in steps of 10% (one slot) every 3 s, once with warm moves (--warm-for 2m)
// and once cold (--warm-for 0s), each on a bed of its own. With
// MCRIB_BENCH_ZONES_OUT=DIR it writes report.md there.
func TestBenchZoneDrain(t *testing.T) {
	if os.Getenv("MCRIB_BENCH_ZONES") != "1" {
		t.Skip("the zone-drain benchmark runs with MCRIB_BENCH_ZONES=1 (make bench-zones)")
	}
	var warm, cold *zoneDrainResult
	t.Run("warm", func(t *testing.T) { warm = runZoneDrain(t, zoneDrainConfigFor("warm", "2m")) })
	t.Run("cold", func(t *testing.T) { cold = runZoneDrain(t, zoneDrainConfigFor("cold", "0s")) })
	if warm == nil || cold == nil {
		t.Fatal("a run did not complete: no comparison")
	}
	for _, r := range []*zoneDrainResult{warm, cold} {
		t.Logf("%s: %s", r.cfg.name, r.summary())
	}
	missed := zoneDrainTargets(warm, cold)
	if dir := os.Getenv("MCRIB_BENCH_ZONES_OUT"); dir != "" {
		if err := writeZoneDrainReport(dir, warm, cold, missed); err != nil {
			t.Fatal(err)
		}
		t.Logf("report written to %s", dir)
	}
	for _, m := range missed {
		t.Error(m)
	}
}

// runZoneDrain runs one drain on a bed of its own and returns what it
// measured, or fails the test.
func runZoneDrain(t *testing.T, cfg zoneDrainConfig) *zoneDrainResult {
	p := newHostsPool(t, hostsOptions{nodes: cfg.zones * cfg.perZone, replicas: 1, slots: cfg.slots, hold: "60s",
		zones: cfg.zones, perHost: cfg.perHost, flags: []string{"--warm-for", cfg.warmFor}})
	r := p.replicas[0]
	api := newAPIClient(r.Addr, apiTimeout)
	zones := mustZones(t, api)
	res := &zoneDrainResult{cfg: cfg}
	names := slices.Sorted(maps.Keys(zones))
	var fill []string
	for _, z := range names {
		held := zones[z].Slots
		fill = append(fill, fmt.Sprintf("%s:%d", z, held))
		if res.zone == "" && held > 0 && held%(100/cfg.stepPercent) == 0 {
			res.zone = z
		}
	}
	res.fill = strings.Join(fill, " ")
	if res.zone == "" {
		t.Fatalf("after the first fill no zone holds a multiple of %d slots (%s): a %d%% step would not move one tenth of any",
			100/cfg.stepPercent, res.fill, cfg.stepPercent)
	}
	t.Logf("%s: the first fill spread the slots %s; draining zone %s", cfg.name, res.fill, res.zone)
	f, err := mcclient.NewHTTPFollower(mcclient.HTTPFollowerOptions{URL: "http://" + r.Addr, WaitTime: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c := followingClient(t, f, clientTimeout)
	testenv.Eventually(t, 10*time.Second, "the client follows the map", func() bool { return c.SlotMap() != nil })
	l := startMeasuredLoad(t, cfg.name, c, cfg.keys, cfg.opsPerSec, cfg.warmup, cfg.baseline)
	defer l.stop()
	res.started, res.steady, res.readsPerSec = l.started, l.steady, l.readsPerSec

	warm0, _ := api.moves("warm")
	cold0, _ := api.moves("cold")
	res.drainStart = time.Since(res.started)
	put := time.Now()
	body := drainBody("zone-drain benchmark", 100, cfg.stepPercent, cfg.interval.String())
	if code, b := api.do("PUT", "/v1/drain/"+res.zone, body, token); code != 200 {
		t.Fatalf("PUT /v1/drain/%s: %d %s", res.zone, code, b)
	}
	limit := 10*cfg.interval + cfg.interval + 30*time.Second
	var last mcribapi.DrainEntry
	if !within(limit, func() bool {
		d, _, err := api.drain()
		if err != nil {
			return false
		}
		last, _ = drainEntry(d, res.zone)
		if n := len(res.steps); n == 0 || res.steps[n-1].slots != last.Slots {
			res.steps = append(res.steps, drainLook{at: time.Since(put), slots: last.Slots})
		}
		return last.State == mcribapi.DrainDrained
	}) {
		t.Fatalf("zone %s not drained within %v: %+v", res.zone, limit, last)
	}
	res.drainTook = time.Since(res.started) - res.drainStart
	res.baselineSlots = last.BaselineSlots
	warm1, _ := api.moves("warm")
	cold1, _ := api.moves("cold")
	res.warmMoves, res.coldMoves = warm1-warm0, cold1-cold0
	time.Sleep(cfg.tail)
	l.stop()

	res.seconds = l.all()
	_, _, res.errs = sum(res.seconds)
	win := l.window(res.drainStart, res.drainStart+res.drainTook+cfg.tail)
	res.reads, res.misses, res.extra, res.lowest, res.belowNinety = windowFigures(win, res.steady)
	return res
}

// summary is one line of the run's figures.
func (r *zoneDrainResult) summary() string {
	return fmt.Sprintf("steady %s, drained in %v (baseline %d slots; %s; %.0f warm and %.0f cold moves), lowest %s, %d s below 90%%, %d misses of %d reads in the drain window (%.0f above the steady rate), %d client errors",
		pct(r.steady), r.drainTook.Round(100*time.Millisecond), r.baselineSlots, r.stepsSeen(), r.warmMoves, r.coldMoves,
		pct(r.lowest), r.belowNinety, r.misses, r.reads, r.extra, r.errs)
}

// stepsSeen describes the drained zone's slot counts as seen, with when
// each was first seen after the PUT.
func (r *zoneDrainResult) stepsSeen() string {
	parts := make([]string, len(r.steps))
	for i, s := range r.steps {
		parts[i] = fmt.Sprintf("%d@%.1fs", s.slots, s.at.Seconds())
	}
	return strings.Join(parts, " → ")
}

// stepGaps returns the shortest, mean and longest time between two
// successive steps seen (the first look may still show the baseline).
func (r *zoneDrainResult) stepGaps() (lo, mean, hi time.Duration) {
	steps := r.steps
	if len(steps) > 0 && steps[0].slots == r.baselineSlots {
		steps = steps[1:]
	}
	if len(steps) < 2 {
		return 0, 0, 0
	}
	lo = time.Hour
	for i := 1; i < len(steps); i++ {
		g := steps[i].at - steps[i-1].at
		lo, hi = min(lo, g), max(hi, g)
	}
	mean = (steps[len(steps)-1].at - steps[0].at) / time.Duration(len(steps)-1)
	return lo, mean, hi
}

// zoneDrainTargets returns the zone-drain benchmark's targets that the
// runs missed: each drain within 10 steps' time plus one interval; with
// warm moves the lowest hit rate within 5 points of the steady state and
// at most a quarter of the cold drain's extra misses.
func zoneDrainTargets(warm, cold *zoneDrainResult) []string {
	var missed []string
	for _, r := range []*zoneDrainResult{warm, cold} {
		if most := 11 * r.cfg.interval; r.drainTook > most {
			missed = append(missed, fmt.Sprintf("the %s drain took %v, more than 10 steps' time plus one interval (%v)", r.cfg.name, r.drainTook.Round(100*time.Millisecond), most))
		}
	}
	if warm.lowest < warm.steady-0.05 {
		missed = append(missed, fmt.Sprintf("with warm moves the lowest hit rate %s is more than 5 points below the steady %s", pct(warm.lowest), pct(warm.steady)))
	}
	switch {
	case cold.extra <= 0:
		missed = append(missed, fmt.Sprintf("the cold drain cost no extra misses (%.0f): the comparison says nothing", cold.extra))
	case warm.extra > cold.extra/4:
		missed = append(missed, fmt.Sprintf("with warm moves %.0f extra misses, more than a quarter of the cold drain's %.0f", warm.extra, cold.extra))
	}
	return missed
}

// writeZoneDrainReport writes report.md for the two runs into dir.
func writeZoneDrainReport(dir string, warm, cold *zoneDrainResult, missed []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	c := warm.cfg
	fmt.Fprintf(&b, "# Zone drain, warm and cold\n\n")
	fmt.Fprintf(&b, "Measured by `make bench-zones` (`TestBenchZoneDrain` in `e2e/`), started %s.\n\n", warm.started.UTC().Format(time.RFC3339))
	var zoneNames, idRanges []string
	for z := range c.zones {
		name := string(rune('a' + z))
		zoneNames = append(zoneNames, name)
		idRanges = append(idRanges, fmt.Sprintf("mc-%s-1…%d", name, c.perZone))
	}
	fmt.Fprintf(&b, "A bed of network namespaces: a Consul server on a host of its own; %d memcached in zones %s (%s, service meta `az`), "+
		"%d to a host on ports 11211–%d, %d hosts per zone, each host with its own Consul client agent through which each of its memcached "+
		"is registered as a service instance of its own; and `mcrib serve --slots %d --hold 60s --probe-interval 1s` on a host of its own. "+
		"The first fill spread the slots %s; zone %s, the one holding a multiple of ten, is drained, so a step of %d%% moves exactly one tenth of its baseline, and zones %s "+
		"have a spare for every slot they take. "+
		"A load generator in the root namespace does cache-aside reads through `mcclient` (get; on a miss, a read of the \"database\" and a set) "+
		"of %d Zipf-distributed keys (%d a slot; s = 1.1; every key set but a random 3%% before the load) and 3%% writes that invalidate their key (delete), "+
		"at most %d operations/s (%.0f reads/s measured in the warm run's baseline, %.0f in the cold one's). After %s of warmup and a %s baseline (the steady state), `PUT /v1/drain/%s` with percent 100, "+
		"step_percent %d, step_interval %s; the load goes on %s after the zone is drained. Each run has a bed of its own: "+
		"warm with `--warm-for %s`, cold with `--warm-for %s`. Hit rates are the application's, per second; the drain window runs from the PUT to the end.\n\n",
		c.zones*c.perZone, strings.Join(zoneNames, ", "), strings.Join(idRanges, ", "), c.perHost, 11210+c.perHost, c.perZone/c.perHost,
		c.slots, warm.fill, warm.zone, c.stepPercent, strings.Join(otherZones(zoneNames, warm.zone), " and "),
		c.keys, c.keys/uint64(c.slots), c.opsPerSec, warm.readsPerSec, cold.readsPerSec, c.warmup, c.baseline, warm.zone, c.stepPercent, c.interval, c.tail, warm.cfg.warmFor, cold.cfg.warmFor)
	fmt.Fprintf(&b, "| run | `--warm-for` | steady hit rate | time to drained | lowest hit rate (1 s) | seconds below 90%% | misses that reached the database | above the steady rate | client errors |\n")
	fmt.Fprintf(&b, "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range []*zoneDrainResult{warm, cold} {
		fmt.Fprintf(&b, "| %s | %s | %s | %v | %s | %d | %d of %d reads | %.0f | %d |\n", r.cfg.name, r.cfg.warmFor, pct(r.steady),
			r.drainTook.Round(100*time.Millisecond), pct(r.lowest), r.belowNinety, r.misses, r.reads, r.extra, r.errs)
	}
	fmt.Fprintf(&b, "\nZone %s's slots as `GET /v1/drain` showed them (seconds after the PUT), and the moves mcrib counted (`mcrib_slot_moves_total`) during the drain:\n\n", warm.zone)
	for _, r := range []*zoneDrainResult{warm, cold} {
		lo, mean, hi := r.stepGaps()
		fmt.Fprintf(&b, "- %s: zone %s (first fill %s), baseline %d; %s (steps %.1f–%.1f s apart, %.2f s on average); %.0f warm and %.0f cold moves\n",
			r.cfg.name, r.zone, r.fill, r.baselineSlots, r.stepsSeen(), lo.Seconds(), hi.Seconds(), mean.Seconds(), r.warmMoves, r.coldMoves)
	}
	fmt.Fprintf(&b, "\nThe first step runs at once and each next one when its step_interval (%s) has passed since the previous: mcrib wakes its loop "+
		"for a step that falls due between two passes, so ten steps take nine intervals plus the passes' own time. "+
		"With `--warm-for %s` the last moves still warm when the window ends.\n", c.interval, warm.cfg.warmFor)
	fmt.Fprintf(&b, "\n## Targets\n\n")
	fmt.Fprintf(&b, "- the drain finishes within 10 steps' time plus one interval (%v): %s\n", 11*c.interval,
		met(!strings.Contains(strings.Join(missed, "\n"), "drain took")))
	fmt.Fprintf(&b, "- with warm moves the lowest hit rate within 5 points of the steady state: %s\n",
		met(!strings.Contains(strings.Join(missed, "\n"), "lowest hit rate")))
	fmt.Fprintf(&b, "- with warm moves at most a quarter of the cold drain's extra misses: %s\n\n",
		met(!strings.Contains(strings.Join(missed, "\n"), "extra misses")))
	for _, m := range missed {
		fmt.Fprintf(&b, "- missed: %s\n", m)
	}
	fmt.Fprintf(&b, "\n## Hit rate per second from 5 s before the drain\n\n")
	for _, r := range []*zoneDrainResult{warm, cold} {
		var parts []string
		for _, s := range r.seconds {
			if s.at < r.drainStart-5*time.Second {
				continue
			}
			if h, ok := s.hitRate(); ok {
				mark := ""
				if s.at > r.drainStart && s.at <= r.drainStart+r.drainTook+time.Second {
					mark = "*"
				}
				parts = append(parts, fmt.Sprintf("%.1f%s", 100*h, mark))
			}
		}
		fmt.Fprintf(&b, "- %s: %s\n", r.cfg.name, strings.Join(parts, " "))
	}
	fmt.Fprintf(&b, "\n(* : a second of the drain, from the PUT to the state `drained`.)\n")
	return os.WriteFile(filepath.Join(dir, "report.md"), []byte(b.String()), 0o644)
}

// otherZones returns zones without drained.
func otherZones(zones []string, drained string) []string {
	var out []string
	for _, z := range zones {
		if z != drained {
			out = append(out, z)
		}
	}
	return out
}
