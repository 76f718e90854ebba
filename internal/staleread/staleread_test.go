package staleread

import (
	"fmt"
	"strings"
	"testing"
)

// op builds operations of small histories: who, on which generation and
// whether its map was fresh, and when.
type op struct {
	client string
	gen    uint64
	fresh  bool
}

var (
	// c1, c2 and c3 are clients with fresh maps of generation 1 or 2;
	// stale1 and stale2 clients whose maps were not fresh.
	c1g1, c1g2 = op{"c1", 1, true}, op{"c1", 2, true}
	c2g1, c2g2 = op{"c2", 1, true}, op{"c2", 2, true}
	c3g2       = op{"c3", 2, true}
	stale1     = op{"s1", 1, false}
	stale2     = op{"s2", 2, false}
)

func (c op) set(key, v string, start, end uint64, ok bool) *Op {
	return &Op{Client: c.client, Kind: Set, Key: key, Value: v, OK: ok, Fresh: c.fresh, Gen: c.gen, Start: start, End: end}
}

func (c op) del(key string, start, end uint64, ok bool) *Op {
	return &Op{Client: c.client, Kind: Delete, Key: key, OK: ok, Fresh: c.fresh, Gen: c.gen, Start: start, End: end}
}

func (c op) get(key, v string, start, end uint64) *Op {
	return &Op{Client: c.client, Kind: Get, Key: key, Value: v, Hit: v != "", Fresh: c.fresh, Gen: c.gen, Start: start, End: end}
}

