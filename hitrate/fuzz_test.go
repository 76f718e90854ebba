package hitrate

import (
	"encoding/binary"
	"testing"
	"time"
)

var fuzzT0 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// FuzzMeter feeds the meter arbitrary counters (restarts, counters going
// back, values near 2^64, several nodes, slots unserved, even more of
// them than there are): the rate stays in [0, 1].
func FuzzMeter(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x00\x00\x00\x00\x00\x00\x03\x84\x00\x00\x00\x00\x00\x00\x00\x64\x01\x00\x00\x0e\x10\x05"))
	f.Add([]byte("\x00\xff\xff\xff\xff\xff\xff\xff\xfa\x7f\xff\xff\xff\xff\xff\xff\xff\x02\x00\x00\x00\x03\x05"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 22*64 {
			return // 64 readings are plenty; longer inputs only slow the fuzzer
		}
		var m Meter
		now := fuzzT0
		// Each reading takes 22 bytes: node, hits, misses, pid, uptime, step.
		for len(data) >= 22 {
			node := string(rune('a' + data[0]%3))
			c := Counters{
				Hits:   binary.BigEndian.Uint64(data[1:9]),
				Misses: binary.BigEndian.Uint64(data[9:17]),
				PID:    int64(data[17]),
				Uptime: time.Duration(binary.BigEndian.Uint32(data[18:22])) * time.Second,
			}
			now = now.Add(time.Duration(data[0]/3) * time.Second)
			unserved := int(data[17] % 6)
			data = data[22:]
			rate, ok := m.Observe(now, map[string]Counters{node: c}, Slots{Total: 4, Unserved: unserved})
			if ok && !(rate >= 0 && rate <= 1) {
				t.Fatalf("rate %v outside [0, 1] after %+v", rate, c)
			}
		}
	})
}
