package ratelimit

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// The boot-surge slow start's constants (see SlowStart).
const (
	// SurgeFactor is K: a second with more boot requests than K times the
	// boots admitted per second between the last two stats readings (and
	// more than the floor) is a surge.
	SurgeFactor = 4
	// SlowStartDoublings is how many times the slow-start allowance
	// doubles in the first stats interval of a surge, once every
	// interval / (SlowStartDoublings + 1): 10, 20, 40 boots/s, a third of
	// the default 5 s each; then it holds until the reading that judges the
	// surge. Two, because 4 × the floor is the most a reading should have
	// to judge (see the README: set the floor at no more than a quarter of
	// what the database takes from a cold cache).
	SlowStartDoublings = 2
	// SlowStartUnjudged is how many stats intervals a surge lasts at most
	// when no reading gives a usable hit rate: then it is released.
	SlowStartUnjudged = 3
)

// SlowStart is the boot-surge slow start: the admission rate may not jump
// far above the recent admission rate before a hit-rate reading has shown
// the cache taking it. A healthy pool sits at the ceiling (a healthy cache
// is not throttled), and the hit rate shows a cold cache only at the next
// stats reading; without a slow start, every client booting at once into a
// cold cache would be admitted at the ceiling for up to a stats interval.
//
// A surge is a second (a window of one second from its first request),
// once two readings have measured the admitted rate, with more boot
// requests than max(floor, 1, SurgeFactor × the boots admitted
// per second between the last two readings), while the limit is more than
// twice the slow-start level. From the request that makes it a surge,
// admissions are capped by an allowance, enforced by its own token bucket
// (a tenth of a second's worth of burst), that starts at max(floor, 1, the
// admitted rate between the last two readings), doubles
// SlowStartDoublings times over the first stats interval and then holds
// (so the level a reading judges does not depend on when in the interval
// the surge began), until the first reading with a usable hit rate at
// least half an interval after the surge began. Reading says it is that
// reading and at which level the allowance stood, and admissions stay
// capped there until the leader has judged the interval's own hit rate
// from that level (Controller.ObserveSurge) and given its verdict (Hold):
// no fall releases the surge to the controller's limit, and no new surge
// begins before the next reading; a fall below the target hands over to
// the controller from the slow-start level (below Low it halves that
// level, a collapse between Low and the target holds at it); a fast fall
// that stays at or above the target holds the surge (SurgeHeld) at the
// level Hold gives at every reading, rising as the controller's limit
// would, while the limit stays. The surge also ends when the allowance
// reaches the limit, and, not judged yet, after SlowStartUnjudged
// intervals without a usable hit rate (no stats: nothing to wait for).
//
// In manual mode the operator's limit is exact and the slow start never
// applies. A SlowStart is leader-local state, not stored: its level is
// shown in Service.Document (slow_start, effective_limit), not written to
// Consul.
//
// Build one with NewSlowStart. A SlowStart is safe for concurrent use; its
// methods do not allocate and take the time as input.
type SlowStart struct {
	cfg ControllerConfig

	// The fast path of Allow and Admitted, without the mutex: while no
	// surge is on and a second's requests stay at or under trigger, a boot
	// costs three atomic operations.
	winStart atomic.Int64 // start of the current one-second window of requests (Unix ns; 0: none yet)
	asked    atomic.Int64 // requests in that window
	admitted atomic.Int64 // admissions since readAt
	onFlag   atomic.Bool  // on, readable without the mutex
	trigger  atomic.Int64 // requests in a second above which Allow takes the mutex

	mu     sync.Mutex
	limit  float64 // the limit in force (the controller's or the operator's)
	manual bool

	readAt time.Time // the last reading; zero before the first
	rate   float64   // admissions per second between the last two readings
	known  bool      // rate was measured: two readings since NewSlowStart or Reset

	on       bool
	released bool // a reading released a surge: none begins before the next reading
	// held: the controller holds the surge (Hold), or a reading judged it
	// and the controller's verdict is still to come (pending): the
	// allowance stays at from, no reading judges it again, and it lasts
	// until Hold ends it (or, pending, until the next reading).
	held    bool
	pending bool
	since   time.Time // when the surge began
	from    float64   // the allowance at since
	tokens  float64
	last    time.Time // latest time seen by the bucket
}

