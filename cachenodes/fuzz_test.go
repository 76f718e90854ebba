package cachenodes

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// FuzzParseSlotMap checks that every slot map ParseSlotMap accepts keeps
// the document's invariants (one entry per slot, no node twice, no address
// twice) and survives a round trip through its JSON unchanged.
func FuzzParseSlotMap(f *testing.F) {
	f.Add([]byte(`{"pool":"default","num_slots":2,"generation":7,"updated_at":"2026-11-29T13:00:00Z","slots":[{"slot":0,"node_id":"mc-1","addr":"127.0.0.1:11211","az":"a"},{"slot":1,"node_id":"","addr":"","az":""}],"spares":[{"node_id":"mc-9","addr":"127.0.0.1:11219","az":"b"}]}`))
	f.Add([]byte(`{"pool":"p","num_slots":1,"generation":0,"slots":[{"slot":0,"node_id":"a","addr":"x:1"}],"spares":null}`))
	f.Add([]byte(`{"num_slots":2,"slots":[{"slot":0,"node_id":"a","addr":"x:1"},{"slot":1,"node_id":"a","addr":"x:2"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseSlotMap(data)
		if err != nil {
			return
		}
		if m.NumSlots() < 1 {
			t.Fatalf("accepted a map with %d slots", m.NumSlots())
		}
		ids, addrs := map[string]bool{}, map[string]bool{}
		for i, n := range m.Slots() {
			if n.IsZero() {
				continue
			}
			if ids[n.ID] || addrs[n.Addr] {
				t.Fatalf("slot %d repeats node %q or address %q", i, n.ID, n.Addr)
			}
			ids[n.ID], addrs[n.Addr] = true, true
			if m.SlotOf(n.ID) != i {
				t.Fatalf("SlotOf(%q) = %d, want %d", n.ID, m.SlotOf(n.ID), i)
			}
		}
		for _, n := range m.Spares() {
			if n.IsZero() || ids[n.ID] {
				t.Fatalf("spare %q is vacant or repeated", n.ID)
			}
			ids[n.ID] = true
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("marshalling an accepted map: %v", err)
		}
		m2, err := ParseSlotMap(b)
		if err != nil {
			t.Fatalf("the map's own JSON is refused: %v\n%s", err, b)
		}
		if !m2.Equal(m) || m2.Pool() != m.Pool() || m2.Generation() != m.Generation() {
			t.Fatalf("round trip changed the map:\n%s", b)
		}
		b2, _ := json.Marshal(m2)
		if !bytes.Equal(b, b2) {
			t.Fatalf("second round trip differs:\n%s\n%s", b, b2)
		}
	})
}

// FuzzReadStats checks the memcached stats parser: it never panics, and
// the figures of a reply it accepts read back the same from a reply
// written from them.
func FuzzReadStats(f *testing.F) {
	f.Add([]byte("STAT pid 42\r\nSTAT uptime 3600\r\nSTAT curr_items 5\r\nSTAT get_hits 90\r\nSTAT get_misses 10\r\nSTAT cmd_flush 1\r\nEND\r\n"))
	f.Add([]byte("STAT pid 1\r\nSTAT uptime 0\r\nEND\r\n"))
	f.Add([]byte("STAT pid 1\r\nSTAT uptime 1\r\nSTAT get_hits 18446744073709551615\r\nEND\r\n"))
	f.Add([]byte("ERROR\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := readStats(bufio.NewReader(bytes.NewReader(data)))
		if err != nil {
			return
		}
		if st.Uptime < 0 || st.Uptime > (1<<32)*time.Second {
			t.Fatalf("uptime %v out of range", st.Uptime)
		}
		reply := fmt.Sprintf("STAT pid %d\r\nSTAT uptime %d\r\nSTAT curr_items %d\r\nSTAT get_hits %d\r\nSTAT get_misses %d\r\nSTAT cmd_flush %d\r\nEND\r\n",
			st.PID, int64(st.Uptime/time.Second), st.CurrItems, st.GetHits, st.GetMisses, st.CmdFlush)
		again, err := readStats(bufio.NewReader(bytes.NewReader([]byte(reply))))
		if err != nil || again != st {
			t.Fatalf("re-reading %+v: %+v, %v", st, again, err)
		}
	})
}

// FuzzKeySlot checks KeySlot against the ports of mcrouter's and
// twemproxy's rules (keyslot_test.go) for every power-of-two slot count.
func FuzzKeySlot(f *testing.F) {
	f.Add([]byte("user:2"), uint8(4))
	f.Add([]byte(""), uint8(0))
	f.Add([]byte("\xff\x00\x80"), uint8(12))
	f.Fuzz(func(t *testing.T, key []byte, shift uint8) {
		n := 1 << (shift % 13)
		got := KeySlot(string(key), n)
		if got < 0 || got >= n {
			t.Fatalf("KeySlot(%q, %d) = %d out of range", key, n, got)
		}
		if m, tw := mcrouterSlot(key, n), twemproxySlot(key, n); got != m || got != tw {
			t.Fatalf("KeySlot(%q, %d) = %d; mcrouter %d, twemproxy %d", key, n, got, m, tw)
		}
	})
}
