package dst

import (
	"sort"

	"github.com/mcrib/mcrib/internal/revert"
)

// history holds the clients' operations for the stale-read rule: no read
// returns a value that a delete or set completed before the read began
// had replaced.
//
// Its scope: a read is judged only against writes made under the
// generation of the reader's map. A client that has not yet seen a cold
// move may still reach the old holder, and one that has may no longer:
// both are the map's propagation, not a broken promise (section 7 promises
// no stale read through a warming slot's old holder, whose map both sides
// share). A write that failed is indeterminate, as Jepsen's checkers take
// it: it may take effect at any time after it began, so a value it wrote
// is never stale; a write that succeeded took effect between its begin
// and its end.
type history struct {
	// writer maps a value to the set that wrote it (values are unique).
	writer map[string]*op
	// done holds, per key and generation, the writes that succeeded, in
	// the order they ended.
	done map[string]map[uint64]*keyWrites
	// reads are the reads that returned a value.
	reads []*op
}

// keyWrites are the successful writes of one key under one generation,
// by end; maxStart[i] is the latest begin among the first i+1.
type keyWrites struct {
	ops      []*op
	maxStart []uint64
}

func newHistory() *history {
	return &history{writer: map[string]*op{}, done: map[string]map[uint64]*keyWrites{}}
}

// add records a completed operation.
func (h *history) add(o *op) {
	if o.kind == opSet {
		h.writer[o.value] = o
	}
	if o.kind == opGet {
		if o.hit {
			h.reads = append(h.reads, o)
		}
		return
	}
	if !o.ok {
		return
	}
	byGen := h.done[o.key]
	if byGen == nil {
		byGen = map[uint64]*keyWrites{}
		h.done[o.key] = byGen
	}
	kw := byGen[o.gen]
	if kw == nil {
		kw = &keyWrites{}
		byGen[o.gen] = kw
	}
	ms := o.start
	if n := len(kw.maxStart); n > 0 {
		ms = max(ms, kw.maxStart[n-1])
	}
	kw.ops = append(kw.ops, o)
	kw.maxStart = append(kw.maxStart, ms)
}

// replacedBy returns a successful write, under the reader's generation,
// that began after the write of the value r read had ended and ended
// before r began; nil when there is none (r is not stale).
func (h *history) replacedBy(r *op) *op {
	wv := h.writer[r.value]
	if wv == nil || !wv.ok {
		return nil
	}
	kw := h.done[r.key][r.gen]
	if kw == nil {
		return nil
	}
	// The writes that ended before r began.
	n := sort.Search(len(kw.ops), func(i int) bool { return kw.ops[i].end >= r.start })
	if n == 0 || kw.maxStart[n-1] <= wv.end {
		return nil
	}
	for i := n - 1; i >= 0; i-- {
		if kw.ops[i].start > wv.end {
			return kw.ops[i]
		}
	}
	return nil
}

// recheck judges every read again over the whole history and returns the
// first stale one.
func (h *history) recheck() *op {
	for _, r := range h.reads {
		if h.replacedBy(r) != nil {
			return r
		}
	}
	return nil
}

// onOp records a completed operation and judges a read.
func (c *checker) onOp(o *op) {
	c.hist.add(o)
	if o.kind != opGet || !o.hit {
		return
	}
	c.reads++
	if c.hist.replacedBy(o) != nil {
		c.staleRead(o)
	}
}

// staleRead reports a stale read.
func (c *checker) staleRead(r *op) {
	by := c.hist.replacedBy(r)
	wv := c.hist.writer[r.value]
	fix := revert.Fix(0)
	where := "its slot's holder"
	if r.servedBy != nil {
		where = r.servedBy.id
	}
	switch {
	case r.warm:
		fix = revert.WarmWriteDurable
		where += ", the slot's warm source in its map"
	case r.filled:
		fix = revert.WarmWriteDurable
		where += ", which a client had filled from the slot's warm source"
	}
	c.fail(ruleStaleRead, fix, "%s's get of %s (generation %d) returned %q from %s, written by %s's set that ended before %s's %s of it (%s) completed, before the get began",
		r.client, r.key, r.gen, r.value, where, wv.client, by.client, by.kind, opWord(by))
}