// NewSlowStart returns the slow start of a pool configured by cfg, with
// no surge and no limit (SetLimit gives it one).
func NewSlowStart(cfg ControllerConfig) *SlowStart {
	s := &SlowStart{cfg: cfg}
	s.trigger.Store(math.MaxInt64)
	return s
}

// rearmLocked publishes on and the surge threshold for the fast path of
// Allow, after any change of the state they derive from. It requires s.mu.
func (s *SlowStart) rearmLocked() {
	s.onFlag.Store(s.on)
	t := int64(math.MaxInt64)
	if !s.manual && s.limit > 0 && !s.released && s.known && 2*s.start() < s.limit {
		t = int64(math.Floor(max(s.start(), SurgeFactor*s.rate)))
	}
	s.trigger.Store(t)
}

// count counts one request at now in the current one-second window and
// returns the window's count. A late caller (a time before the window's
// start, as concurrent callers read the clock) counts in the current
// window; a request racing the start of a new window may go uncounted.
func (s *SlowStart) count(now time.Time) int64 {
	t := now.UnixNano()
	if w := s.winStart.Load(); w == 0 || t-w >= int64(time.Second) {
		if s.winStart.CompareAndSwap(w, t) {
			s.asked.Store(1)
			return 1
		}
	}
	return s.asked.Add(1)
}

// SetLimit tells the slow start the limit in force and whether it is an
// operator's (manual mode: no slow start; a surge in progress ends).
func (s *SlowStart) SetLimit(limit float64, manual bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limit, s.manual = limit, manual
	defer s.rearmLocked()
	if manual {
		s.endLocked()
	}
}

// endLocked ends the surge in progress, if any. It requires s.mu.
func (s *SlowStart) endLocked() { s.on, s.held, s.pending = false, false, false }

// doubling is the time the allowance takes to double: the first interval
// has SlowStartDoublings + 1 levels.
func (s *SlowStart) doubling() time.Duration {
	return max(s.cfg.Interval/(SlowStartDoublings+1), time.Millisecond)
}

// start is the level a surge starting now starts from.
func (s *SlowStart) start() float64 { return max(s.cfg.Floor, 1, s.rate) }

// allowance returns the surge's allowance at now: doubling
// SlowStartDoublings times over the first interval, then holding; a held
// surge's is its level. It requires s.mu.
func (s *SlowStart) allowance(now time.Time) float64 {
	if s.held {
		return s.from
	}
	n := min(max(now.Sub(s.since), 0)/s.doubling(), SlowStartDoublings)
	return s.from * math.Exp2(float64(n))
}

// Allow counts one boot request at now and reports whether the slow start
// lets it through to the limiter; when it does not, retryAfter is the wait
// for its next token (whole seconds, at least 1s). Call Admitted when the
// boot is then admitted.
func (s *SlowStart) Allow(now time.Time) (ok bool, retryAfter time.Duration) {
	asked := s.count(now)
	if !s.onFlag.Load() && asked <= s.trigger.Load() {
		return true, 0 // no surge: the fast path
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.rearmLocked()
	if now.Before(s.last) {
		now = s.last // a late caller: never run the bucket backwards
	}
	if s.manual || !(s.limit > 0) {
		return true, 0
	}
	if !s.on {
		if s.released || !s.known {
			return true, 0
		}
		level := s.start()
		if float64(asked) <= max(level, SurgeFactor*s.rate) || 2*level >= s.limit {
			return true, 0
		}
		s.on, s.since, s.from, s.tokens, s.last = true, now, level, 1, now
	}
	a := s.allowance(now)
	if a >= s.limit || s.unjudged(now) {
		s.endLocked()
		return true, 0
	}
	s.tokens = min(s.tokens+a*now.Sub(s.last).Seconds(), float64(DefaultBurst(a)))
	s.last = now
	if s.tokens >= 1 {
		s.tokens--
		return true, 0
	}
	return false, wholeSeconds(time.Duration((1 - s.tokens) / a * float64(time.Second)))
}

// Reset forgets the admitted rate and ends any surge: a process that has
// just become the leader has not seen the pool's admissions (its followers
// forwarded them to the old leader), so it detects no surge before two
// readings of its own have measured them.
func (s *SlowStart) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.readAt, s.rate, s.known = time.Time{}, 0, false
	s.admitted.Store(0)
	s.endLocked()
	s.released = false
	s.rearmLocked()
}

