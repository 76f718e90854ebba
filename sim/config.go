package sim

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// ErrBadConfig is wrapped by the errors of a configuration the simulator
// cannot run.
var ErrBadConfig = errors.New("sim: bad configuration")

// Scenario names (the --scenario flag).
const (
	AgentRollout = "agent-rollout"
	NodeFailure  = "node-failure"
	Partition    = "partition"
	ObserverBlip = "observer-blip"
	PacketLoss   = "packet-loss"
	ColdStart    = "cold-start"
	ZoneDrain    = "zone-drain"
	// Deploy restarts every client at peak with the caches warm: what the
	// boot limiter's slow start costs a deploy.
	Deploy = "deploy"
	// Grow doubles the slots at peak (grow.go).
	Grow = "grow"
)

// Scenarios lists every scenario in the report's order.
func Scenarios() []string {
	return []string{AgentRollout, NodeFailure, Partition, ObserverBlip, PacketLoss, ColdStart, Deploy, ZoneDrain, Grow}
}

// Policy names (the --policy flag); static boot limits are "static:N".
const (
	PolicyImmediate = "immediate"
	PolicyMCrib     = "mcrib"
	PolicyMCribCold = "mcrib-cold"
	PolicyAdaptive  = "adaptive"
	// PolicyNaive runs mcrib's loop but grows the pool as a resize
	// without twins would: the clients switch at once to a plain map of
	// twice the slots (grow only).
	PolicyNaive  = "naive"
	policyStatic = "static:"
)

// Policy is one way to run the pool: who decides the slot map (mcrib's
// loop, or the 2022 behaviour) and how client boots are limited.
type Policy struct {
	// Name is as given to --policy.
	Name string
	// Immediate is the 2022 behaviour: replace on Consul's word, flush a
	// returning node, no boot limit.
	Immediate bool
	// Static, when above 0, is a fixed boot limit (boots/s); 0 with
	// Immediate false is the adaptive limiter.
	Static float64
	// Cold runs mcrib's loop with --warm-for 0s: every move is cold.
	Cold bool
	// Naive grows the pool at once without twins (grow only); it runs
	// cold.
	Naive bool
}

// ParsePolicy parses one --policy value.
func ParsePolicy(s string) (Policy, error) {
	switch {
	case s == PolicyImmediate:
		return Policy{Name: s, Immediate: true}, nil
	case s == PolicyMCrib || s == PolicyAdaptive:
		return Policy{Name: s}, nil
	case s == PolicyMCribCold:
		return Policy{Name: s, Cold: true}, nil
	case s == PolicyNaive:
		return Policy{Name: s, Cold: true, Naive: true}, nil
	case strings.HasPrefix(s, policyStatic):
		n, err := strconv.ParseFloat(strings.TrimPrefix(s, policyStatic), 64)
		if err != nil || !(n > 0) || n > 1e6 {
			return Policy{}, fmt.Errorf("%w: policy %q: static:N needs a number of boots/s above 0", ErrBadConfig, s)
		}
		return Policy{Name: s, Static: n}, nil
	}
	return Policy{}, fmt.Errorf("%w: unknown policy %q (immediate, mcrib, mcrib-cold, naive, adaptive, static:N)", ErrBadConfig, s)
}

