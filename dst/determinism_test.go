package dst

import (
	"testing"
	"time"

	"github.com/mcrib/mcrib/internal/revert"
)

// TestDeterminism runs seeds twice, every call traced, and wants the same
// trace hash: the same seed gives the same run, byte for byte, whatever
// order Go's maps iterate in. Under -short (make check) it runs one seed.
func TestDeterminism(t *testing.T) {
	seeds := []uint64{1, 2, 3}
	if testing.Short() {
		seeds = seeds[:1]
	}
	for _, seed := range seeds {
		cfg := Config{Seed: seed, Duration: 90 * time.Second, TraceOps: true, Tolerate: revert.Of(revert.All()...)}
		a, b := Run(cfg), Run(cfg)
		if a.TraceHash != b.TraceHash || a.Steps != b.Steps {
			t.Errorf("seed %d: two runs differ: %s after %d steps, then %s after %d steps", seed, a.TraceHash, a.Steps, b.TraceHash, b.Steps)
		}
	}
}
