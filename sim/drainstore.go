package sim

import (
	"context"

	"github.com/mcrib/mcrib/controlloop"
	"github.com/mcrib/mcrib/mcribapi"
)

// memStore keeps the drain document as ConsulStore does: written with
// check-and-set against the version read, removed when it has no zones,
// and checked (or replaced) in the same step as a slot-map write
// (WritePool).
var _ controlloop.DrainStore = (*memStore)(nil)

// PutDrain stores doc if the drain document is still at index (0: there
// is none); a document without zones removes it.
func (s *memStore) PutDrain(_ context.Context, doc mcribapi.DrainDoc, index uint64) (bool, error) {
	if index != s.drainIndex {
		return false, nil
	}
	s.putDrain(&doc)
	return true, nil
}

// putDrain stores a copy of doc under a new version, or removes the
// document when doc has no zones.
func (s *memStore) putDrain(doc *mcribapi.DrainDoc) {
	if len(doc.Zones) == 0 {
		s.drain, s.drainIndex = nil, 0
		return
	}
	s.drain = copyDrain(doc)
	s.drainSeq++
	s.drainIndex = s.drainSeq
}

// copyDrain returns a deep copy of doc as stored: without the fields
// filled in when answered. nil stays nil.
func copyDrain(doc *mcribapi.DrainDoc) *mcribapi.DrainDoc {
	if doc == nil {
		return nil
	}
	out := &mcribapi.DrainDoc{Zones: make(map[string]*mcribapi.DrainEntry, len(doc.Zones))}
	for zone, e := range doc.Zones {
		c := *e
		c.Slots, c.TargetSlots, c.State, c.Blocked = 0, 0, "", ""
		if e.LastStepAt != nil {
			t := *e.LastStepAt
			c.LastStepAt = &t
		}
		out.Zones[zone] = &c
	}
	return out
}
