package dst

import (
	"time"
)

// Plant breaks the world on purpose, for the checker's self-test: each of
// the tests in planted_test.go plants one violation of one rule (a fake
// that lies, a rogue writer) and expects the checker to name that rule.
// Production runs never set one.
type Plant struct {
	// Name names the plant in test output.
	Name string
	// setup schedules the plant's events once the world is built.
	setup func(w *world)
}

// plantState is what the plants set in force.
type plantState struct {
	// silent makes a node's probes fail until the time given, without the
	// ground truth knowing: a broken fake network.
	silent map[string]time.Duration
	// absent makes Consul report a node absent until the time given, while
	// the ground truth has it present: a lying Consul.
	absent map[string]time.Duration
	// ceiling, when above 0, is the --max-replacements-per-minute the
	// replicas run with (the checker keeps to the real one).
	ceiling int
	// absentFraction, when above 0, is the --max-absent-fraction the
	// replicas run with.
	absentFraction float64
	// liar makes a client's deletes report success and do nothing.
	liar string
	// pending overrides what the checker reads of the leader's
	// flush_pending, by node: a status that lies.
	pending map[string]bool
	// freshLie makes every replica answer its map as just read from
	// Consul (an X-Mcrib-Map-Age of 0), whatever its age.
	freshLie bool
}
