package ratelimit

import (
	"sync"
	"time"

	"github.com/mcrib/mcrib/hitrate"
)

// Limiter is the boot limiter's whole pipeline, with no I/O and no clock:
// every method that needs the time takes it. Every stats interval, a
// reading of the nodes' counters goes through two hit-rate meters (the
// pool's, as applications see it, and the controller's input, the same less
// the nodes planned moves touched: hitrate.Counters.Planned), gives the
// boot-surge slow start its reading and, while the Limiter decides (Lead),
// steps the Controller, trying the surge judgement when the slow start asks
// for one. Admit answers one boot: the slow start first, then an Admitter
// kept equal to the document in force.
//
// A Limiter whose document is its own, as the simulator's, calls Observe
// every interval. Service, whose document of record is in Consul KV, takes
// Observe's steps one by one so that no change is enforced before it is
// written: Measure, then Decide, which tries the controller's step on a
// copy; Keep once the step is written (or changes nothing), and Adopt for
// every document written, read back or set by someone else.
//
// The zero value is not usable; build a Limiter with NewLimiter. A Limiter
// is safe for concurrent use; Admit takes none of its locks and does not
// allocate.
type Limiter struct {
	cfg  ControllerConfig
	slow *SlowStart // the boot-surge slow start in front of adm
	adm  *Admitter

	mu    sync.Mutex    // guards the fields below
	meter hitrate.Meter // the pool's hit rate, as applications see it
	input hitrate.Meter // the controller's and the slow start's: planned moves left out
	// The last Measure's figures (HitRate, Slots).
	rate    float64
	known   bool
	slots   hitrate.Slots
	doc     Document // the document in force
	adopted bool     // a document was adopted: until then doc is NewLimiter's
	ctrl    *Controller
	// gen counts the changes of ctrl (a step kept, a document adopted, a
	// start or end of deciding), so that Keep drops a stale Proposal.
	gen uint64
}

// NewLimiter returns a Limiter configured by cfg (valid: see
// ControllerConfig.Validate) that enforces doc until another is adopted.
// It does not decide before Lead.
func NewLimiter(cfg ControllerConfig, doc Document) *Limiter {
	l := &Limiter{
		cfg:   cfg,
		slow:  NewSlowStart(cfg),
		adm:   NewAdmitter(doc.Limit, doc.Burst),
		input: hitrate.Meter{LeavesOutPlanned: true},
		doc:   doc,
	}
	l.slow.SetLimit(doc.Limit, doc.Mode == ModeManual)
	return l
}

// Reading is what one stats interval measured (Limiter.Measure), and what
// Decide steps the controller with. A plain value.
type Reading struct {
	// At is the time of the reading.
	At time.Time
	// HitRate is the pool's smoothed hit rate, as applications see it;
	// Known is false when the interval counted no gets (no reading: it
	// tells nothing of the cache) and before any.
	HitRate float64
	Known   bool
	// Slots is what the reading knew of the slots: the unserved ones
	// counted as all misses for their share of the gets, the unreadable
	// ones left out (hitrate.Slots).
	Slots hitrate.Slots
	// Input is the controller's input, the hit rate less the nodes planned
	// moves touched; InputKnown is false when it counted no gets (then the
	// controller holds: Decide has nothing to step).
	Input      float64
	InputKnown bool

	surge surge
}

// surge is what a reading knows of a boot surge: judge says it judges
// one (SlowStart.Reading), capped at level, with the interval's own hit
// rate raw.
type surge struct {
	judge      bool
	raw, level float64
}

// Measure folds one reading of the nodes' counters, taken at now, into the
// hit rates (nodes: the served slots' holders' counters and their warm
// sources'; slots, how many slots there are, how many have no live holder
// and how many served ones could not be read) and gives the slow
// start its reading. It enforces nothing and does not step the controller:
// Decide does, with the Reading it returns.
func (l *Limiter) Measure(now time.Time, nodes map[string]hitrate.Counters, slots hitrate.Slots) Reading {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := Reading{At: now, Slots: slots}
	r.HitRate, r.Known = l.meter.Observe(now, nodes, slots)
	r.Input, r.InputKnown = l.input.Observe(now, nodes, slots)
	raw, haveRaw := l.input.Interval()
	level, judge := l.slow.Reading(now, r.InputKnown && haveRaw)
	r.surge = surge{judge: judge, raw: raw, level: level}
	l.rate, l.known, l.slots = r.HitRate, r.Known, slots
	return r
}

// Proposal is the controller's step on one reading, tried on a copy of the
// controller (Limiter.Decide): the Decision and the Document it leads to.
// Keep makes it the controller's state; a Proposal not kept changes
// nothing. A plain value.
type Proposal struct {
	Decision Decision
	// Document is the controller's document after the step; it is to be
	// written when Decision.Changed.
	Document Document

	trial Controller
	gen   uint64
}

// Decide steps a copy of the controller with r, judging the boot surge when
// r's slow-start reading judges one (Controller.ObserveSurge), and returns
// the Proposal; ok is false when the Limiter does not decide (no Lead) or r
// has no input (the controller holds). Nothing changes until Keep, so a
// Proposal that could not be written is dropped and Decide asked again once
// the document written meanwhile has been adopted.
func (l *Limiter) Decide(r Reading) (p Proposal, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctrl == nil || !r.InputKnown {
		return Proposal{}, false
	}
	p.trial, p.gen = *l.ctrl, l.gen
	if r.surge.judge {
		p.Decision, _ = p.trial.ObserveSurge(r.At, r.Input, r.surge.raw, r.surge.level)
	} else {
		p.Decision = p.trial.Observe(r.At, r.Input)
	}
	p.Document = p.trial.Document()
	return p, true
}

