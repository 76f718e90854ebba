package ratelimit

import "time"

// PeakWindow is how long a Client remembers the instance counts it saw:
// while the current count is unknown, zero or late (smaller than one seen
// in the last PeakWindow), it shares the limit as if the pool had the
// largest of them.
const PeakWindow = 10 * time.Minute

// countPeak is the largest instance count in force at any moment of the
// last PeakWindow: the current count, and each earlier one until the
// moment it was replaced. A count of 0 (no instance passing: the health
// checks, or the service's name, may be wrong) is never the peak; it is
// kept as the current count so that a later positive count replaces it.
//
// The zero value has seen no count. A countPeak takes the time as input
// and is not safe for concurrent use (Client guards it).
type countPeak struct {
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

// observe records n as the count in force from now.
func (p *countPeak) observe(now time.Time, n int) {
	if prev := p.current; prev > 0 {
		for len(p.past) > 0 && p.past[len(p.past)-1].n <= prev {
			p.past = p.past[:len(p.past)-1]
		}
		p.past = append(p.past, pastCount{n: prev, until: now})
	}
	p.current = n
	p.expire(now)
}

// expire forgets the counts replaced PeakWindow or more before now.
func (p *countPeak) expire(now time.Time) {
	i := 0
	for i < len(p.past) && now.Sub(p.past[i].until) >= PeakWindow {
		i++
	}
	p.past = p.past[i:]
}

// peak returns the largest count in force within PeakWindow of now; ok is
// false when there is none above 0.
func (p *countPeak) peak(now time.Time) (n int, ok bool) {
	p.expire(now)
	n = p.current
	if len(p.past) > 0 {
		n = max(n, p.past[0].n)
	}
	return n, n > 0
}

// next returns when the peak may next fall: when the oldest remembered
// count leaves the window; ok is false when nothing is remembered.
func (p *countPeak) next() (at time.Time, ok bool) {
	if len(p.past) == 0 {
		return time.Time{}, false
	}
	return p.past[0].until.Add(PeakWindow), true
}
