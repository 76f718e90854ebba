package sim

import (
	"encoding/json"

	"github.com/mcrib/mcrib/controlloop"
	"github.com/mcrib/mcrib/mcribapi"
)

// memStore keeps the roll document as ConsulStore does: replaced (or
// removed, without an entry) in the same step as a slot-map write
// (WritePool), and checked there against the version read, so that the
// loop of a simulation can carry out a roll.
var _ controlloop.RollStore = (*memStore)(nil)

// KeepsRoll reports that memStore keeps the roll document.
func (s *memStore) KeepsRoll() bool { return true }

// putRoll stores doc as ConsulStore would (its JSON, read back) under a
// new version, or removes the document when doc has no entry.
func (s *memStore) putRoll(doc *mcribapi.RollDoc) {
	if doc.Roll == nil {
		s.roll, s.rollIndex = nil, 0
		return
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(err) // a RollDoc always marshals
	}
	d, err := mcribapi.ParseStoredRoll(b)
	if err != nil {
		panic(err) // the loop writes only entries that parse
	}
	s.roll = d
	s.rollSeq++
	s.rollIndex = s.rollSeq
}

// copyRoll returns a copy of the stored document, nil for none.
func (s *memStore) copyRoll() *mcribapi.RollDoc {
	if s.roll == nil {
		return nil
	}
	b, _ := json.Marshal(s.roll)
	d, _ := mcribapi.ParseStoredRoll(b)
	return d
}
