package sim

import (
	"encoding/json"

	"github.com/mcrib/mcrib/controlloop"
	"github.com/mcrib/mcrib/mcribapi"
)

// memStore keeps the resize document as ConsulStore does: replaced (or
// removed, without an entry) in the same step as a slot-map write
// (WritePool), and checked there against the version read.
var _ controlloop.ResizeStore = (*memStore)(nil)

// KeepsResize reports that memStore keeps the resize document.
func (s *memStore) KeepsResize() bool { return true }

// putResize stores doc as ConsulStore would (its JSON, read back) under a
// new version, or removes the document when doc has no entry.
func (s *memStore) putResize(doc *mcribapi.ResizeDoc) {
	if doc.Resize == nil {
		s.resize, s.resizeIndex = nil, 0
		return
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(err) // a ResizeDoc always marshals
	}
	d, err := mcribapi.ParseStoredResize(b)
	if err != nil {
		panic(err) // the loop writes only entries that parse
	}
	s.resize = d
	s.resizeSeq++
	s.resizeIndex = s.resizeSeq
}

// copyResize returns a copy of the stored document, nil for none.
func (s *memStore) copyResize() *mcribapi.ResizeDoc {
	if s.resize == nil {
		return nil
	}
	b, _ := json.Marshal(s.resize)
	d, _ := mcribapi.ParseStoredResize(b)
	return d
}