// Config is one simulation run: the pool, its flags, the workload and the
// scenario. Zero fields take the defaults of WithDefaults.
type Config struct {
	Scenario string
	Policy   Policy
	Seed     uint64

	// Nodes is the number of memcached nodes; Slots the number of slots
	// (default: the largest power of two not above Nodes × 7/8).
	Nodes, Slots int
	// Warmup runs before the scenario starts (its last half measures the
	// baseline); Duration is the time simulated after it (default: the
	// scenario's own length).
	Warmup, Duration time.Duration

	// mcrib serve's flags.
	Hold                     time.Duration
	ProbeInterval            time.Duration
	FlushAfterUnreachable    time.Duration
	MaxAbsentFraction        float64
	MaxReplacementsPerMinute int
	StatsInterval            time.Duration
	BootLimitMin             float64
	BootLimitMax             float64
	HitRateLow               float64
	HitRateTarget            float64
	// WarmFor is mcrib serve's --warm-for as a fixed window (default 2m,
	// the old default of mcrib serve): the simulated mcrib neither ends a
	// warming at convergence nor copies its hot keys yet. The policy
	// mcrib-cold runs with 0s whatever it says.
	WarmFor time.Duration
	// WarmMin is mcrib serve's --warm-min: when above 0 the simulated
	// mcrib ends a warming once its new holder is warm, by the
	// convergence rule of mcrib serve (docs/api.md, "Converged"); 0 (the
	// default) keeps every warming for its whole WarmFor.
	WarmMin time.Duration
	// WarmCopyRate is mcrib serve's --warm-copy-rate in bytes a second
	// per move: when above 0 the simulated leader copies each warming
	// slot's keys from its warm source into its new holder, most recently
	// read first, ItemBytes a key (warmcopy.go); 0 (the default) copies
	// nothing.
	WarmCopyRate int64
	// ItemBytes is the size of one item for the copy (default 1000).
	ItemBytes int
	// Fleet, when set, is a live pool to simulate instead of a made-up
	// one: its nodes (IDs, addresses, zones) and its slot map, which the
	// simulated mcrib starts from (whatif.go). Nodes and Slots then come
	// from it.
	Fleet *Fleet

	// The workload: Clients application processes each reading
	// ReadsPerClient keys a second (Zipf over Keys keys, exponent
	// ZipfS), of which SampledReads a second (at the full fleet; default
	// all) are simulated one by one, each standing for the rest. Sampling
	// is faster but slows the refill of a cold cache by the sampling
	// factor (a sampled miss fills one key for all the misses it stands
	// for). A boot reads BootReads keys. Clients restart ChurnPerHour
	// times an hour each.
	Clients        int
	ReadsPerClient float64
	SampledReads   int
	Keys           int
	ZipfS          float64
	ItemsPerNode   int
	BootReads      int
	ChurnPerHour   float64
	// DBCapacity is the database's capacity in queries a second; a
	// query beyond it fails and leaves the cache unfilled.
	DBCapacity float64
	// LossRate is the share of probes and Consul checks lost during
	// packet-loss (default 1e-4).
	LossRate float64

	// noDrain runs zone-drain without its drain (grow without its
	// growth): the twin run its extra database misses are counted
	// against.
	noDrain bool
	// action is the what-if's action (whatif.go); nil for the scenarios.
	action *Action
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	defF := func(p *float64, v float64) {
		if *p == 0 {
			*p = v
		}
	}
	defD := func(p *time.Duration, v time.Duration) {
		if *p == 0 {
			*p = v
		}
	}
	if c.Policy.Name == "" {
		c.Policy = Policy{Name: PolicyMCrib}
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	def(&c.Nodes, 64)
	if c.Slots == 0 {
		c.Slots = 1 << (bits.Len(uint(max(1, c.Nodes*7/8))) - 1)
		if c.Scenario == Grow {
			c.Slots = growSlots(c.Nodes)
		}
	}
	defD(&c.Warmup, 10*time.Minute)
	defD(&c.Hold, 60*time.Second)
	defD(&c.ProbeInterval, 2*time.Second)
	defF(&c.MaxAbsentFraction, 0.25)
	def(&c.MaxReplacementsPerMinute, 2)
	defD(&c.StatsInterval, 5*time.Second)
	defF(&c.BootLimitMin, 10)
	defF(&c.BootLimitMax, 1000)
	defF(&c.HitRateLow, 0.80)
	defF(&c.HitRateTarget, 0.90)
	defD(&c.WarmFor, 2*time.Minute)
	def(&c.ItemBytes, 1000)
	if c.Fleet != nil {
		c.Nodes, c.Slots = len(c.Fleet.Nodes), c.Fleet.Map.NumSlots()
	}
	def(&c.Clients, 2000)
	defF(&c.ReadsPerClient, 10)
	def(&c.SampledReads, int(math.Round(float64(c.Clients)*c.ReadsPerClient)))
	def(&c.ItemsPerNode, 4000)
	if c.Scenario == Grow {
		def(&c.Keys, c.Slots*c.ItemsPerNode) // what the slot holders hold: growth gains no hits
	}
	def(&c.Keys, 4*c.Slots*c.ItemsPerNode)
	defF(&c.ZipfS, 1.2)
	def(&c.BootReads, 200)
	defF(&c.ChurnPerHour, 1)
	defF(&c.DBCapacity, 2400)
	defF(&c.LossRate, 1e-4)
	return c
}

// Validate reports whether c (with its defaults) can run.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrBadConfig}, args...)...)
	}
	switch {
	case c.Scenario == whatIfScenario && c.action == nil:
		return bad("the scenario %s runs only from a what-if", whatIfScenario)
	case c.Scenario != whatIfScenario && !isScenario(c.Scenario):
		return bad("unknown scenario %q (%s)", c.Scenario, strings.Join(Scenarios(), ", "))
	case c.Nodes < 1 || c.Nodes > 20000:
		return bad("--nodes must be from 1 to 20000")
	case c.Slots < 1 || c.Slots > 4096 || c.Slots&(c.Slots-1) != 0 || (c.Slots > c.Nodes && c.Fleet == nil):
		return bad("--slots must be a power of two from 1 to 4096, at most --nodes")
	case c.Clients < 1 || c.ReadsPerClient <= 0 || c.SampledReads < 1:
		return bad("the workload needs clients, reads and sampled reads above 0")
	case float64(c.SampledReads) > float64(c.Clients)*c.ReadsPerClient:
		return bad("--sampled-reads must not exceed the real reads a second")
	case c.ZipfS <= 1:
		return bad("the Zipf exponent must be above 1")
	case c.DBCapacity <= 0:
		return bad("the database capacity must be above 0")
	case !(c.LossRate > 0 && c.LossRate < 1):
		return bad("the loss rate must be between 0 and 1")
	case c.WarmFor < 0 || c.WarmMin < 0 || c.WarmCopyRate < 0:
		return bad("--warm-for, --warm-min and --warm-copy-rate must not be negative")
	case c.Scenario == ZoneDrain && c.Nodes < len(zones):
		return bad("zone-drain needs at least %d nodes, one in each zone", len(zones))
	case c.Scenario == Grow && 2*c.Slots > c.Nodes:
		return bad("grow needs a spare for every slot: --slots at most half of --nodes")
	case c.Policy.Naive && !Applies(c.Scenario, c.Policy):
		return bad("the policy %s is a way to grow the pool: it runs the scenario %s only", c.Policy.Name, Grow)
	case !Applies(c.Scenario, c.Policy):
		return bad("%s needs mcrib's loop (policy mcrib, mcrib-cold, adaptive or static:N); %s has no drain nor resize", c.Scenario, c.Policy.Name)
	}
	return nil
}

func isScenario(s string) bool {
	for _, n := range Scenarios() {
		if n == s {
			return true
		}
	}
	return false
}