// Admitted counts one boot admitted.
func (s *SlowStart) Admitted() { s.admitted.Add(1) }

// Reading is called at every stats reading, at now; usable says whether
// it gave a hit rate. It takes the admitted rate since the previous reading
// and reports whether this reading judges a surge: the first usable one at
// least half an interval after the surge began. Then level is the
// allowance the surge had reached, from which the caller's controller
// judges the reading (Controller.ObserveSurge), and the surge stays capped
// at level until Hold gives the verdict (or, when none comes, until the
// next reading, which ends it). A held surge is not judged here: the
// controller steps it at every reading, and Hold moves or ends it.
func (s *SlowStart) Reading(now time.Time, usable bool) (level float64, judge bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.rearmLocked()
	admitted := float64(s.admitted.Swap(0))
	if !s.readAt.IsZero() && now.After(s.readAt) {
		s.rate, s.known = admitted/now.Sub(s.readAt).Seconds(), true
	}
	s.readAt = now
	s.released = false
	if s.pending {
		s.endLocked() // judged at the last reading, and no verdict came
	}
	if !s.on {
		return 0, false
	}
	a := s.allowance(now)
	if a >= s.limit || s.unjudged(now) {
		s.endLocked()
		return 0, false
	}
	if s.held || !usable || now.Sub(s.since) < s.cfg.Interval/2 {
		return 0, false
	}
	s.from, s.held, s.pending = a, true, true
	return roundLimit(a), true
}

// Hold gives the controller's verdict on a held or judged surge
// (Controller.HeldSurge): a level above 0 holds it there (SurgeHeld), 0
// ends it, and no new surge begins before the next reading. A surge not
// yet judged is left alone, and so is the slow start without one.
func (s *SlowStart) Hold(level float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.rearmLocked()
	if !s.on || !s.held {
		return
	}
	if level <= 0 || level >= s.limit || s.manual {
		s.endLocked()
		s.released = true
		return
	}
	s.from, s.pending = level, false
}

// Held reports whether the surge in progress is held by the controller
// (SurgeHeld) or waits for its verdict.
func (s *SlowStart) Held() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.on && s.held
}

// State returns the allowance at now and whether a surge is capping
// admissions.
func (s *SlowStart) State(now time.Time) (allowance float64, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.on {
		return 0, false
	}
	a := s.allowance(now)
	if a >= s.limit || s.unjudged(now) {
		return 0, false
	}
	return roundLimit(a), true
}

// unjudged reports whether the surge has gone SlowStartUnjudged intervals
// without a reading able to judge it; a held surge has been judged. It
// requires s.mu.
func (s *SlowStart) unjudged(now time.Time) bool {
	return !s.held && now.Sub(s.since) >= SlowStartUnjudged*s.cfg.Interval
}

// surgeReason is the sentence of a document during a surge; held says the
// controller holds it (SurgeHeld).
func surgeReason(allowance float64, held bool) string {
	if held {
		return fmt.Sprintf("boot surge: held at %s boots/s, rising while the hit rate stays at or above the target", fmtLimit(allowance))
	}
	return fmt.Sprintf("boot surge: slow start at %s boots/s until the hit rate is read", fmtLimit(allowance))
}
