package dst

import (
	"fmt"

	"github.com/mcrib/mcrib/internal/revert"
	"github.com/mcrib/mcrib/internal/staleread"
)

// history holds the clients' operations for the stale-read rule, judged
// by package staleread (the check the soak on real hosts runs too) across
// generations: no read by a client whose map was fresh returns a value
// that a delete or set by a client whose map was fresh, completed before
// the read began, had replaced, whatever generation either routed by; and
// no read returns a value that no client's set of its key wrote. recs maps
// each record back to the simulation's operation, for the messages.
type history struct {
	h    *staleread.History
	recs map[*staleread.Op]*op
}

func newHistory() *history {
	return &history{h: staleread.New(staleread.Options{}), recs: map[*staleread.Op]*op{}}
}

// kinds are the simulation's operation kinds as package staleread has
// them.
var kinds = map[string]staleread.Kind{opGet: staleread.Get, opSet: staleread.Set, opDelete: staleread.Delete}

// add records a completed operation.
func (h *history) add(o *op) {
	o.rec = &staleread.Op{Client: o.client, Kind: kinds[o.kind], Key: o.key, Value: o.value, Hit: o.hit, OK: o.ok,
		Fresh: o.fresh, Gen: o.gen, Start: o.start, End: o.end}
	h.recs[o.rec] = o
	h.h.Add(o.rec)
}

// replacedBy returns the write that replaced the value r read before r
// began, or nil when r is not stale.
func (h *history) replacedBy(r *op) *op { return h.recs[h.h.ReplacedBy(r.rec)] }

// writer returns the set that wrote value.
func (h *history) writer(value string) *op { return h.recs[h.h.Writer(value)] }

// recheck judges every read again over the whole history (a value's set
// may still have been under way when its read ended) and returns the
// first violation.
func (h *history) recheck() (staleread.Violation, bool) {
	if v := h.h.Check(); len(v) > 0 {
		return v[0], true
	}
	return staleread.Violation{}, false
}

// onOp records a completed operation and judges a read against the writes
// that replaced its value (a value no set wrote is judged at the end:
// its set may still be under way in another goroutine of a client).
func (c *checker) onOp(o *op) {
	c.hist.add(o)
	if o.kind != opGet || !o.hit {
		return
	}
	c.reads++
	if by := c.hist.replacedBy(o); by != nil {
		c.staleRead(staleread.Violation{Read: o.rec, By: by.rec, Rule: staleread.Replaced})
	}
}

// staleRead reports a read that broke the rule.
func (c *checker) staleRead(v staleread.Violation) {
	r := c.hist.recs[v.Read]
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
	read := fmt.Sprintf("%s's get of %s (generation %d, fresh %v) returned %q from %s", r.client, r.key, r.gen, r.fresh, r.value, where)
	if v.Rule == staleread.Unwritten {
		c.fail(ruleStaleRead, 0, "%s, a value no client's set of that key wrote before the get ended", read)
		return
	}
	by, wv := c.hist.recs[v.By], c.hist.writer(r.value)
	c.fail(ruleStaleRead, fix, "%s, written by %s's set (generation %d) that ended before %s's %s of it (generation %d, %s) began, which completed before the get began",
		read, wv.client, wv.gen, by.client, by.kind, by.gen, opWord(by))
}
