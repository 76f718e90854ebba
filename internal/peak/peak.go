// Package peak remembers the largest count in force over a recent window:
// how many instances (or replicas) a pool had, for those who divide a
// limit among them and must not take a count that is unknown, zero or late
// for a smaller pool (invariant 8 of the project's contract, in
// docs/api.md). It imports only the standard library.
package peak

import "time"

// Window is how long a Count remembers the counts it saw: while the
// current count is unknown, zero or late (smaller than one seen in the
// last Window), its peak is the largest of them.
const Window = 10 * time.Minute

// Count is the largest instance count in force at any moment of the
// last Window: the current count, and each earlier one until the
// moment it was replaced. A count of 0 (no instance passing: the health
// checks, or the service's name, may be wrong) is never the peak; it is
// kept as the current count so that a later positive count replaces it.
//
// The zero value has seen no count. A Count takes the time as input and
// is not safe for concurrent use.
type Count struct {
	current int
	// past holds the counts replaced within the window, each with the
	// moment it was replaced, oldest first, strictly decreasing in count
	// (a count below a later one can never be the peak again).
	past []pastCount
}

// pastCount is a count that was in force until until.
type pastCount struct {
	n     int
	until time.Time
}

// Observe records n as the count in force from now.
func (p *Count) Observe(now time.Time, n int) {
	if prev := p.current; prev > 0 {
		for len(p.past) > 0 && p.past[len(p.past)-1].n <= prev {
			p.past = p.past[:len(p.past)-1]
		}
		p.past = append(p.past, pastCount{n: prev, until: now})
	}
	p.current = n
	p.expire(now)
}

// expire forgets the counts replaced Window or more before now.
func (p *Count) expire(now time.Time) {
	i := 0
	for i < len(p.past) && now.Sub(p.past[i].until) >= Window {
		i++
	}
	p.past = p.past[i:]
}

// Current returns the count observed last (0 when none was).
func (p *Count) Current() int { return p.current }

// Peak returns the largest count in force within Window of now; ok is
// false when there is none above 0.
func (p *Count) Peak(now time.Time) (n int, ok bool) {
	p.expire(now)
	n = p.current
	if len(p.past) > 0 {
		n = max(n, p.past[0].n)
	}
	return n, n > 0
}

// Next returns when the peak may next fall: when the oldest remembered
// count leaves the window; ok is false when nothing is remembered.
func (p *Count) Next() (at time.Time, ok bool) {
	if len(p.past) == 0 {
		return time.Time{}, false
	}
	return p.past[0].until.Add(Window), true
}
