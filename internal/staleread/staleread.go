// Package staleread checks a history of cache operations for the client
// guarantee of a mcrib pool: no read returns a value that a delete or set
// completed before the read began had replaced (docs/api.md, warm moves).
// The deterministic simulation (package dst) and the soak on real hosts
// (e2e) run the same check over their clients' histories. It imports only
// the standard library.
//
// The check's scope: a read is judged only against writes made under the
// slot map generation of the reader's call. A client that has not yet seen
// a cold move may still reach the old holder, and one that has may no
// longer: both are the map's propagation, not a broken promise (the client
// guarantee concerns a warming slot's old holder, whose map both sides
// share). A write that failed is indeterminate, as Jepsen's checkers take
// it: it may take effect at any time after it began, so a value it wrote is
// never stale; a write that succeeded took effect between its start and its
// end.
package staleread

import "sort"

// Kind is what an operation did.
type Kind uint8

// The kinds of operations.
const (
	Get Kind = iota
	Set
	Delete
)

// Op is one completed operation of a client. Start and End are positions
// on one clock that every client of the history shares (sequence numbers,
// or nanoseconds of one monotonic clock); Start < End. Values written by a
// Set must be unique over the history.
type Op struct {
	Client string
	Kind   Kind
	Key    string
	// Value is what a Set wrote, or what a Get returned when Hit.
	Value string
	// Hit: a Get returned a value. OK: a Set or Delete succeeded (a
	// delete of a key not there too).
	Hit, OK bool
	// Gen is the generation of the client's slot map when the call began.
	Gen        uint64
	Start, End uint64
}

// History holds operations, as they complete, and judges reads. The zero
// value is not usable; call New. A History is not safe for concurrent use.
type History struct {
	// writer maps a value to the set that wrote it (values are unique).
	writer map[string]*Op
	// done holds, per key and generation, the writes that succeeded, in
	// the order they were added (ended).
	done map[string]map[uint64]*keyWrites
	// reads are the reads that returned a value.
	reads []*Op
}

// keyWrites are the successful writes of one key under one generation,
// by end; maxStart[i] is the latest start among the first i+1.
type keyWrites struct {
	ops      []*Op
	maxStart []uint64
}

// New returns an empty History.
func New() *History {
	return &History{writer: map[string]*Op{}, done: map[string]map[uint64]*keyWrites{}}
}

// Add records a completed operation. Operations must be added in the order
// they ended.
func (h *History) Add(o *Op) {
	if o.Kind == Set {
		h.writer[o.Value] = o
	}
	if o.Kind == Get {
		if o.Hit {
			h.reads = append(h.reads, o)
		}
		return
	}
	if !o.OK {
		return
	}
	byGen := h.done[o.Key]
	if byGen == nil {
		byGen = map[uint64]*keyWrites{}
		h.done[o.Key] = byGen
	}
	kw := byGen[o.Gen]
	if kw == nil {
		kw = &keyWrites{}
		byGen[o.Gen] = kw
	}
	ms := o.Start
	if n := len(kw.maxStart); n > 0 {
		ms = max(ms, kw.maxStart[n-1])
	}
	kw.ops = append(kw.ops, o)
	kw.maxStart = append(kw.maxStart, ms)
}

// Writer returns the Set that wrote value, or nil.
func (h *History) Writer(value string) *Op { return h.writer[value] }

// ReplacedBy returns a successful write, under the reader's generation,
// that began after the write of the value r read had ended and ended
// before r began; nil when there is none (r is not stale).
func (h *History) ReplacedBy(r *Op) *Op {
	wv := h.writer[r.Value]
	if wv == nil || !wv.OK {
		return nil
	}
	kw := h.done[r.Key][r.Gen]
	if kw == nil {
		return nil
	}
	// The writes that ended before r began.
	n := sort.Search(len(kw.ops), func(i int) bool { return kw.ops[i].End >= r.Start })
	if n == 0 || kw.maxStart[n-1] <= wv.End {
		return nil
	}
	for i := n - 1; i >= 0; i-- {
		if kw.ops[i].Start > wv.End {
			return kw.ops[i]
		}
	}
	return nil
}

// Reads returns how many reads returned a value.
func (h *History) Reads() int { return len(h.reads) }

// Check judges every read again over the whole history (a write added
// after a read may end before it began) and returns the stale ones.
func (h *History) Check() []*Op {
	var stale []*Op
	for _, r := range h.reads {
		if h.ReplacedBy(r) != nil {
			stale = append(stale, r)
		}
	}
	return stale
}