// Keep makes p's step the controller's state, once p.Document is written
// (or p changes nothing), and reports whether it did: a Proposal decided
// before the controller last changed (a document adopted, a step kept, a
// Follow) is stale and dropped. It gives the slow start the controller's
// verdict on a boot surge (SlowStart.Hold: held at a level, or over) but
// does not enforce p.Document: Adopt does.
func (l *Limiter) Keep(p Proposal) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctrl == nil || p.gen != l.gen {
		return false
	}
	*l.ctrl = p.trial
	l.gen++
	l.slow.Hold(l.ctrl.HeldSurge())
	return true
}

// Adopt makes doc the document in force at now: the admitter takes its
// limit and burst (when they changed, and at the first Adopt), the slow
// start its limit and mode (manual: no slow start), and a deciding
// controller takes it over (Controller.Adopt), which changes nothing when
// it is the controller's own.
func (l *Limiter) Adopt(doc Document, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	moved := !l.adopted || doc.Limit != l.doc.Limit || doc.Burst != l.doc.Burst
	l.doc, l.adopted = doc, true
	if moved {
		l.adm.Set(doc.Limit, doc.Burst, now)
	}
	l.slow.SetLimit(doc.Limit, doc.Mode == ModeManual)
	if l.ctrl != nil {
		held := l.ctrl.HeldSurge()
		l.ctrl.Adopt(doc, now)
		l.gen++
		if h := l.ctrl.HeldSurge(); h != held {
			l.slow.Hold(h) // the document ended the held surge
		}
	}
}

// Lead makes the Limiter decide: a controller starts from the document in
// force (NewController) and is kept across readings until Follow. It
// reports whether the Limiter did not decide before.
func (l *Limiter) Lead() (started bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctrl != nil {
		return false
	}
	l.ctrl = NewController(l.cfg, l.doc)
	l.gen++
	return true
}

// Follow stops the Limiter deciding and resets its slow start; it reports
// whether the Limiter decided before. A process that does not lead calls it
// after every Measure: the boots go to the leader, so what this process
// admits measures nothing, and a surge judged from it would cap the load it
// inherits once it leads. Kept reset, it takes the steady load it inherits
// for no surge and admits at the stored limit and burst from its first
// boot.
func (l *Limiter) Follow() (stopped bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	stopped = l.ctrl != nil
	l.ctrl = nil
	l.gen++
	l.slow.Reset()
	return stopped
}

// Observe is the whole pipeline of one stats interval for a Limiter whose
// document is its own: Measure, then, while it decides, Decide, Keep and,
// when the step changed the document, Adopt. It returns the Reading.
func (l *Limiter) Observe(now time.Time, nodes map[string]hitrate.Counters, slots hitrate.Slots) Reading {
	r := l.Measure(now, nodes, slots)
	if p, ok := l.Decide(r); ok && l.Keep(p) && p.Decision.Changed {
		l.Adopt(p.Document, now)
	}
	return r
}

// Admit decides one boot at now: ok, or refused with the wait for a
// Retry-After header (whole seconds, at least 1s). The boot-surge slow
// start decides first, then the limit in force. It does not allocate.
func (l *Limiter) Admit(now time.Time) (ok bool, retryAfter time.Duration) {
	if ok, retryAfter = l.slow.Allow(now); !ok {
		return false, retryAfter
	}
	if ok, retryAfter = l.adm.Admit(now); ok {
		l.slow.Admitted()
	}
	return ok, retryAfter
}

// Limit returns the limit enforced at now: the document's, or during a
// boot surge the slow start's allowance when it is lower.
func (l *Limiter) Limit(now time.Time) float64 {
	l.mu.Lock()
	limit := l.doc.Limit
	l.mu.Unlock()
	if a, on := l.slow.State(now); on {
		limit = min(limit, a)
	}
	return limit
}

// Adopted returns the document in force as it was adopted (or given to
// NewLimiter), without the live hit rate or the slow start.
func (l *Limiter) Adopted() Document {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.doc
}

// Document returns the document in force at now with the live hit rate
// when one is known (nil while HitRate is unknown) and, during a boot
// surge, the slow start: SlowStart true, EffectiveLimit the allowance and
// the reason saying so.
func (l *Limiter) Document(now time.Time) Document {
	l.mu.Lock()
	d := l.doc
	d.HitRate = nil
	if l.known {
		d.HitRate = RateOf(l.rate)
	}
	l.mu.Unlock()
	if a, on := l.slow.State(now); on && a < d.Limit {
		d.SlowStart, d.EffectiveLimit = true, a
		d.Reason = surgeReason(a, l.slow.Held()) + "; " + d.Reason
	}
	return d
}

// HitRate returns the pool's smoothed hit rate, as the last Measure gave
// it; ok is false while it is unknown: before an interval with gets, and
// after an interval without any.
func (l *Limiter) HitRate() (rate float64, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rate, l.known
}

// Slots returns what the last Measure knew of the slots: how many, how
// many unserved (counted as misses), how many unreadable (left out).
func (l *Limiter) Slots() hitrate.Slots {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.slots
}