// TestRuleAcrossGenerations covers each rule of the package doc on small
// histories, the last operation being the read judged: the shapes the
// outside test of issue 26 found (a client on generation G deleting at the
// old holder only while one on G+1 reads the new holder's older copy; a
// client reading back what it had itself deleted after taking a new map),
// how a stale reader and a stale writer are treated, and values no client
// wrote for the key. Each history is also judged with WithinGeneration,
// the rule before, which sees none of the cross-generation class.
func TestRuleAcrossGenerations(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ops    []*Op
		want   Rule // 0: no violation
		by     int  // index in ops of the violation's By (-1: nil)
		within Rule // the verdict with WithinGeneration
		judged int  // reads judged against writes
	}{
		{"the latest value", []*Op{c1g1.set("k", "a", 1, 2, true), c2g1.get("k", "a", 3, 4)}, 0, -1, 0, 1},
		{"deleted before the read began",
			[]*Op{c1g1.set("k", "a", 1, 2, true), c1g1.del("k", 3, 4, true), c2g1.get("k", "a", 5, 6)}, Replaced, 1, Replaced, 1},
		{"replaced before the read began",
			[]*Op{c1g1.set("k", "a", 1, 2, true), c2g1.set("k", "b", 3, 4, true), c2g1.get("k", "a", 5, 6)}, Replaced, 1, Replaced, 1},
		{"a delete concurrent with the read",
			[]*Op{c1g1.set("k", "a", 1, 2, true), c1g1.del("k", 3, 6, true), c2g1.get("k", "a", 5, 7)}, 0, -1, 0, 1},
		{"a delete concurrent with the set",
			[]*Op{c1g1.set("k", "a", 1, 4, true), c1g1.del("k", 2, 3, true), c2g1.get("k", "a", 5, 6)}, 0, -1, 0, 1},
		{"a failed delete is indeterminate",
			[]*Op{c1g1.set("k", "a", 1, 2, true), c1g1.del("k", 3, 4, false), c2g1.get("k", "a", 5, 6)}, 0, -1, 0, 1},
		{"a failed set's value is never stale",
			[]*Op{c1g1.set("k", "a", 1, 2, false), c1g1.del("k", 3, 4, true), c2g1.get("k", "a", 5, 6)}, 0, -1, 0, 1},
		{"a delete of another key",
			[]*Op{c1g1.set("k", "a", 1, 2, true), c1g1.del("k2", 3, 4, true), c2g1.get("k", "a", 5, 6)}, 0, -1, 0, 1},
		// Issue 26: c1, still on generation 1, deletes the key at the
		// slot's old holder only; c2, on generation 2, reads the new
		// holder, which holds the value from before the delete (copied by
		// a warm read).
		{"a delete on G, the older copy read on G+1",
			[]*Op{c1g1.set("k", "a", 1, 2, true), c1g1.del("k", 3, 4, true), c2g2.get("k", "a", 5, 6)}, Replaced, 1, 0, 1},
		// The same with the value set at the new holder by a client on
		// generation 2 before the delete on generation 1.
		{"set on G+1, deleted on G, read on G+1",
			[]*Op{c2g2.set("k", "a", 1, 2, true), c1g1.del("k", 3, 4, true), c3g2.get("k", "a", 5, 6)}, Replaced, 1, 0, 1},
		{"a set on G replaces what is read on G+1",
			[]*Op{c2g2.set("k", "a", 1, 2, true), c1g1.set("k", "b", 3, 4, true), c3g2.get("k", "a", 5, 6)}, Replaced, 1, 0, 1},
		// Issue 26: a client read back the value it had itself deleted a
		// moment before, having taken the new map between the two.
		{"a client reads back its own delete after taking a new map",
			[]*Op{c1g1.set("k", "a", 1, 2, true), c1g1.del("k", 3, 4, true), c1g2.get("k", "a", 5, 6)}, Replaced, 1, 0, 1},
		// A stale reader is not judged against writes, on any generation.
		{"a stale reader is not judged",
			[]*Op{c1g1.set("k", "a", 1, 2, true), c1g1.del("k", 3, 4, true), stale1.get("k", "a", 5, 6)}, 0, -1, Replaced, 0},
		{"a stale reader on another generation is not judged",
			[]*Op{c1g1.set("k", "a", 1, 2, true), c1g1.del("k", 3, 4, true), stale2.get("k", "a", 5, 6)}, 0, -1, 0, 0},
		// A stale writer's write replaces nothing, and its value is never
		// stale.
		{"a stale writer's delete replaces nothing",
			[]*Op{c1g1.set("k", "a", 1, 2, true), stale1.del("k", 3, 4, true), c2g2.get("k", "a", 5, 6)}, 0, -1, 0, 1},
		{"a stale writer's set replaces nothing",
			[]*Op{c1g1.set("k", "a", 1, 2, true), stale2.set("k", "b", 3, 4, true), c2g2.get("k", "a", 5, 6)}, 0, -1, Replaced, 1},
		{"a stale writer's value is never stale",
			[]*Op{stale1.set("k", "a", 1, 2, true), c1g1.del("k", 3, 4, true), c2g1.get("k", "a", 5, 6)}, 0, -1, Replaced, 1},
		{"a fresh write after a stale one still replaces",
			[]*Op{c1g1.set("k", "a", 1, 2, true), stale1.del("k", 3, 4, true), c2g2.del("k", 5, 6, true), c3g2.get("k", "a", 7, 8)}, Replaced, 2, Replaced, 1},
		// Values no client wrote for the key, whoever reads them.
		{"a tombstone read as a value",
			[]*Op{c1g1.set("k", "a", 1, 2, true), c2g2.get("k", "mcrib-tombstone", 3, 4)}, Unwritten, -1, 0, 1},
		{"a tombstone read by a stale reader",
			[]*Op{c1g1.set("k", "a", 1, 2, true), stale2.get("k", "mcrib-tombstone", 3, 4)}, Unwritten, -1, 0, 0},
		{"another key's value",
			[]*Op{c1g1.set("k2", "a", 1, 2, true), c2g1.get("k", "a", 3, 4)}, Unwritten, 0, 0, 1},
		{"another key's value, its set failed",
			[]*Op{c1g1.set("k2", "a", 1, 2, false), c2g1.get("k", "a", 3, 4)}, Unwritten, 0, 0, 1},
		{"garbage", []*Op{c2g1.get("k", "\x00\x01", 1, 2)}, Unwritten, -1, 0, 1},
		{"a value whose set began after the read ended",
			[]*Op{c2g1.get("k", "a", 1, 2), c1g1.set("k", "a", 3, 4, true)}, Unwritten, 1, 0, 1},
		{"a value whose set was under way",
			[]*Op{c2g1.get("k", "a", 2, 3), c1g1.set("k", "a", 1, 4, false)}, 0, -1, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, within := range []bool{false, true} {
				h := New(Options{WithinGeneration: within})
				var read *Op
				for _, o := range tc.ops {
					h.Add(o)
					if o.Kind == Get {
						read = o
					}
				}
				want, wantBy, judged := tc.want, (*Op)(nil), tc.judged
				if tc.by >= 0 {
					wantBy = tc.ops[tc.by]
				}
				if within {
					want, judged = tc.within, 1
					if want == Replaced {
						wantBy = tc.ops[len(tc.ops)-2]
					} else {
						wantBy = nil
					}
				}
				got := h.Check()
				switch {
				case want == 0 && len(got) != 0:
					t.Fatalf("within %v: violations %v, want none", within, got)
				case want != 0 && (len(got) != 1 || got[0].Rule != want || got[0].Read != read || got[0].By != wantBy):
					t.Fatalf("within %v: violations %v, want one %v of the read by %v", within, got, want, wantBy)
				}
				if (h.ReplacedBy(read) != nil) != (want == Replaced) {
					t.Fatalf("within %v: ReplacedBy = %v, want a write: %v", within, h.ReplacedBy(read), want == Replaced)
				}
				if h.Reads() != 1 || h.JudgedReads() != judged {
					t.Fatalf("within %v: Reads() = %d, JudgedReads() = %d; want 1, %d", within, h.Reads(), h.JudgedReads(), judged)
				}
			}
		})
	}
}

