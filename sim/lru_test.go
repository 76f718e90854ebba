package sim

import (
	"container/list"
	"math/rand/v2"
	"testing"
)

// refLRU is the obvious LRU the fast one is checked against.
type refLRU struct {
	cap   int
	order *list.List // front: most recent
	at    map[uint32]*list.Element
}

func (r *refLRU) get(k uint32) bool {
	e, ok := r.at[k]
	if ok {
		r.order.MoveToFront(e)
	}
	return ok
}

func (r *refLRU) set(k uint32) {
	if e, ok := r.at[k]; ok {
		r.order.MoveToFront(e)
		return
	}
	if r.order.Len() == r.cap {
		old := r.order.Back()
		r.order.Remove(old)
		delete(r.at, old.Value.(uint32))
	}
	r.at[k] = r.order.PushFront(k)
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
		r := &refLRU{cap: tc.cap, order: list.New(), at: map[uint32]*list.Element{}}
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
