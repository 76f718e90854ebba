package dst

import (
	"io"
	"math/rand/v2"
	"time"

	"github.com/mcrib/mcrib/internal/revert"
	"github.com/mcrib/mcrib/ratelimit"
)

// The pool's settings that no seed changes: mcrib serve's defaults, but
// for --warm-for (shorter, so that warmings start and end within short
// runs).
const (
	probeInterval            = 2 * time.Second
	maxAbsentFraction        = 0.25
	maxReplacementsPerMinute = 2
	warmFor                  = time.Minute
	warmTTL                  = time.Hour
)

// Config is one run of the simulation. Only Seed and Duration matter for
// most callers; the zero value of every other field selects its default.
// The same Config gives the same run, byte for byte.
type Config struct {
	// Seed draws everything: the settings left open below, the faults,
	// the clients' operations.
	Seed uint64
	// Duration is the simulated time to run; default 10 minutes.
	Duration time.Duration
	// Replicas is the number of mcrib serve processes; zero draws 1 to 5
	// from the seed.
	Replicas int
	// NodeHosts is the number of memcached hosts, each running 2 or 3
	// memcached; default 8.
	NodeHosts int
	// Clients is the number of application processes; default 4.
	Clients int
	// Slots is --slots; default 16.
	Slots int
	// Keys is the size of the clients' key space; default 64.
	Keys int
	// Hold is --hold; zero draws 10 s to 20 s from the seed.
	Hold time.Duration
	// FlushAfter is --flush-after-unreachable, drawn from {0s, 10s} unless
	// FlushAfterSet.
	FlushAfter    time.Duration
	FlushAfterSet bool
	// Reverted turns fixes off, for the checker's self-test. It is one
	// parameter of the run: the world applies it (revert.Apply) to each
	// object under test it builds (the replicas' controlloop.Loop in
	// replica.go, the clients' mcclient.Client in client.go, the boot
	// gate in limiter.go, a planted handler through BootEnv).
	Reverted revert.Set
	// Tolerate names fixes known to be missing from the code under test:
	// a violation of a rule only that fix keeps is recorded in
	// Result.Tolerated and the run goes on.
	Tolerate revert.Set
	// Mix is the fault mix; the zero value is DefaultMix.
	Mix *Mix
	// TraceKeep is how many trace lines a failure prints; default 60.
	TraceKeep int
	// TraceOps traces every client and probe call, not only the failed
	// ones.
	TraceOps bool
	// Trace, when set, receives every trace line as it is written.
	Trace io.Writer
	// Logs, when set, receives the replicas' logs.
	Logs io.Writer
	// Boots drives boot admissions (boot.go); nil is the default, callers
	// against the real gate and limiter of every replica (limiter.go),
	// unless NoBoots.
	Boots   *BootConfig
	NoBoots bool
	// Planted, when set, breaks the world on purpose for the checker's
	// self-test (planted.go).
	Planted *Plant
	// varyMix is set when Mix was left to its default: the seed then
	// varies its weights and pace (variety.go).
	varyMix bool
}

func (c Config) withDefaults() Config {
	if c.Duration == 0 {
		c.Duration = 10 * time.Minute
	}
	if c.NodeHosts == 0 {
		c.NodeHosts = 8
	}
	if c.Clients == 0 {
		c.Clients = 4
	}
	if c.Slots == 0 {
		c.Slots = 16
	}
	if c.Keys == 0 {
		c.Keys = 64
	}
	if c.Boots == nil && !c.NoBoots {
		c.Boots = &BootConfig{Limit: bootCeiling, Burst: ratelimit.DefaultBurst(bootCeiling)}
	}
	if c.TraceKeep == 0 {
		c.TraceKeep = 60
	}
	if c.Mix == nil {
		m := DefaultMix()
		c.Mix, c.varyMix = &m, true
	}
	return c
}

// settings draws the pool's settings the seed chooses.
func (w *world) settings() {
	w.hold = w.cfg.Hold
	if w.hold == 0 {
		w.hold = time.Duration(10+w.rng.IntN(11)) * time.Second
	}
	w.flushAfter = w.cfg.FlushAfter
	if !w.cfg.FlushAfterSet {
		w.flushAfter = []time.Duration{0, 10 * time.Second}[w.rng.IntN(2)]
	}
	w.replicaCount = w.cfg.Replicas
	if w.replicaCount == 0 {
		w.replicaCount = w.drawReplicas()
	}
	w.drawContainers()
}

// Mix weighs the faults the seed draws, and how often they come.
type Mix struct {
	// Every is the mean time between two faults.
	Every time.Duration
	// Weights of each kind of fault (faults.go); zero leaves it out.
	Weights map[string]int
	// Interleave is the chance that a call of a client runs a second
	// operation of the same client from inside it.
	Interleave float64
}

// DefaultMix is the fault mix of the short seed set: faults every 5 s on
// average, biased toward what the known bugs need (blips near
// --flush-after-unreachable, drains, replicas restarting, lossy links to
// warm sources) while every fault stays one that happens to real pools.
func DefaultMix() Mix {
	return Mix{
		Every:      5 * time.Second,
		Interleave: 0.02,
		Weights: map[string]int{
			faultReplicaCrash:   6,
			faultRollingRestart: 2,
			faultReplicaCut:     4,
			faultLinkCut:        5,
			faultLinkLoss:       6,
			faultLinkSlow:       3,
			faultAgentRestart:   3,
			faultZoneAgents:     2,
			faultMemRestart:     2,
			faultMemPause:       6,
			faultMemDeath:       2,
			faultHostDeath:      2,
			faultJoin:           2,
			faultFreeze:         3,
			faultDrain:          4,
			faultReplace:        3,
			faultMaintenance:    2,
			faultResize:         3,
			faultClockStep:      3,
			faultConsulErrors:   2,
			faultConsulDown:     1,
			faultConsulLag:      3,
			faultObserverBlip:   2,
			faultReregister:     2,
		},
	}
}

// rngFor returns the run's generator.
func rngFor(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x6d637269622d6473))
}