// TestJudgeAsRecorded judges reads as they are added, as the soak does: a
// read of a value whose set is still under way looks unwritten then, and
// Check over the whole history clears it once the set is in.
func TestJudgeAsRecorded(t *testing.T) {
	h := New(Options{})
	set := c1g1.set("k", "a", 1, 5, true)
	r := c2g2.get("k", "a", 2, 3)
	h.Add(r)
	if v, ok := h.Judge(r); !ok || v.Rule != Unwritten {
		t.Fatalf("Judge before the set is in = %v, %v; want unwritten", v, ok)
	}
	h.Add(set)
	if got := h.Check(); len(got) != 0 {
		t.Fatalf("Check with the set in = %v, want none", got)
	}
	del := c2g1.del("k", 6, 7, true)
	late := c3g2.get("k", "a", 8, 9)
	h.Add(del)
	h.Add(late)
	if v, ok := h.Judge(late); !ok || v.Rule != Replaced || v.By != del {
		t.Fatalf("Judge of the read after the delete = %v, %v; want replaced by the delete", v, ok)
	}
}

// TestViolationString says who did what, on which generation and map.
func TestViolationString(t *testing.T) {
	set := c1g1.set("k", "a", 1, 2, true)
	del := c1g1.del("k", 3, 4, true)
	for _, tc := range []struct {
		v    Violation
		want string
	}{
		{Violation{Read: c2g2.get("k", "a", 5, 6), By: del, Rule: Replaced},
			`stale read: c2's get of "k" (generation 2, fresh true, 5–6) returned "a", which c1's delete of "k" (generation 1, fresh true, 3–4) replaced before the get began`},
		{Violation{Read: c2g2.get("k", "mcrib-tombstone", 5, 6), Rule: Unwritten},
			`c2's get of "k" (generation 2, fresh true, 5–6) returned "mcrib-tombstone", a value no set wrote`},
		{Violation{Read: c2g2.get("k2", "a", 5, 6), By: set, Rule: Unwritten},
			`c2's get of "k2" (generation 2, fresh true, 5–6) returned "a", a value c1's set of "k" to "a" (generation 1, fresh true, 1–2) wrote for another key`},
		{Violation{Read: c2g2.get("k", "a", 0, 1), By: set, Rule: Unwritten},
			`c2's get of "k" (generation 2, fresh true, 0–1) returned "a", a value c1's set of "k" to "a" (generation 1, fresh true, 1–2) began writing only after the get ended`},
	} {
		if got := tc.v.String(); got != tc.want {
			t.Errorf("String() =\n%s\nwant\n%s", got, tc.want)
		}
	}
}

// TestManyReads judges a soak-sized history: 500,000 reads over 400 keys
// with a write between reads, each read judged as it is added and the
// whole history again; it stays linear in the history, and a planted
// stale read among them is found.
func TestManyReads(t *testing.T) {
	if testing.Short() {
		t.Skip("a soak-sized history")
	}
	h, stale := manyReads(500_000)
	if v, ok := h.Judge(stale); !ok || v.Rule != Replaced {
		t.Fatalf("the planted stale read: %v, %v", v, ok)
	}
	if got := h.Check(); len(got) != 1 || got[0].Read != stale {
		t.Fatalf("Check found %d violations, want the planted one", len(got))
	}
	if h.JudgedReads() != 500_000+1 {
		t.Fatalf("JudgedReads() = %d", h.JudgedReads())
	}
}

// manyReads builds a history of n reads of the latest value of 400 keys,
// with a set before each, on generations that change every 1,000
// operations, and a stale read of the first value of key 0 at the end.
func manyReads(n int) (*History, *Op) {
	h := New(Options{})
	var pos uint64
	first := ""
	for i := range n {
		key := fmt.Sprintf("k%d", i%400)
		c := op{fmt.Sprintf("c%d", i%3), uint64(i / 1000), true}
		v := fmt.Sprintf("v%d", i)
		if first == "" {
			first = v
		}
		h.Add(c.set(key, v, pos+1, pos+3, true))
		r := c.get(key, v, pos+2, pos+4)
		h.Add(r)
		if _, bad := h.Judge(r); bad {
			panic("a read of the latest value judged stale")
		}
		pos += 4
	}
	stale := c2g2.get("k0", first, pos+1, pos+2)
	h.Add(stale)
	return h, stale
}

func BenchmarkJudge(b *testing.B) {
	h, stale := manyReads(100_000)
	b.ResetTimer()
	for range b.N {
		h.Judge(stale)
	}
}

func TestKindAndRuleStrings(t *testing.T) {
	var got []string
	for _, k := range []Kind{Get, Set, Delete, 9} {
		got = append(got, k.String())
	}
	for _, r := range []Rule{Replaced, Unwritten, 0} {
		got = append(got, r.String())
	}
	if s := strings.Join(got, " "); s != "get set delete unknown replaced unwritten unknown" {
		t.Fatalf("%s", s)
	}
}
