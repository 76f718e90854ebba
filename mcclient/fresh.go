package mcclient

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
)

// A map is fresh while it is under cachenodes.FreshFor old by the client's
// clock, counted from when the answering replica last read it from Consul
// (docs/clients.md, "Fresh maps"). A client whose map is not fresh reads
// no warm source and makes no warm fill: a later map it has not seen may
// have ended the warming, and the writers that took it no longer keep the
// old holder in step. Writes are routed alike, fresh or not.

// readAtOf returns when r's map was last read, by the client's clock.
func (r *routing) readAtOf() time.Time { return time.Unix(0, r.readAt.Load()) }

// fresh reports whether r's map is fresh at now.
func (r *routing) fresh(now time.Time) bool {
	return r != nil && cachenodes.Fresh(r.readAtOf(), now)
}

// SetSlotMap makes the client route by m, as TakeReading does with m read
// now by the client's clock: use it when the map comes from a source the
// caller trusts to be current. It returns TakeReading's error.
func (c *Client) SetSlotMap(m *cachenodes.SlotMap) error {
	return c.TakeReading(cachenodes.SlotMapReading{Map: m, ReadAt: c.sh.clock.Now()})
}

// TakeReading takes one reading of the slot map, as a Source delivers it
// (on every successful read, changed or not).
//
// The client routes by r.Map when cachenodes.MapOrder takes it over the
// map it routes by (a higher generation and revision), with one atomic
// swap: operations under way finish on the table they started with, and
// none waits for the swap. The map is then as fresh as r.ReadAt says (a
// zero ReadAt, an age unknown, counts as cachenodes.FreshFor old: not
// fresh). When r.Map is the map the client routes by (the same generation
// and revision) only its freshness moves on to r.ReadAt, if later. A map
// of a lower (generation, revision) is refused with an error wrapping
// ErrOlderGeneration, and so is a nil one or one whose addresses do not
// resolve: nothing changes then.
//
// A node keeps its connections while its ID and address stay the same,
// and its replay queue while its ID does (a queue follows its node to a
// new address). A node that leaves every slot keeps its queue (Run and
// Replay still replay it); when it is placed again, or announced as a
// slot's incoming node, after being parked (mcrib flushed it first), or
// leaves the map, its queue is dropped. An incoming node that becomes the
// slot's holder keeps its queue: its tombstones are still owed. A slot's
// warm source and incoming node are kept as nodes too, with their
// connections and queues; what a warming learned (its source turned off,
// the fills and writes under way) is shared by every table in which the
// same source warms the same new holder.
func (c *Client) TakeReading(r cachenodes.SlotMapReading) error {
	if r.Map == nil {
		return errors.New("mcclient: setting a nil slot map")
	}
	now := c.sh.clock.Now()
	at := r.ReadAt
	switch {
	case at.IsZero():
		at = now.Add(-cachenodes.FreshFor) // unknown: not fresh
	case at.After(now):
		at = now
	}
	retired, err := c.setSlotMap(r.Map, at, !r.ReadAt.IsZero(), now)
	// Outside the lock (a Conn may call the client), in the order of the
	// nodes' IDs (a simulation replays the same calls every time).
	slices.SortFunc(retired, func(a, b *node) int { return strings.Compare(a.id, b.id) })
	for _, n := range retired {
		n.be.Close()
	}
	return err
}

// MapAge returns how old the client's map is by its clock, counted from
// when the answering replica last read it from Consul (a map whose age
// was unknown counts as cachenodes.FreshFor old when taken); false when
// the client has no map. It is the gauge mcrib_client_map_age_seconds.
func (c *Client) MapAge() (time.Duration, bool) {
	r := c.route.Load()
	if r == nil {
		return 0, false
	}
	return max(c.sh.clock.Now().Sub(r.readAtOf()), 0), true
}

// MapFresh reports whether the client's map is fresh: under
// cachenodes.FreshFor old (MapAge). Only a client whose map is fresh reads
// a warming slot's old holder; the guarantee that no read returns a value
// a completed write replaced holds between clients whose maps are fresh.
func (c *Client) MapFresh() bool {
	return c.route.Load().fresh(c.sh.clock.Now())
}
