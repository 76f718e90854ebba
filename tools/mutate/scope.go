package main

// target is one package of the decision code that make mutate mutates.
type target struct {
	// Dir is the package's directory, relative to the module root.
	Dir string
	// Files are the patterns (path.Match, relative to Dir) of the files
	// whose code is mutated; _test.go files never are.
	Files []string
	// Short runs the package's tests with -short: its integration tests
	// would start Consul, and those processes cost more than a mutant's
	// budget.
	Short bool
}

// scope is the decision code (docs/testing.md#mutation-testing): the
// verdict and the tracker, owed flushes, planned moves, splits and
// warming, flap damping and the ceiling, the client's warm and routing
// paths, the boot gate and the hit-rate meter.
var scope = []target{
	{Dir: "controlloop", Files: []string{"verdict.go", "tracker.go", "vote.go", "owedflush.go", "flushes.go"}, Short: true},
	{Dir: "slotplan", Files: []string{"*.go"}},
	{Dir: "flapdamp", Files: []string{"*.go"}},
	{Dir: "mcclient", Files: []string{"warm*.go", "routing.go", "client.go"}},
	{Dir: "internal/bootgate", Files: []string{"*.go"}},
	{Dir: "hitrate", Files: []string{"*.go"}},
}

// mutators are the gremlins mutant types make mutate turns on: gremlins'
// defaults and the inversion of && and ||, which is how a decision's rule
// (a majority, "down and not frozen") is weakened.
var mutators = []string{
	"--arithmetic-base",
	"--conditionals-boundary",
	"--conditionals-negation",
	"--increment-decrement",
	"--invert-negatives",
	"--invert-logical",
}

// killerPackage is the package whose tests also count as killers of every
// mutant: the deterministic simulation, run as make test runs it (TestDST
// on its short seed set, the known bugs' seeds, the planted violations),
// less killerSkip.
const killerPackage = "dst"

// killerSkip is the -skip pattern of the dst runs: TestDeterminism runs
// one seed twice and compares the traces, more than half of the package's
// time; it tests the simulation, and a mutant, which changes one token of
// deterministic code, leaves the simulation as deterministic as it was.
const killerSkip = "^TestDeterminism$"
