package warmcopy

import (
	"container/heap"
	"slices"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
)

// MinRemaining is the shortest remaining expiry of a key the copy takes:
// a key that expires sooner at the source is skipped (SkipExpiring).
const MinRemaining = 10 * time.Second

// Entry is one item of a source, as `lru_crawler metadump` lists it.
type Entry struct {
	// Key is the item's key, URL-decoded.
	Key string
	// Exp is when the item expires, in Unix seconds on the source's
	// clock; -1 when it does not.
	Exp int64
	// LastAccess is when it was last read or written (metadump's la),
	// in Unix seconds on the source's clock.
	LastAccess int64
	// CAS is its CAS unique.
	CAS uint64
	// Fetched reports whether it was read since it was stored.
	Fetched bool
	// Class is its slab class.
	Class int
	// Size is how many bytes it takes in memory: header, key and value.
	Size int
}

// Pick returns the entries a copy of slot (in a table of numSlots slots)
// takes, in the order it copies them, and the keys of the slot it skips,
// by reason. It keeps the keys of the slot (cachenodes.KeySlot) that can
// be sent in a text-protocol command (else SkipBadKey) and expire no
// sooner than MinRemaining after now, the source's clock (else
// SkipExpiring); of each key listed twice, the later (higher
// LastAccess, then CAS); and of those, the maxKeys most recently used
// (SkipOverCap for the rest; maxKeys <= 0: no bound). The order is
// LastAccess descending, a key read since it was stored before one that
// was not, then by key. entries is not changed.
func Pick(entries []Entry, slot, numSlots int, now time.Time, maxKeys int) ([]Entry, Skips) {
	p := newPicker(slot, numSlots, now, maxKeys)
	for _, e := range entries {
		p.offer(e)
	}
	return p.list(), p.skipped
}

// picker is Pick one entry at a time, for a dump read as it streams: it
// holds at most max entries. Its zero value is not usable; use newPicker.
type picker struct {
	slot, numSlots int
	now            int64
	max            int
	h              rankHeap
	dumped         int64
	skipped        Skips
}

func newPicker(slot, numSlots int, now time.Time, maxKeys int) *picker {
	return &picker{slot: slot, numSlots: numSlots, now: now.Unix(), max: maxKeys, h: rankHeap{at: make(map[string]int)}}
}

// offer considers e.
func (p *picker) offer(e Entry) {
	p.dumped++
	if cachenodes.KeySlot(e.Key, p.numSlots) != p.slot {
		return
	}
	if !validKey(e.Key) {
		p.skipped[SkipBadKey]++
		return
	}
	if e.Exp != -1 && e.Exp-p.now < int64(MinRemaining/time.Second) {
		p.skipped[SkipExpiring]++
		return
	}
	if i, dup := p.h.at[e.Key]; dup {
		if old := p.h.es[i]; e.LastAccess > old.LastAccess || (e.LastAccess == old.LastAccess && e.CAS > old.CAS) {
			p.h.es[i] = e
			heap.Fix(&p.h, i)
		}
		return
	}
	heap.Push(&p.h, e)
	if p.max > 0 && p.h.Len() > p.max {
		heap.Pop(&p.h)
		p.skipped[SkipOverCap]++
	}
}

// list returns the entries kept, most recently used first.
func (p *picker) list() []Entry {
	out := slices.Clone(p.h.es)
	slices.SortFunc(out, func(a, b Entry) int {
		switch {
		case less(a, b):
			return 1
		case less(b, a):
			return -1
		}
		return 0
	})
	return out
}

// less reports whether a ranks below b: read longer ago, or at the same
// second never read since stored while b was, or else its key sorts
// after b's.
func less(a, b Entry) bool {
	if a.LastAccess != b.LastAccess {
		return a.LastAccess < b.LastAccess
	}
	if a.Fetched != b.Fetched {
		return b.Fetched
	}
	return a.Key > b.Key
}

// rankHeap is a min-heap of entries by rank (the lowest on top), with the
// index of each key.
type rankHeap struct {
	es []Entry
	at map[string]int
}

func (h rankHeap) Len() int           { return len(h.es) }
func (h rankHeap) Less(i, j int) bool { return less(h.es[i], h.es[j]) }
func (h rankHeap) Swap(i, j int) {
	h.es[i], h.es[j] = h.es[j], h.es[i]
	h.at[h.es[i].Key], h.at[h.es[j].Key] = i, j
}
func (h *rankHeap) Push(x any) {
	e := x.(Entry)
	h.at[e.Key] = len(h.es)
	h.es = append(h.es, e)
}
func (h *rankHeap) Pop() any {
	e := h.es[len(h.es)-1]
	h.es = h.es[:len(h.es)-1]
	delete(h.at, e.Key)
	return e
}
