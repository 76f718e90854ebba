// Package staleread checks a history of cache operations for the client
// guarantee of a mcrib pool: no read returns a value that a delete or set
// completed before the read began had replaced, and no read returns a value
// that no client wrote for its key (docs/clients.md, "Fresh maps"; docs/api.md,
// warm moves). The deterministic simulation (package dst) and the soak on
// real hosts (e2e) run the same check over their clients' histories. It
// imports only the standard library.
//
// # The rule across generations
//
// A read is judged against every write of its key that succeeded, by any
// client, the reader itself included, whichever generation of the slot map
// either routed by: the guarantee holds between any two clients whose maps
// are fresh, through every map change (a client on generation G deleting at
// the old holder while a client on G+1 reads the new one is the same
// promise as two clients on one map). A read is stale when it returned the
// value of a set, and another write of the key (a set or a delete) began
// after that set ended and ended before the read began.
//
// Freshness is each operation's own, taken when its call began (Op.Fresh,
// from mcclient.Client.MapFresh: the map is under 10 s old counted from
// the answering replica's last read of it from Consul):
//
//   - A read by a client whose map was not fresh is not judged against
//     writes. Its map may route to a holder that fresh maps have left (a
//     move it has not seen), which nobody else writes any more; the contract
//     promises nothing to it, and the Go client bounds the harm by reading
//     no warm source on a stale map.
//   - A write by a client whose map was not fresh is indeterminate, as a
//     failed write is: it may have gone only to nodes that fresh maps no
//     longer read or write, and it may surface later through a node that is
//     a holder in its map and a warm source in a fresh one. So it replaces
//     nothing, and a read of the value it wrote is never stale.
//   - Whatever the reader's freshness, a read that returns a value no
//     client's set of that key wrote (a tombstone leaking as a value,
//     another key's value, garbage), or the value of a set that began only
//     after the read had ended, is a violation: no routing explains it, and
//     the Go client reads a tombstone as a miss in every slot at any time.
//
// A write that failed is indeterminate, as Jepsen's checkers take it: it
// may take effect at any time after it began, so a value it wrote is never
// stale and it replaces nothing; a write that succeeded took effect between
// its start and its end.
//
// Options.WithinGeneration keeps the rule this package had before: a read
// is judged only against writes made under its own generation, freshness
// is not looked at, and values are not checked for their writer. The
// deterministic simulation uses it until its clients know their maps'
// freshness; it cannot see the stale reads of a map change.
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

// String returns "get", "set" or "delete".
func (k Kind) String() string {
	switch k {
	case Get:
		return "get"
	case Set:
		return "set"
	case Delete:
		return "delete"
	}
	return "unknown"
}

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
	// Fresh: the client's slot map was fresh when the call began. Only a
	// fresh client's read is judged against writes, and only a fresh
	// client's successful write replaces a value (see the package doc).
	Fresh bool
	// Gen is the generation of the client's slot map when the call
	// began: for messages, and for Options.WithinGeneration.
	Gen        uint64
	Start, End uint64
}

// Options selects the rule a History judges by. The zero value is the
// rule across generations of the package doc.
type Options struct {
	// WithinGeneration judges a read only against the writes made under
	// its own generation, whatever the freshness of either, and does not
	// check that some client wrote the value read.
	WithinGeneration bool
}

// History holds operations, as they complete, and judges reads. The zero
// value is not usable; call New. A History is not safe for concurrent use.
type History struct {
	opts Options
	// writer maps a value to the set that wrote it (values are unique).
	writer map[string]*Op
	// done holds, per key (and generation, with WithinGeneration), the
	// writes that can replace a value, in the order they were added
	// (ended).
	done map[index]*keyWrites
	// reads are the reads that returned a value; judged counts those
	// judged against writes.
	reads  []*Op
	judged int
}

// index names one list of writes: a key, and with WithinGeneration the
// generation they were made under (else 0).
type index struct {
	key string
	gen uint64
}

// keyWrites are the writes of one index, by end; maxStart[i] is the
// latest start among the first i+1.
type keyWrites struct {
	ops      []*Op
	maxStart []uint64
}

// New returns an empty History that judges by opts.
func New(opts Options) *History {
	return &History{opts: opts, writer: map[string]*Op{}, done: map[index]*keyWrites{}}
}

func (h *History) indexOf(o *Op) index {
	if h.opts.WithinGeneration {
		return index{o.Key, o.Gen}
	}
	return index{key: o.Key}
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
			if h.Judged(o) {
				h.judged++
			}
		}
		return
	}
	if !h.replaces(o) {
		return
	}
	at := h.indexOf(o)
	kw := h.done[at]
	if kw == nil {
		kw = &keyWrites{}
		h.done[at] = kw
	}
	ms := o.Start
	if n := len(kw.maxStart); n > 0 {
		ms = max(ms, kw.maxStart[n-1])
	}
	kw.ops = append(kw.ops, o)
	kw.maxStart = append(kw.maxStart, ms)
}

// replaces reports whether the write w counts: it succeeded, by a client
// whose map was fresh (any, with WithinGeneration).
func (h *History) replaces(w *Op) bool {
	return w.OK && (w.Fresh || h.opts.WithinGeneration)
}

// Judged reports whether the read r is judged against writes: it returned
// a value, and its client's map was fresh (any map, with
// WithinGeneration).
func (h *History) Judged(r *Op) bool {
	return r.Kind == Get && r.Hit && (r.Fresh || h.opts.WithinGeneration)
}

// Writer returns the Set that wrote value, or nil.
func (h *History) Writer(value string) *Op { return h.writer[value] }

// ReplacedBy returns a write that replaced the value r read before r
// began: one that counts (successful, by a fresh client; under r's
// generation with WithinGeneration), that began after the set of the value
// had ended and ended before r began. It returns nil when there is none,
// when r is not judged, or when the value's set does not count (failed, by
// a client whose map was not fresh, of another key, or not recorded).
func (h *History) ReplacedBy(r *Op) *Op {
	if !h.Judged(r) {
		return nil
	}
	wv := h.writer[r.Value]
	if wv == nil || wv.Key != r.Key || !h.replaces(wv) {
		return nil
	}
	kw := h.done[h.indexOf(r)]
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

// JudgedReads returns how many reads returned a value and were judged
// against writes (their client's map was fresh).
func (h *History) JudgedReads() int { return h.judged }

// Check judges every read again over the whole history (the set of a
// value read may have been still under way when the read was added) and
// returns the violations, in the order the reads were added.
func (h *History) Check() []Violation {
	var out []Violation
	for _, r := range h.reads {
		if v, ok := h.Judge(r); ok {
			out = append(out, v)
		}
	}
	return out
}

// Judge judges the read r against the history as it stands: a violation
// and true when r returned a value that a write replaced before it began
// (Replaced), or, across generations, a value no client's set of r's key
// wrote before r ended (Unwritten). Judged while the history is still
// being added to, Unwritten may be a set not yet recorded: judge such a
// read again once every operation that began before it ended is in.
func (h *History) Judge(r *Op) (Violation, bool) {
	if r.Kind != Get || !r.Hit {
		return Violation{}, false
	}
	if !h.opts.WithinGeneration {
		switch wv := h.writer[r.Value]; {
		case wv == nil:
			return Violation{Read: r, Rule: Unwritten}, true
		case wv.Key != r.Key || wv.Start >= r.End:
			return Violation{Read: r, By: wv, Rule: Unwritten}, true
		}
	}
	if by := h.ReplacedBy(r); by != nil {
		return Violation{Read: r, By: by, Rule: Replaced}, true
	}
	return Violation{}, false
}
