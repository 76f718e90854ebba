package warmcopy

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
)

// keysOf returns n keys k0, k1, … that fall in slot of numSlots.
func keysOf(slot, numSlots, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		if k := fmt.Sprintf("k%d", i); cachenodes.KeySlot(k, numSlots) == slot {
			out = append(out, k)
		}
	}
	return out
}

// TestPick is the selection and the order of a copy, table-driven.
func TestPick(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	in := keysOf(1, 4, 6)   // the slot's keys
	out := keysOf(0, 4, 2)  // another slot's
	twin := keysOf(5, 8, 2) // slot 1 of 4 splits into 1 and 5 of 8
	base := func(key string, la int64) Entry {
		return Entry{Key: key, Exp: -1, LastAccess: la, CAS: uint64(la), Size: 100}
	}
	for _, tc := range []struct {
		name           string
		entries        []Entry
		slot, numSlots int
		max            int
		want           []string
		skipped        Skips
	}{
		{
			name:    "only the slot's keys, most recently used first",
			entries: []Entry{base(in[0], 10), base(out[0], 50), base(in[1], 30), base(out[1], 5), base(in[2], 20)},
			slot:    1, numSlots: 4,
			want: []string{in[1], in[2], in[0]},
		},
		{
			name:    "a split copies the twin's keys only, not slot s's",
			entries: []Entry{base(twin[0], 1), base(keysOf(1, 8, 1)[0], 9), base(twin[1], 2)},
			slot:    5, numSlots: 8,
			want: []string{twin[1], twin[0]},
		},
		{
			name: "at the same second, a key read since stored first, then by key",
			entries: []Entry{
				{Key: in[3], Exp: -1, LastAccess: 7},
				{Key: in[2], Exp: -1, LastAccess: 7},
				{Key: in[1], Exp: -1, LastAccess: 7, Fetched: true},
				{Key: in[0], Exp: -1, LastAccess: 8},
			},
			slot: 1, numSlots: 4,
			want: append([]string{in[0], in[1]}, sorted(in[2], in[3])...),
		},
		{
			name: "expiring within 10 s is skipped, at 10 s it is kept",
			entries: []Entry{
				{Key: in[0], Exp: now.Unix() + 9, LastAccess: 3},
				{Key: in[1], Exp: now.Unix() + 10, LastAccess: 2},
				{Key: in[2], Exp: now.Unix() - 5, LastAccess: 1},
				{Key: in[3], Exp: -1, LastAccess: 0},
			},
			slot: 1, numSlots: 4,
			want:    []string{in[1], in[3]},
			skipped: Skips{SkipExpiring: 2},
		},
		{
			name:    "a key the text protocol cannot send is skipped",
			entries: []Entry{base(badKeyOf(1, 4), 9), base(in[0], 1)},
			slot:    1, numSlots: 4,
			want:    []string{in[0]},
			skipped: Skips{SkipBadKey: 1},
		},
		{
			name:    "over the cap, the least recently used go",
			entries: []Entry{base(in[0], 1), base(in[1], 6), base(in[2], 3), base(in[3], 5), base(in[4], 2)},
			slot:    1, numSlots: 4, max: 3,
			want:    []string{in[1], in[3], in[2]},
			skipped: Skips{SkipOverCap: 2},
		},
		{
			name: "a key listed twice counts once, at its later listing",
			entries: []Entry{
				{Key: in[0], Exp: -1, LastAccess: 1, CAS: 1},
				{Key: in[1], Exp: -1, LastAccess: 5, CAS: 2},
				{Key: in[0], Exp: -1, LastAccess: 9, CAS: 3},
				{Key: in[1], Exp: -1, LastAccess: 4, CAS: 1},
			},
			slot: 1, numSlots: 4, max: 2,
			want: []string{in[0], in[1]},
		},
		{
			name:    "one slot: every key",
			entries: []Entry{base(out[0], 1), base(in[0], 2)},
			slot:    0, numSlots: 1,
			want: []string{in[0], out[0]},
		},
		{name: "nothing listed", slot: 1, numSlots: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, skipped := Pick(tc.entries, tc.slot, tc.numSlots, now, tc.max)
			var keys []string
			for _, e := range got {
				keys = append(keys, e.Key)
			}
			if !slices.Equal(keys, tc.want) {
				t.Errorf("Pick keys %q, want %q", keys, tc.want)
			}
			if skipped != tc.skipped {
				t.Errorf("Pick skipped %v, want %v", skipped, tc.skipped)
			}
		})
	}
}

