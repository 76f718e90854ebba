package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/mcribapi"
)

// benchRealConfig shapes one real-stack agent rollout.
type benchRealConfig struct {
	name      string
	nodes     int           // memcached, each with its own client agent
	slots     int           // --slots; the rest are spares
	restarts  int           // agents restarted, one after another
	keys      uint64        // key space, all set before the run
	opsPerSec int           // bound on the load
	warmup    time.Duration // load before the baseline window
	baseline  time.Duration // the baseline window
	absences  []time.Duration
	gap       time.Duration // between one agent's return and the next stop
	tail      time.Duration // after the last agent returned
	interval  time.Duration // the chart's sampling interval
}

// absenceResult is one agent restart.
type absenceResult struct {
	node             string
	stopped, started time.Duration // since the load started
	hitRate          float64       // over stop .. start (plus the rejoin)
}

// sample is one interval of the summed memcached counters.
type sample struct {
	at           time.Duration // end of the interval, since the load started
	hits, misses uint64
	away         bool // some agent was away during the interval
}

// benchRealResult is what one run measured.
type benchRealResult struct {
	cfg                      benchRealConfig
	started                  time.Time
	elapsed                  time.Duration
	baseline, during, lowest float64
	absences                 []absenceResult
	samples                  []sample
	flushes                  map[string]uint64
	gen0, gen1               uint64
	generationsSeen          int
	events                   map[mcribapi.EventKind]int
	log                      []string // the events other than placements, "kind node at"
	reads, sets, writes      int64
	errs                     int64
}

// counters is the sum of get_hits and get_misses over the pool.
type counters struct{ hits, misses uint64 }

func (c counters) rateSince(prev counters) float64 {
	h, m := c.hits-prev.hits, c.misses-prev.misses
	if h+m == 0 {
		return 0
	}
	return float64(h) / float64(h+m)
}

// totals reads every memcached's counters.
func (p *pool) totals(t *testing.T) counters {
	t.Helper()
	var c counters
	for _, id := range p.ids {
		st := mustStats(t, p.nodes[id].Addr)
		c.hits += st.GetHits
		c.misses += st.GetMisses
	}
	return c
}

// runBenchReal starts the stack, runs the rollout under load and returns
// what it measured. It fails the test only when the stack does not work;
// the caller checks the targets.
func runBenchReal(t *testing.T, cfg benchRealConfig) *benchRealResult {
	p := newAgentPool(t, cfg.nodes)
	server, agents := p.consul, p.agents
	// serve's damping defaults (--hold 60s and the rest), fast probes.
	m := startMcrib(t, server.HTTPAddr, "--slots", fmt.Sprint(cfg.slots), "--probe-interval", "250ms")
	before := filled(t, p, m, cfg.slots)
	res := &benchRealResult{cfg: cfg, gen0: before.Generation(), events: map[mcribapi.EventKind]int{}}

	poller, client, err := newMapPoller(m.api)
	if err != nil {
		t.Fatal(err)
	}
	g := &cacheLoad{client: client, name: func(k uint64) string { return fmt.Sprintf("bench-%08d", k) },
		keys: cfg.keys, opsPerSec: cfg.opsPerSec, writeFrac: 0.03, workers: 4, seed: 0xbe9c4, prefillSeed: 0x9f11}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := g.prefill(ctx); err != nil {
		t.Fatal(err)
	}
	res.started = time.Now()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { poller.run(ctx) })
	wg.Go(func() { g.run(ctx) })
	var away sync.Mutex
	awayNow := false
	setAway := func(v bool) { away.Lock(); awayNow = v; away.Unlock() }
	samples := make(chan []sample, 1)
	wg.Go(func() {
		samples <- p.sample(ctx, cfg.interval, res.started, func() bool { away.Lock(); defer away.Unlock(); return awayNow })
	})

	time.Sleep(cfg.warmup)
	c0 := p.totals(t)
	time.Sleep(cfg.baseline)
	c1 := p.totals(t)
	res.baseline = c1.rateSince(c0)

	for i, absent := range cfg.absences {
		id := before.Slot(i * cfg.slots / len(cfg.absences)).ID
		a := absenceResult{node: id}
		cs := p.totals(t)
		setAway(true)
		a.stopped = time.Since(res.started)
		agents[id].Stop(t) // leaves: the node and its service vanish
		testenv.Eventually(t, 10*time.Second, id+" absent in mcrib's status", func() bool {
			n, ok := nodeStatus(m.status(), id)
			return ok && n.Consul == mcribapi.ConsulAbsent
		})
		time.Sleep(absent - (time.Since(res.started) - a.stopped))
		a.started = time.Since(res.started)
		agents[id].Start(t)
		p.register(t, id)
		testenv.Eventually(t, 10*time.Second, id+" present again", func() bool {
			n, ok := nodeStatus(m.status(), id)
			return ok && n.Consul == mcribapi.ConsulPresent && n.State == mcribapi.NodeServing
		})
		setAway(false)
		a.hitRate = p.totals(t).rateSince(cs)
		res.absences = append(res.absences, a)
		time.Sleep(cfg.gap)
	}
	time.Sleep(cfg.tail)
	res.during = p.totals(t).rateSince(c1)
	res.elapsed = time.Since(res.started)
	cancel()
	res.samples = <-samples

	res.lowest = 1
	for _, s := range res.samples {
		if s.at > cfg.warmup+cfg.baseline && s.hits+s.misses > 0 {
			res.lowest = min(res.lowest, float64(s.hits)/float64(s.hits+s.misses))
		}
	}
	res.flushes = p.flushes(t)
	res.gen1 = m.slotMap().Generation()
	res.generationsSeen = poller.generations()
	evs, err := m.api.events()
	if err != nil {
		t.Fatalf("GET /v1/events: %v", err)
	}
	for _, e := range evs {
		res.events[e.Kind]++
		if e.Kind != mcribapi.EventPlacement {
			res.log = append(res.log, fmt.Sprintf("%s %s %s", e.Kind, e.Node, e.At.Sub(res.started).Round(100*time.Millisecond)))
		}
	}
	res.reads, res.sets, res.writes, res.errs = g.reads.Load(), g.sets.Load(), g.writes.Load(), g.errs.Load()
	return res
}

