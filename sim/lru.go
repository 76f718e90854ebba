package sim

import "math/bits"

// lru is one simulated memcached's item store: at most cap items, the least
// recently used evicted first. Keys are the workload's key numbers. The
// index is an open-addressing hash table (linear probing, deletion by
// backward shift) over a doubly linked list threaded through fixed arrays,
// so a get or a set allocates nothing once the node is full; it is the
// simulator's hottest path.
type lru struct {
	cap   int
	table []bucket
	shift uint
	mask  uint32
	key   []uint32
	prev  []int32
	next  []int32
	n     int
	head  int32 // most recently used; -1 when empty
	tail  int32 // least recently used
}

// bucket is one bucket of the index: a key and its entry+1 (0: empty),
// side by side so a probe reads one place.
type bucket struct {
	key uint32
	e   int32
}

func newLRU(capacity int) *lru {
	size := 1 << bits.Len(uint(max(2*capacity, 4)-1)) // a power of two, at least twice the items
	c := &lru{cap: capacity, table: make([]bucket, size), mask: uint32(size - 1), shift: uint(32 - bits.Len(uint(size-1)))}
	c.reset()
	return c
}

// reset empties the store (a flush, or a restart of memcached).
func (c *lru) reset() {
	clear(c.table)
	c.key, c.prev, c.next = c.key[:0], c.prev[:0], c.next[:0]
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
	e, _ := c.find(k)
	if e >= 0 {
		c.touch(e)
	}
	return e >= 0
}

// set stores k as the most recently used item, evicting the least recently
// used one when full.
func (c *lru) set(k uint32) {
	e, at := c.find(k)
	if e >= 0 {
		c.touch(e)
		return
	}
	if c.cap <= 0 {
		return
	}
	if c.n < c.cap {
		e = int32(len(c.key))
		c.key = append(c.key, k)
		c.prev = append(c.prev, -1)
		c.next = append(c.next, -1)
		c.n++
	} else {
		e = c.tail
		c.unlink(e)
		_, old := c.find(c.key[e])
		c.remove(old)
		c.key[e] = k
		_, at = c.find(k) // the shift may have moved k's empty bucket
	}
	c.table[at] = bucket{key: k, e: e + 1}
	c.pushFront(e)
}

func (c *lru) touch(e int32) {
	if c.head == e {
		return
	}
	c.unlink(e)
	c.pushFront(e)
}

func (c *lru) unlink(e int32) {
	p, n := c.prev[e], c.next[e]
	if p >= 0 {
		c.next[p] = n
	} else {
		c.head = n
	}
	if n >= 0 {
		c.prev[n] = p
	} else {
		c.tail = p
	}
	c.prev[e], c.next[e] = -1, -1
}

func (c *lru) pushFront(e int32) {
	c.prev[e], c.next[e] = -1, c.head
	if c.head >= 0 {
		c.prev[c.head] = e
	}
	c.head = e
	if c.tail < 0 {
		c.tail = e
	}
}
