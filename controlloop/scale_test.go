package controlloop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/kvlayout"
	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/mcribapi"
)

// scaleProber answers every probe at once, except for the addresses of
// nodes that left (they stop answering, as a dead node would).
type scaleProber struct {
	gone  sync.Map // addr → true
	reads atomic.Int64
}

var errScaleGone = errors.New("connection refused")

func (p *scaleProber) Stats(ctx context.Context, addr string) (cachenodes.Stats, error) {
	p.reads.Add(1)
	if _, gone := p.gone.Load(addr); gone {
		return cachenodes.Stats{}, errScaleGone
	}
	return cachenodes.Stats{PID: 1, Uptime: time.Hour, GetHits: 90, GetMisses: 10}, nil
}

func (p *scaleProber) Flush(ctx context.Context, addr string) error { return nil }

// scaleMetrics keeps the pass durations.
type scaleMetrics struct {
	mu     sync.Mutex
	passes []time.Duration
	errs   int
}

func (m *scaleMetrics) Pass(result mcribapi.Outcome, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.passes = append(m.passes, d)
	if result == mcribapi.OutcomeError || result == mcribapi.OutcomeConflict {
		m.errs++
	}
}
func (m *scaleMetrics) Replacement(mcribapi.EvictionReason)  {}
func (m *scaleMetrics) Flush(string)                         {}
func (m *scaleMetrics) ConfigWrite(string, time.Time, error) {}
func (m *scaleMetrics) SlotMove(mcribapi.MoveKind)           {}

// chanDiscovery hands the loop the answers sent on its channel.
type chanDiscovery chan cachenodes.Membership

func (d chanDiscovery) Run(ctx context.Context, onAnswer func(cachenodes.Membership), onError func(error)) {
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-d:
			onAnswer(m)
		}
	}
}

// rssBytes returns this process's resident set size.
func rssBytes(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// TestScaleTenThousandNodes runs the real loop (the real reconcile path and
// the real Consul store, against a Consul agent with its default limits)
// over a pool of 10,000 nodes and 4,096 slots whose membership churns by 1%
// a minute, with a fake answer source and a fake prober. It checks that
// the map is stored, that no goroutine accumulates and, without the race
// detector, that the process stays under 128 MiB resident; it logs the
// pass times. MCRIB_SCALE_DURATION sets how long the churn runs (default
// 15s; `make scale` runs 10 minutes).
func TestScaleTenThousandNodes(t *testing.T) {
	const (
		numNodes = 10000
		numSlots = 4096
		every    = 6 * time.Second // 10 nodes every 6 s: 1% a minute
		perStep  = 10
	)
	runFor := 15 * time.Second
	if v := os.Getenv("MCRIB_SCALE_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("MCRIB_SCALE_DURATION: %v", err)
		}
		runFor = d
	}
	consul := testenv.StartConsul(t)
	prober := &scaleProber{}
	metrics := &scaleMetrics{}
	disc := make(chanDiscovery)
	loop, err := New(Options{
		Consul: consul.Client, Pool: "default", KVPrefix: "mcrib", NumSlots: numSlots, Service: "memcached",
		Hold: time.Minute, ProbeInterval: 2 * time.Second, MaxAbsentFraction: 0.25, MaxReplacementsPerMinute: 2,
		Discovery: disc, Prober: prober, Metrics: metrics,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { loop.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	next := 0
	newNode := func() cachenodes.Instance {
		i := next
		next++
		return cachenodes.Instance{Present: true, Node: cachenodes.Node{
			ID: fmt.Sprintf("memcached-%06d", i), Addr: fmt.Sprintf("10.%d.%d.%d:11211", i/65536, (i/256)%256, i%256), AZ: fmt.Sprintf("az-%c", 'a'+i%3)}}
	}
	members := make([]cachenodes.Instance, 0, numNodes)
	for range numNodes {
		members = append(members, newNode())
	}
	send := func() {
		m := cachenodes.Membership{Instances: slices.Clone(members)}
		slices.SortFunc(m.Instances, func(a, b cachenodes.Instance) int { return strings.Compare(a.ID, b.ID) })
		select {
		case disc <- m:
		case <-time.After(30 * time.Second):
			t.Fatal("the loop took no Consul answer for 30s")
		}
	}
	send()
	key := kvlayout.For("mcrib", "default").SlotMap()
	stored := func() *cachenodes.SlotMap {
		kv, _, err := consul.Client.KV().Get(key, nil)
		if err != nil || kv == nil {
			return nil
		}
		m, err := cachenodes.ParseSlotMap(kv.Value)
		if err != nil {
			t.Fatalf("the stored map does not parse: %v", err)
		}
		return m
	}
	testenv.Eventually(t, 60*time.Second, "a full map of 4,096 slots in Consul KV", func() bool {
		m := stored()
		return m != nil && vacant(m) == 0
	})
	kv, _, _ := consul.Client.KV().Get(key, nil)
	t.Logf("stored slot map: %d bytes in Consul KV (%d nodes, %d slots)", len(kv.Value), numNodes, numSlots)

	runtime.GC()
	baseGoroutines, baseRSS := goroutineFloor(), rssBytes(t)
	maxRSS := baseRSS
	start := time.Now()
	for step := 0; time.Since(start) < runFor; step++ {
		// 1% a minute: the oldest few leave (and stop answering), new ones join.
		for range perStep {
			k := step*perStep%len(members) + 1
			prober.gone.Store(members[k].Addr, true)
			members[k] = newNode()
		}
		send()
		time.Sleep(min(every, runFor))
		maxRSS = max(maxRSS, rssBytes(t))
	}
	goroutines := goroutineFloor()

	metrics.mu.Lock()
	passes := slices.Clone(metrics.passes)
	errs := metrics.errs
	metrics.mu.Unlock()
	slices.Sort(passes)
	pct := func(p float64) time.Duration {
		if len(passes) == 0 {
			return 0
		}
		return passes[min(len(passes)-1, int(p*float64(len(passes))))]
	}
	t.Logf("%v of churn: %d passes (%d failed), pass p50 %v p99 %v max %v; goroutines %d → %d; RSS %d MiB → max %d MiB (race detector: %v); %d probes",
		runFor, len(passes), errs, pct(0.5), pct(0.99), pct(1), baseGoroutines, goroutines, baseRSS>>20, maxRSS>>20, raceEnabled, prober.reads.Load())
	if errs > 0 {
		t.Errorf("%d passes failed", errs)
	}
	if goroutines > baseGoroutines+50 {
		t.Errorf("the floor of goroutines grew from %d to %d", baseGoroutines, goroutines)
	}
	if !raceEnabled && maxRSS > 128<<20 {
		t.Errorf("resident set reached %d MiB, over 128 MiB", maxRSS>>20)
	}
	if m := stored(); m == nil || m.NumSlots() != numSlots {
		t.Fatalf("the stored map is gone or wrong: %v", m)
	}
}

// goroutineFloor returns the fewest goroutines seen over one probe interval
// (2s): the probes come and go, each in a goroutine of its own, so the floor
// is what stays.
func goroutineFloor() int {
	floor := runtime.NumGoroutine()
	for range 40 {
		time.Sleep(50 * time.Millisecond)
		floor = min(floor, runtime.NumGoroutine())
	}
	return floor
}

func vacant(m *cachenodes.SlotMap) int {
	n := 0
	for _, s := range m.Slots() {
		if s.IsZero() {
			n++
		}
	}
	return n
}