// sample reads the pool's counters every interval until ctx ends and
// returns the per-interval deltas.
func (p *pool) sample(ctx context.Context, interval time.Duration, start time.Time, away func() bool) []sample {
	prober := cachenodes.NewProber(cachenodes.ProberOptions{Timeout: 2 * time.Second})
	read := func() (counters, bool) {
		var c counters
		for _, id := range p.ids {
			st, err := prober.Stats(ctx, p.nodes[id].Addr)
			if err != nil {
				return c, false
			}
			c.hits += st.GetHits
			c.misses += st.GetMisses
		}
		return c, true
	}
	var out []sample
	prev, _ := read()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	wasAway := false
	for {
		select {
		case <-ctx.Done():
			return out
		case <-tick.C:
		}
		a := away()
		cur, ok := read()
		if !ok {
			continue
		}
		out = append(out, sample{at: time.Since(start), hits: cur.hits - prev.hits, misses: cur.misses - prev.misses, away: a || wasAway})
		prev, wasAway = cur, a
	}
}

// benchRealTargets returns the agent rollout's targets (docs/performance.md) the run missed.
func benchRealTargets(r *benchRealResult) []string {
	var missed []string
	for id, n := range r.flushes {
		if n != 0 {
			missed = append(missed, fmt.Sprintf("node %s shows cmd_flush %d, want 0", id, n))
		}
	}
	if r.gen1 != r.gen0 || r.events[mcribapi.EventReplacement] != 0 || r.events[mcribapi.EventFlush] != 0 {
		missed = append(missed, fmt.Sprintf("slot map generation %d → %d, %d replacement and %d flush events; want no change",
			r.gen0, r.gen1, r.events["replacement"], r.events["flush"]))
	}
	if r.during < r.baseline-0.01 {
		missed = append(missed, fmt.Sprintf("hit rate %.2f%% during the rollout, more than 1 point below the baseline %.2f%%", 100*r.during, 100*r.baseline))
	}
	for _, a := range r.absences {
		if a.hitRate < r.baseline-0.01 {
			missed = append(missed, fmt.Sprintf("hit rate %.2f%% while %s's agent was away, more than 1 point below the baseline %.2f%%", 100*a.hitRate, a.node, 100*r.baseline))
		}
	}
	return missed
}

// String is a one-line summary for the test log.
func (r *benchRealResult) String() string {
	b, _ := json.Marshal(map[string]any{"baseline": r.baseline, "during": r.during, "lowest": r.lowest,
		"gen": []uint64{r.gen0, r.gen1}, "events": r.events, "log": r.log, "reads": r.reads, "errs": r.errs})
	return string(b)
}
