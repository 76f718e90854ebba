package sim

import (
	"container/list"
	"math/rand/v2"
	"testing"
)

// refLRU is the obvious LRU the fast one is checked against, with the
// same rule for hits on recent items: an item put in front fewer than a
// quarter of the capacity items ago is not moved.
type refLRU struct {
	cap   int
	order *list.List // front: most recent
	at    map[uint32]*list.Element
	clock int
	front map[uint32]int // clock when each key was last put in front
}

func (r *refLRU) moveToFront(k uint32, e *list.Element) {
	if r.clock-r.front[k] < r.cap/4 {
		return
	}
	r.order.MoveToFront(e)
	r.front[k] = r.clock
	r.clock++
}

func (r *refLRU) get(k uint32) bool {
	e, ok := r.at[k]
	if ok {
		r.moveToFront(k, e)
	}
	return ok
}

func (r *refLRU) set(k uint32) {
	if e, ok := r.at[k]; ok {
		r.moveToFront(k, e)
		return
	}
	if r.order.Len() == r.cap {
		old := r.order.Back()
		r.order.Remove(old)
		delete(r.at, old.Value.(uint32))
	}
	r.at[k] = r.order.PushFront(k)
	r.front[k] = r.clock
	r.clock++
}

func TestLRUAgainstReference(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cap, keys int
	}{
		{"tiny", 1, 4},
		{"crowded table", 7, 40},
		{"mostly hits", 100, 150},
		{"mostly misses", 50, 5000},
	} {
		rng := rand.New(rand.NewPCG(1, uint64(tc.cap)))
		c := newLRU(tc.cap)
		r := &refLRU{cap: tc.cap, order: list.New(), at: map[uint32]*list.Element{}, front: map[uint32]int{}}
		for i := range 200000 {
			k := uint32(rng.IntN(tc.keys))
			if i%5000 == 4999 {
				c.reset()
				r.order.Init()
				clear(r.at)
			}
			if got, want := c.get(k), r.get(k); got != want {
				t.Fatalf("%s: op %d: get(%d) = %v, want %v", tc.name, i, k, got, want)
			}
			c.set(k)
			r.set(k)
			if c.len() != r.order.Len() {
				t.Fatalf("%s: op %d: len %d, want %d", tc.name, i, c.len(), r.order.Len())
			}
		}
	}
}
