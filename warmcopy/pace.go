package warmcopy

import (
	"time"

	"golang.org/x/time/rate"
)

// SlowAnswer is how long the source may take to answer a gets before the
// copy halves its rate: it runs at half rate while the source's last
// answer to a gets took longer.
const SlowAnswer = 50 * time.Millisecond

// paceBurst is the share of a second's bytes the pace lets through at
// once: 100 ms worth.
const paceBurst = 10

// pace holds a copy to its rate, in bytes of value per second: a token
// bucket (x/time/rate) that a batch pays for after its gets has read it
// (it may run into debt), and that the next batch waits on until the debt
// is paid. It halves the rate while the source answers slowly. It takes
// time as an input and is not safe for concurrent use.
type pace struct {
	lim    *rate.Limiter
	full   rate.Limit
	burst  int
	halved bool
}

// newPace returns a pace of bytesPerSec (> 0) bytes a second, its bucket
// full.
func newPace(bytesPerSec int64) *pace {
	burst := int(max(bytesPerSec/paceBurst, 1))
	return &pace{lim: rate.NewLimiter(rate.Limit(bytesPerSec), burst), full: rate.Limit(bytesPerSec), burst: burst}
}

// charge pays for n bytes read at now.
func (p *pace) charge(now time.Time, n int) {
	for n > 0 {
		k := min(n, p.burst) // a reservation takes at most the burst
		p.lim.ReserveN(now, k)
		n -= k
	}
}

// delay returns how long from now until the bytes charged are paid for.
func (p *pace) delay(now time.Time) time.Duration {
	return p.lim.ReserveN(now, 0).DelayFrom(now)
}

// answered takes the time a gets took, answered at now: slower than
// SlowAnswer, the rate is halved until a gets is answered in time again.
// It reports whether the answer was slow.
func (p *pace) answered(now time.Time, took time.Duration) bool {
	slow := took > SlowAnswer
	if slow != p.halved {
		p.halved = slow
		l := p.full
		if slow {
			l /= 2
		}
		p.lim.SetLimitAt(now, l)
	}
	return slow
}
