package controlloop

import (
	"time"

	"github.com/mcrib/mcrib/mcribapi"
)

// Capacity (docs/api.md, "Growing the pool"): whether the pool has
// outgrown its slots. Among the present nodes outside drained zones, more
// than a quarter ready spares means nodes wait that a resize would put to
// work; the status says since when, by this process's clock, and the
// alert McribPoolOutgrown fires after an hour of it.

// capacityWatch remembers since when more than a quarter of the present
// nodes outside drained zones have been ready spares (zero: they are not).
// Its zero value has seen no pass; it is not safe for concurrent use (the
// Loop's mutex guards it).
type capacityWatch struct {
	since time.Time
}

// capacityCountsLocked returns the present nodes outside drained zones and
// the ready spares among them, at now. l.mu must be held.
func (l *Loop) capacityCountsLocked(now time.Time) (nodes, spares int) {
	drained := l.drains.drained()
	for _, v := range l.tr.views(now) {
		if v.Present && !v.Maintenance && !drained[v.AZ] {
			nodes++
		}
	}
	return nodes, l.readySparesLocked(now)
}

// outgrown reports whether more than a quarter of nodes are ready spares.
func outgrown(nodes, spares int) bool { return nodes > 0 && 4*spares > nodes }

// note updates since when the pool has outgrown its slots, after a pass
// at now that counted nodes present outside drained zones and spares
// ready spares among them.
func (c *capacityWatch) note(nodes, spares int, now time.Time) {
	switch {
	case !outgrown(nodes, spares):
		c.since = time.Time{}
	case c.since.IsZero():
		c.since = now
	}
}

// status returns the status document's capacity at now of a pool of
// slots slots, nodes present outside drained zones and spares ready
// spares among them.
func (c *capacityWatch) status(slots, nodes, spares int, now time.Time) *mcribapi.Capacity {
	out := &mcribapi.Capacity{Slots: slots, Nodes: nodes, SparesReady: spares}
	if outgrown(nodes, spares) && !c.since.IsZero() {
		d := now.Sub(c.since).Round(time.Second).String()
		out.SparesFor = &d
	}
	return out
}

// noteCapacityLocked updates since when the pool has outgrown its slots,
// after a pass at now. l.mu must be held.
func (l *Loop) noteCapacityLocked(now time.Time) {
	if l.current != nil {
		nodes, spares := l.capacityCountsLocked(now)
		l.capacity.note(nodes, spares, now)
	}
}

// Capacity returns the slot count and the ready spares now, for the
// metrics mcrib_slots and mcrib_spare_nodes; ok is false before a map is
// known.
func (l *Loop) Capacity() (slots, spares int, ok bool) {
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.current == nil {
		return 0, 0, false
	}
	return l.current.NumSlots(), l.readySparesLocked(now), true
}
