package cachenodes

import (
	"hash/crc32"
	"unsafe"
)

// KeySlot returns the slot of key in a table of numSlots slots:
// crc32.ChecksumIEEE(key) % numSlots, the rule every mcrib client shares
// (docs/api.md, "Slot map document"). numSlots must be at least 1; mcrib only makes
// maps whose slot count is a power of two, because only then is this the
// slot that mcrouter's Crc32 hash ((crc32 & 0x7fffffff) % n) and
// twemproxy's crc32a hash with modula distribution (crc32 % n) pick too,
// so a key reaches the same memcached through all three. It does not
// allocate: the key's bytes are read in place, never copied.
func KeySlot(key string, numSlots int) int {
	// crc32 only reads its argument, so viewing the string's bytes without
	// a copy is safe, and a []byte(key) conversion would escape to the heap.
	b := unsafe.Slice(unsafe.StringData(key), len(key))
	return int(crc32.ChecksumIEEE(b) % uint32(numSlots))
}
