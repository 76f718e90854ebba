package sim

import (
	"container/heap"
	"time"
)

// event is one thing that happens at a simulated time; events at the same
// time run in the order they were scheduled.
type event struct {
	at   time.Duration // since the start of the run
	prio int           // at the same time, lower first
	seq  uint64
	run  func()
}

// queue is the event queue of a run: a min-heap on (at, seq).
type queue struct {
	items []event
	seq   uint64
}

func (q *queue) Len() int { return len(q.items) }
func (q *queue) Less(i, j int) bool {
	a, b := q.items[i], q.items[j]
	if a.at != b.at {
		return a.at < b.at
	}
	if a.prio != b.prio {
		return a.prio < b.prio
	}
	return a.seq < b.seq
}
func (q *queue) Swap(i, j int) { q.items[i], q.items[j] = q.items[j], q.items[i] }
func (q *queue) Push(x any)    { q.items = append(q.items, x.(event)) }
func (q *queue) Pop() any {
	e := q.items[len(q.items)-1]
	q.items = q.items[:len(q.items)-1]
	return e
}

// at schedules run at the time at.
func (q *queue) at(at time.Duration, run func()) { q.atPrio(at, 1, run) }

// atPrio schedules run at the time at, before the events of a higher prio
// at the same time.
func (q *queue) atPrio(at time.Duration, prio int, run func()) {
	q.seq++
	heap.Push(q, event{at: at, prio: prio, seq: q.seq, run: run})
}

// every schedules run at first and then every period, for as long as the
// run lasts, with the given prio.
func (q *queue) every(first, period time.Duration, prio int, run func()) {
	var tick func()
	next := first
	tick = func() {
		run()
		next += period
		q.atPrio(next, prio, tick)
	}
	q.atPrio(first, prio, tick)
}

// next removes and returns the earliest event.
func (q *queue) next() event { return heap.Pop(q).(event) }
