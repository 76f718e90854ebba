package dst

import (
	"container/heap"
	"time"
)

// event is one step of the simulation: fn runs at simulated time at. Events
// at the same time run in the order they were scheduled (seq), so the
// order never depends on anything but the seed.
type event struct {
	at   time.Duration
	seq  uint64
	name string
	fn   func()
}

// eventQueue is the simulation's agenda, a min-heap by (at, seq).
type eventQueue []*event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(*event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return e
}

// at schedules fn at simulated time t (not before now), in whole
// milliseconds: every event of a run falls on a millisecond.
func (w *world) at(t time.Duration, name string, fn func()) {
	t = t.Round(time.Millisecond)
	if t < w.now {
		t = w.now
	}
	w.seq++
	heap.Push(&w.queue, &event{at: t, seq: w.seq, name: name, fn: fn})
}

// after schedules fn d from now.
func (w *world) after(d time.Duration, name string, fn func()) { w.at(w.now+d, name, fn) }

// every schedules fn at first and then every period, for as long as alive
// reports true (checked before each run; nil: forever).
func (w *world) every(first, period time.Duration, name string, alive func() bool, fn func()) {
	var tick func()
	tick = func() {
		if alive != nil && !alive() {
			return
		}
		fn()
		w.after(period, name, tick)
	}
	w.at(first, name, tick)
}
