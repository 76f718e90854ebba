package sim

// lru is one simulated memcached's item store: at most cap items, the least
// recently used evicted first. Keys are the workload's key numbers. It is a
// doubly linked list threaded through fixed arrays, so a get or a set
// allocates nothing once the node is full.
type lru struct {
	cap   int
	index map[uint32]int32 // key -> entry
	key   []uint32
	prev  []int32
	next  []int32
	head  int32 // most recently used; -1 when empty
	tail  int32 // least recently used
}

func newLRU(capacity int) *lru {
	c := &lru{cap: capacity, index: make(map[uint32]int32, capacity)}
	c.reset()
	return c
}

// reset empties the store (a flush, or a restart of memcached).
func (c *lru) reset() {
	clear(c.index)
	c.key, c.prev, c.next = c.key[:0], c.prev[:0], c.next[:0]
	c.head, c.tail = -1, -1
}

// len returns the number of items held.
func (c *lru) len() int { return len(c.index) }

// get reports whether k is held, and makes it the most recently used.
func (c *lru) get(k uint32) bool {
	e, ok := c.index[k]
	if ok {
		c.touch(e)
	}
	return ok
}

// set stores k as the most recently used item, evicting the least recently
// used one when full.
func (c *lru) set(k uint32) {
	if e, ok := c.index[k]; ok {
		c.touch(e)
		return
	}
	if c.cap <= 0 {
		return
	}
	var e int32
	if len(c.index) < c.cap && len(c.key) < c.cap {
		e = int32(len(c.key))
		c.key = append(c.key, k)
		c.prev = append(c.prev, -1)
		c.next = append(c.next, -1)
	} else {
		e = c.tail
		c.unlink(e)
		delete(c.index, c.key[e])
		c.key[e] = k
	}
	c.index[k] = e
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