// TestPickKeepsTheLaterListing checks the fields of a key listed twice.
func TestPickKeepsTheLaterListing(t *testing.T) {
	k := keysOf(0, 2, 1)[0]
	got, _ := Pick([]Entry{{Key: k, Exp: -1, LastAccess: 9, CAS: 3}, {Key: k, Exp: -1, LastAccess: 9, CAS: 4, Size: 7}}, 0, 2, time.Unix(0, 0), 0)
	if len(got) != 1 || got[0].CAS != 4 || got[0].Size != 7 {
		t.Errorf("Pick = %+v, want the listing with CAS 4", got)
	}
}

// TestPickBoundsMemory checks that the picker never holds more than the
// cap while a large dump streams, and keeps the most recent.
func TestPickBoundsMemory(t *testing.T) {
	p := newPicker(0, 1, time.Unix(0, 0), 100)
	for i := range 10_000 {
		p.offer(Entry{Key: fmt.Sprintf("k%05d", i), Exp: -1, LastAccess: int64(i % 5000)})
		if p.h.Len() > 100 {
			t.Fatalf("the picker holds %d entries over a cap of 100", p.h.Len())
		}
	}
	got := p.list()
	if len(got) != 100 || got[0].LastAccess != 4999 || got[99].LastAccess != 4950 {
		t.Errorf("kept %d, first la %d, last la %d; want 100 from 4999 to 4950", len(got), got[0].LastAccess, got[len(got)-1].LastAccess)
	}
	if p.skipped[SkipOverCap] != 9_900 || p.dumped != 10_000 {
		t.Errorf("over cap %d, dumped %d", p.skipped[SkipOverCap], p.dumped)
	}
}

// TestCopyExpiryRule is the expiry a copy is added with.
func TestCopyExpiryRule(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	for _, tc := range []struct {
		name string
		exp  int64
		at   time.Time
		ttl  time.Duration
		want int64
		ok   bool
	}{
		{"no expiry: the warm TTL", -1, now, time.Hour, 3600, true},
		{"under the TTL: a second less than it has", now.Unix() + 100, now, time.Hour, 99, true},
		{"over the TTL: the TTL", now.Unix() + 7200, now, time.Hour, 3600, true},
		{"the source's clock half a second on", now.Unix() + 100, now.Add(500 * time.Millisecond), time.Hour, 98, true},
		{"10 s left: kept", now.Unix() + 10, now, time.Hour, 9, true},
		{"under 10 s left: skipped", now.Unix() + 10, now.Add(time.Millisecond), time.Hour, 0, false},
		{"expired: skipped", now.Unix() - 1, now, time.Hour, 0, false},
	} {
		got, ok := copyExpiry(tc.exp, tc.at, tc.ttl)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: copyExpiry = %d, %v; want %d, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// TestSkipReasonNames checks every reason has its own name.
func TestSkipReasonNames(t *testing.T) {
	seen := map[string]bool{}
	for r := range SkipReason(NumSkipReasons) {
		n := r.String()
		if n == "" || n == "unknown" || seen[n] || strings.ContainsAny(n, " -") {
			t.Errorf("reason %d has name %q", r, n)
		}
		seen[n] = true
	}
	if SkipReason(NumSkipReasons).String() != "unknown" {
		t.Error("an out-of-range reason has a name")
	}
	if (Skips{SkipGone: 2, SkipLate: 3}).Total() != 5 {
		t.Error("Skips.Total")
	}
}

func sorted(keys ...string) []string { slices.Sort(keys); return keys }

// badKeyOf returns a key with a space in it that falls in slot.
func badKeyOf(slot, numSlots int) string {
	for i := 0; ; i++ {
		if k := fmt.Sprintf("bad key %d", i); cachenodes.KeySlot(k, numSlots) == slot {
			return k
		}
	}
}
