package dst

import (
	"github.com/mcrib/mcrib/internal/revert"
	"github.com/mcrib/mcrib/internal/staleread"
)

// history holds the clients' operations for the stale-read rule, judged
// by package staleread (the check the soak on real hosts runs too): no
// read returns a value that a delete or set completed before the read
// began had replaced, judged against the writes made under the generation
// of the reader's map (staleread.Options.WithinGeneration: the
// simulation's clients do not yet record whether their maps were fresh,
// which the rule across generations needs). recs maps each record back
// to the simulation's operation, for the messages.
type history struct {
	h    *staleread.History
	recs map[*staleread.Op]*op
}

func newHistory() *history {
	return &history{h: staleread.New(staleread.Options{WithinGeneration: true}), recs: map[*staleread.Op]*op{}}
}

// kinds are the simulation's operation kinds as package staleread has
// them.
var kinds = map[string]staleread.Kind{opGet: staleread.Get, opSet: staleread.Set, opDelete: staleread.Delete}

// add records a completed operation.
func (h *history) add(o *op) {
	o.rec = &staleread.Op{Client: o.client, Kind: kinds[o.kind], Key: o.key, Value: o.value, Hit: o.hit, OK: o.ok,
		Gen: o.gen, Start: o.start, End: o.end}
	h.recs[o.rec] = o
	h.h.Add(o.rec)
}

// replacedBy returns the write that replaced the value r read before r
// began, or nil when r is not stale.
func (h *history) replacedBy(r *op) *op { return h.recs[h.h.ReplacedBy(r.rec)] }

// writer returns the set that wrote value.
func (h *history) writer(value string) *op { return h.recs[h.h.Writer(value)] }

// recheck judges every read again over the whole history and returns the
// first stale one.
func (h *history) recheck() *op {
	if stale := h.h.Check(); len(stale) > 0 {
		return h.recs[stale[0].Read]
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
	wv := c.hist.writer(r.value)
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
