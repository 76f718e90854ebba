package dst

import (
	"time"

	"github.com/mcrib/mcrib/clock"
)

// maxSkew bounds each host's clock offset from the simulated time: every
// host's clock is within ±maxSkew of it, so any two hosts are at most
// 2 × maxSkew (1 s) apart, steps included.
const maxSkew = 500 * time.Millisecond

// hostClock is the clock of one simulated host: the simulated time plus
// the host's skew. The driven code only reads it (Now); it never waits on
// it, because the simulation drives every loop itself, so a timer or a
// ticker asked of it is a bug of the simulation and panics.
type hostClock struct {
	w    *world
	host *host
}

var _ clock.Clock = hostClock{}

// Now returns the host's time.
func (c hostClock) Now() time.Time { return c.w.start.Add(c.w.now + c.host.skew) }

func (c hostClock) NewTimer(time.Duration) clock.Timer {
	panic("dst: the driven code armed a timer on a simulated host's clock; drive it instead")
}

func (c hostClock) NewTicker(time.Duration) clock.Ticker {
	panic("dst: the driven code armed a ticker on a simulated host's clock; drive it instead")
}
