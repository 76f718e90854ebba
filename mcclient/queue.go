package mcclient

import (
	"sync"
	"sync/atomic"
)

// replayQueue is one node's queue of keys whose delete did not reach it:
// first in, first out, each key at most once, at most max keys. It is safe
// for concurrent use; Len takes no lock, so the hot path can ask whether
// there is anything to replay with one atomic load.
type replayQueue struct {
	max    int
	length atomic.Int64

	mu   sync.Mutex
	keys []string // keys[head:] are queued, oldest first
	head int
	set  map[string]struct{}
}

// newReplayQueue returns an empty queue of at most max keys.
func newReplayQueue(max int) *replayQueue {
	return &replayQueue{max: max, set: map[string]struct{}{}}
}

// Len returns the number of keys queued.
func (q *replayQueue) Len() int { return int(q.length.Load()) }

// Push queues key at the back. A key already queued stays where it is (a
// delete is idempotent, and the earlier place replays it sooner). It
// reports false, and queues nothing, when the queue is full.
func (q *replayQueue) Push(key string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.set[key]; ok {
		return true
	}
	if len(q.set) >= q.max {
		return false
	}
	q.set[key] = struct{}{}
	q.keys = append(q.keys, key)
	q.length.Store(int64(len(q.set)))
	return true
}

// Has reports whether key is queued.
func (q *replayQueue) Has(key string) bool {
	if q.Len() == 0 {
		return false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	_, ok := q.set[key]
	return ok
}

// Front returns the oldest key queued, without removing it.
func (q *replayQueue) Front() (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.keys) {
		return "", false
	}
	return q.keys[q.head], true
}

// Pop removes the oldest key, which must be key (the one Front returned;
// only the replaying goroutine pops).
func (q *replayQueue) Pop(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.keys) || q.keys[q.head] != key {
		return
	}
	q.keys[q.head] = ""
	q.head++
	delete(q.set, key)
	switch {
	case q.head == len(q.keys):
		q.keys, q.head = q.keys[:0], 0
	case q.head > 1024 && q.head > len(q.keys)/2:
		q.keys = append(q.keys[:0], q.keys[q.head:]...)
		q.head = 0
	}
	q.length.Store(int64(len(q.set)))
}

// Clear empties the queue and returns how many keys it held.
func (q *replayQueue) Clear() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := len(q.set)
	q.keys, q.head, q.set = nil, 0, map[string]struct{}{}
	q.length.Store(0)
	return n
}
