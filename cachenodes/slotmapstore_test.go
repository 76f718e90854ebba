package cachenodes

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"testing"
	"time"
)

// bigSlotMap is a pool of nodes nodes over slots slots (the rest spares),
// with realistic IDs, addresses and zones.
func bigSlotMap(t testing.TB, nodes, slots int) *SlotMap {
	t.Helper()
	spec := SlotMapSpec{Pool: "default", Generation: 42, UpdatedAt: time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)}
	for i := range nodes {
		n := Node{ID: fmt.Sprintf("memcached-%05d", i), Addr: fmt.Sprintf("10.%d.%d.%d:11211", i/65536, (i/256)%256, i%256), AZ: fmt.Sprintf("us-east-1%c", 'a'+i%3)}
		if i < slots {
			spec.Slots = append(spec.Slots, n)
		} else {
			spec.Spares = append(spec.Spares, n)
		}
	}
	m, err := NewSlotMap(spec)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestStoredSlotMapFitsConsul(t *testing.T) {
	const consulLimit = 512 << 10
	cases := []struct {
		nodes, slots int
		compressed   bool
	}{{6, 4, false}, {1000, 512, false}, {10000, 4096, true}, {30000, 4096, true}}
	if testing.Short() {
		cases = cases[:3] // make check: up to the 10,000 nodes of the scale target
	}
	for _, tc := range cases {
		m := bigSlotMap(t, tc.nodes, tc.slots)
		plain, err := m.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		stored, err := EncodeStoredSlotMap(m)
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.HasPrefix(stored, gzipMagic); got != tc.compressed {
			t.Errorf("%d nodes: compressed %v, want %v", tc.nodes, got, tc.compressed)
		}
		if len(stored) >= consulLimit {
			t.Errorf("%d nodes, %d slots: %d bytes stored, over Consul's %d", tc.nodes, tc.slots, len(stored), consulLimit)
		}
		back, err := ParseSlotMap(stored)
		if err != nil || !back.Equal(m) || back.NumSpares() != m.NumSpares() {
			t.Fatalf("%d nodes: the stored form does not read back: %v", tc.nodes, err)
		}
		t.Logf("%d nodes, %d slots: JSON %d bytes, stored %d bytes", tc.nodes, tc.slots, len(plain), len(stored))
	}
}

func TestStoredSlotMapRefusesBadCompression(t *testing.T) {
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	zeros := make([]byte, 1<<20)
	for range 3 {
		zw.Write(zeros)
	}
	zw.Close()
	if _, err := inflateStored(bomb.Bytes(), 2<<20); !errors.Is(err, ErrInvalidSlotMap) {
		t.Errorf("3 MiB inflated under a 2 MiB limit: %v, want ErrInvalidSlotMap", err)
	}
	if _, err := ParseSlotMap([]byte{0x1f, 0x8b, 0x08}); !errors.Is(err, ErrInvalidSlotMap) {
		t.Errorf("a truncated gzip stream: %v, want ErrInvalidSlotMap", err)
	}
}
