package sim

import "math/bits"

// lru is one simulated memcached's item store: at most cap items, the least
// recently used evicted first, except that a hit on an item among the most
// recent quarter moves nothing (as memcached bumps an item at most once a
// minute): the hot keys, most of the reads, then cost no writes. Keys are the workload's key numbers. The
// index is an open-addressing hash table (linear probing, deletion by
// backward shift) over a doubly linked list threaded through one array of
// entries (a key and its links side by side, so a touch reads one place),
// so a get or a set allocates nothing once the node is full; it is the
// simulator's hottest path.
type lru struct {
	cap   int
	table []bucket
	shift uint
	mask  uint32
	ent   []entry
	n     int
	clock uint32 // items put in front so far
	fresh uint32 // an item put in front fewer than this many items ago is not moved
	head  int32  // most recently used; -1 when empty
	tail  int32  // least recently used
}

// entry is one item: its key and its neighbours in recency order (-1:
// none).
type entry struct {
	key        uint32
	prev, next int32
}

// bucket is one bucket of the index: a key, its entry+1 (0: empty) and
// the clock when the entry was last put in front, side by side so a probe
// reads one place and a hit on a recent item reads nothing else.
type bucket struct {
	key   uint32
	e     int32
	front uint32
}

func newLRU(capacity int) *lru {
	size := 1 << bits.Len(uint(max(2*capacity, 4)-1)) // a power of two, at least twice the items
	c := &lru{cap: capacity, table: make([]bucket, size), mask: uint32(size - 1), shift: uint(32 - bits.Len(uint(size-1))),
		fresh: uint32(max(capacity, 0) / 4)}
	c.reset()
	return c
}

// reset empties the store (a flush, or a restart of memcached).
func (c *lru) reset() {
	clear(c.table)
	c.ent = c.ent[:0]
	c.n, c.head, c.tail = 0, -1, -1
}

// len returns the number of items held.
func (c *lru) len() int { return c.n }

// home returns the bucket where k's probe starts.
func (c *lru) home(k uint32) uint32 { return (k * 0x9e3779b1) >> c.shift & c.mask }

// find returns k's entry (-1 when absent) and its bucket, or the empty
// bucket where it would go.
func (c *lru) find(k uint32) (int32, uint32) {
	for i := c.home(k); ; i = (i + 1) & c.mask {
		b := c.table[i]
		if b.e == 0 {
			return -1, i
		}
		if b.key == k {
			return b.e - 1, i
		}
	}
}

// remove empties bucket i and shifts back the entries that probed past it.
func (c *lru) remove(i uint32) {
	for j := (i + 1) & c.mask; c.table[j].e != 0; j = (j + 1) & c.mask {
		h := c.home(c.table[j].key)
		// The entry at j may move to i unless its home lies cyclically
		// in (i, j].
		if (j-h)&c.mask >= (j-i)&c.mask {
			c.table[i] = c.table[j]
			i = j
		}
	}
	c.table[i] = bucket{}
}

// get reports whether k is held, and makes it the most recently used.
func (c *lru) get(k uint32) bool {
	e, at := c.find(k)
	if e >= 0 {
		c.touch(e, at)
	}
	return e >= 0
}

// set stores k as the most recently used item, evicting the least recently
// used one when full.
func (c *lru) set(k uint32) {
	e, at := c.find(k)
	if e >= 0 {
		c.touch(e, at)
		return
	}
	if c.cap <= 0 {
		return
	}
	if c.n < c.cap {
		e = int32(len(c.ent))
		c.ent = append(c.ent, entry{key: k, prev: -1, next: -1})
		c.n++
	} else {
		e = c.tail
		c.unlink(e)
		_, old := c.find(c.ent[e].key)
		c.remove(old)
		c.ent[e].key = k
		_, at = c.find(k) // the shift may have moved k's empty bucket
	}
	c.table[at] = bucket{key: k, e: e + 1, front: c.clock}
	c.pushFront(e)
}

// touch makes entry e, in bucket at, the most recently used, unless it was
// put in front fewer than c.fresh items ago: it is among the most recent
// quarter already (at most that many items went in front of it).
func (c *lru) touch(e int32, at uint32) {
	if c.clock-c.table[at].front < c.fresh || c.head == e {
		return
	}
	c.table[at].front = c.clock
	c.unlink(e)
	c.pushFront(e)
}

func (c *lru) unlink(e int32) {
	p, n := c.ent[e].prev, c.ent[e].next
	if p >= 0 {
		c.ent[p].next = n
	} else {
		c.head = n
	}
	if n >= 0 {
		c.ent[n].prev = p
	} else {
		c.tail = p
	}
	c.ent[e].prev, c.ent[e].next = -1, -1
}

// pushFront links entry e in front and advances the clock; the caller
// records the clock in e's bucket first.
func (c *lru) pushFront(e int32) {
	c.ent[e].prev, c.ent[e].next = -1, c.head
	c.clock++
	if c.head >= 0 {
		c.ent[c.head].prev = e
	}
	c.head = e
	if c.tail < 0 {
		c.tail = e
	}
}

// recent returns the keys held for which keep is true, the most recently
// used first (the order of memcached's lru_crawler metadump by last
// access, newest first).
func (c *lru) recent(keep func(uint32) bool) []uint32 {
	var out []uint32
	for e := c.head; e >= 0; e = c.ent[e].next {
		if k := c.ent[e].key; keep(k) {
			out = append(out, k)
		}
	}
	return out
}

// add stores k as set does when it is not held, and reports whether it
// stored it; a key held is left where it is (memcached's add).
func (c *lru) add(k uint32) bool {
	if e, _ := c.find(k); e >= 0 {
		return false
	}
	c.set(k)
	return true
}
