package staleread

import "testing"

// TestReplacedBy covers the rule on small histories: a read is stale only
// when a write under its generation that began after the value's write
// ended had itself ended before the read began.
func TestReplacedBy(t *testing.T) {
	set := func(v string, gen, start, end uint64, ok bool) *Op {
		return &Op{Client: "w", Kind: Set, Key: "k", Value: v, OK: ok, Gen: gen, Start: start, End: end}
	}
	del := func(gen, start, end uint64, ok bool) *Op {
		return &Op{Client: "w", Kind: Delete, Key: "k", OK: ok, Gen: gen, Start: start, End: end}
	}
	get := func(v string, gen, start, end uint64) *Op {
		return &Op{Client: "r", Kind: Get, Key: "k", Value: v, Hit: true, Gen: gen, Start: start, End: end}
	}
	for _, tc := range []struct {
		name  string
		ops   []*Op
		stale bool
	}{
		{"the latest value", []*Op{set("a", 1, 1, 2, true), get("a", 1, 3, 4)}, false},
		{"deleted before the read began", []*Op{set("a", 1, 1, 2, true), del(1, 3, 4, true), get("a", 1, 5, 6)}, true},
		{"replaced before the read began", []*Op{set("a", 1, 1, 2, true), set("b", 1, 3, 4, true), get("a", 1, 5, 6)}, true},
		{"a delete concurrent with the read", []*Op{set("a", 1, 1, 2, true), del(1, 3, 6, true), get("a", 1, 5, 7)}, false},
		{"a delete concurrent with the write", []*Op{set("a", 1, 1, 4, true), del(1, 2, 3, true), get("a", 1, 5, 6)}, false},
		{"a failed delete is indeterminate", []*Op{set("a", 1, 1, 2, true), del(1, 3, 4, false), get("a", 1, 5, 6)}, false},
		{"a failed set's value is never stale", []*Op{set("a", 1, 1, 2, false), del(1, 3, 4, true), get("a", 1, 5, 6)}, false},
		{"a delete under another generation", []*Op{set("a", 1, 1, 2, true), del(2, 3, 4, true), get("a", 1, 5, 6)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := New()
			for _, o := range tc.ops {
				h.Add(o)
			}
			if got := len(h.Check()) > 0; got != tc.stale {
				t.Fatalf("stale = %v, want %v", got, tc.stale)
			}
			if h.Reads() != 1 {
				t.Fatalf("Reads() = %d, want 1", h.Reads())
			}
		})
	}
}
