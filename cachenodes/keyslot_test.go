package cachenodes

import (
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"strings"
	"testing"
)

// The key→slot rules of the two proxies mcrib writes configs for, ported
// line by line from their C sources so that KeySlot is checked against them
// and not against itself (the ports do not use hash/crc32):
//
//   - mcrouter, Crc32 hash (github.com/facebook/mcrouter):
//     mcrouter/lib/Crc32HashFunc.h, Crc32HashFunc::operator():
//     `auto res = crc32_hash(hashable.data(), hashable.size());
//     return (res & 0x7fffffff) % n_;`
//     with crc32_hash from mcrouter/lib/fbi/hash.c:
//     `crc = ~0; for (i = 0; i < len; i++) crc = (crc >> 8) ^
//     crc32tab[(crc ^ (key[i])) & 0xff]; return (~crc);`
//   - twemproxy, `hash: crc32a` with `distribution: modula`
//     (github.com/twitter/twemproxy): src/hashkit/nc_crc32.c, hash_crc32a:
//     `crc = ~0U; while (key_length--) crc = crc32tab[(crc ^ *p++) & 0xFF]
//     ^ (crc >> 8); return crc ^ ~0U;`
//     and src/hashkit/nc_modula.c, modula_dispatch:
//     `c = continuum + hash % ncontinuum; return c->index;`, where
//     modula_update lays one continuum point per unit of weight for each
//     server in order, so with every server at weight 1 (and
//     auto_eject_hosts false: every server counts) point i is server i and
//     the server is hash % n.
//
// Both crc32tab arrays are the table of the reflected IEEE polynomial
// 0xEDB88320 (printed in full in both files).

// crc32Table builds the table of the reflected IEEE polynomial bit by bit.
func crc32Table() [256]uint32 {
	var tab [256]uint32
	for i := range tab {
		c := uint32(i)
		for range 8 {
			if c&1 == 1 {
				c = c>>1 ^ 0xEDB88320
			} else {
				c >>= 1
			}
		}
		tab[i] = c
	}
	return tab
}

var crc32tab = crc32Table()

// mcrouterCrc32Hash is crc32_hash of mcrouter/lib/fbi/hash.c. (The C code
// XORs a plain, possibly signed, char; the & 0xff keeps only its 8 bits,
// which are the byte.)
func mcrouterCrc32Hash(key []byte) uint32 {
	crc := ^uint32(0)
	for _, b := range key {
		crc = (crc >> 8) ^ crc32tab[(crc^uint32(b))&0xff]
	}
	return ^crc
}

// mcrouterSlot is Crc32HashFunc(n)(key) of mcrouter/lib/Crc32HashFunc.h.
func mcrouterSlot(key []byte, n int) int {
	return int((mcrouterCrc32Hash(key) & 0x7fffffff) % uint32(n))
}

// twemproxyCrc32a is hash_crc32a of twemproxy's src/hashkit/nc_crc32.c.
func twemproxyCrc32a(key []byte) uint32 {
	crc := ^uint32(0)
	for _, b := range key {
		crc = crc32tab[(crc^uint32(b))&0xff] ^ (crc >> 8)
	}
	return crc ^ ^uint32(0)
}

// twemproxySlot is the server modula_dispatch picks among n servers of
// weight 1 (src/hashkit/nc_modula.c).
func twemproxySlot(key []byte, n int) int {
	return int(twemproxyCrc32a(key) % uint32(n))
}

// goldenKeys returns the keys the rules are compared on: readable keys,
// the keys of the sources' own tests, the empty key, and random byte
// strings of every length up to 250 (memcached's limit) from a fixed seed.
func goldenKeys() [][]byte {
	keys := [][]byte{nil, []byte("sample"), []byte("apple"), []byte("user:2")}
	for i := range 2000 {
		keys = append(keys, fmt.Appendf(nil, "user:%d", i))
		keys = append(keys, fmt.Appendf(nil, "/region/cluster/session:%x|#|v%d", i*7919, i%3))
	}
	rng := rand.New(rand.NewPCG(9, 4096))
	for i := range 2000 {
		k := make([]byte, i%251)
		for j := range k {
			k[j] = byte(rng.Uint32())
		}
		keys = append(keys, k)
	}
	return keys
}

// TestProxyPortsMatchTheirSources checks the ports above against the
// expected values in the proxies' own tests, so that a slip in a port
// cannot make the comparisons below pass.
func TestProxyPortsMatchTheirSources(t *testing.T) {
	// Entries of crc32tab as printed in both C files.
	for i, want := range map[int]uint32{0: 0x00000000, 1: 0x77073096, 2: 0xee0e612c, 3: 0x990951ba, 255: 0x2d02ef8d} {
		if crc32tab[i] != want {
			t.Errorf("crc32tab[%d] = %#08x, want %#08x", i, crc32tab[i], want)
		}
	}
	// mcrouter/lib/test/Crc32HashTest.cpp; the last two keys are the bytes
	// -128..127 as chars, then reversed.
	up := make([]byte, 256)
	down := make([]byte, 256)
	for i := range 256 {
		up[i] = byte(int8(i - 128))
		down[255-i] = up[i]
	}
	tests := []struct {
		name string
		got  int
		want int
	}{
		{`mcrouter Crc32HashFunc(100)("sample")`, mcrouterSlot([]byte("sample"), 100), 7},
		{`mcrouter Crc32HashFunc(1)("sample")`, mcrouterSlot([]byte("sample"), 1), 0},
		{`mcrouter Crc32HashFunc(100)("")`, mcrouterSlot(nil, 100), 0},
		{`mcrouter Crc32HashFunc((1<<30)-1)("")`, mcrouterSlot(nil, 1<<30-1), 0},
		{`mcrouter Crc32HashFunc((1<<30)-1)("sample")`, mcrouterSlot([]byte("sample"), 1<<30-1), 822834884},
		{`mcrouter Crc32HashFunc(99999)(-128..127)`, mcrouterSlot(up, 99999), 11697},
		{`mcrouter Crc32HashFunc(99999)(127..-128)`, mcrouterSlot(down, 99999), 97630},
		// twemproxy src/test_all.c, test_hash_algorithms.
		{`twemproxy hash_crc32a("apple")`, int(twemproxyCrc32a([]byte("apple"))), 2838417488},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %d, want %d", tt.name, tt.got, tt.want)
		}
	}
}

// TestKeySlotMatchesMcrouterAndTwemproxy is the golden-vector test of the
// key→slot rule: for every power of two from 1 to 4096 slots, each key's
// KeySlot is the server mcrouter's Crc32 and twemproxy's crc32a + modula
// pick among that many servers listed in slot order.
func TestKeySlotMatchesMcrouterAndTwemproxy(t *testing.T) {
	keys := goldenKeys()
	for n := 1; n <= 4096; n *= 2 {
		t.Run(fmt.Sprintf("%d slots", n), func(t *testing.T) {
			for _, k := range keys {
				got := KeySlot(string(k), n)
				if m := mcrouterSlot(k, n); got != m {
					t.Fatalf("KeySlot(%q, %d) = %d, mcrouter's Crc32 picks %d", k, n, got, m)
				}
				if w := twemproxySlot(k, n); got != w {
					t.Fatalf("KeySlot(%q, %d) = %d, twemproxy's crc32a+modula picks %d", k, n, got, w)
				}
			}
		})
	}
	// The contract's example (docs/api.md, "Slot map document").
	if got := KeySlot("user:2", 16); got != 8 {
		t.Errorf(`KeySlot("user:2", 16) = %d, want 8`, got)
	}
}

// TestProxiesDisagreeUnlessPowerOfTwo shows why --slots must be a power of
// two: mcrouter drops the top bit of the CRC before the modulo and
// twemproxy does not, so for a count like 12 (2^31 % 12 = 8) they pick
// different servers for exactly the keys whose CRC has the top bit set:
// about half of all keys. No one rule could match both.
func TestProxiesDisagreeUnlessPowerOfTwo(t *testing.T) {
	keys := goldenKeys()
	for _, n := range []int{3, 12, 100} {
		t.Run(fmt.Sprintf("%d slots", n), func(t *testing.T) {
			differ := 0
			for _, k := range keys {
				topBit := twemproxyCrc32a(k)&0x80000000 != 0
				d := mcrouterSlot(k, n) != twemproxySlot(k, n)
				if d != topBit {
					t.Fatalf("key %q: the proxies differ: %v, the CRC's top bit is set: %v", k, d, topBit)
				}
				if d {
					differ++
				}
			}
			if frac := float64(differ) / float64(len(keys)); frac < 0.45 || frac > 0.55 {
				t.Errorf("with %d slots the proxies disagree on %.1f%% of %d keys, want about half", n, 100*frac, len(keys))
			}
		})
	}
}

func TestKeySlot(t *testing.T) {
	keys := []string{"", "a", "user:42", "session/7f3a9c", strings.Repeat("k", 250), "ünïcödé", "\x00\xff"}
	for _, n := range []int{1, 2, 3, 16, 1000} {
		for _, key := range keys {
			want := int(crc32.Checksum([]byte(key), crc32.MakeTable(crc32.IEEE)) % uint32(n))
			if got := KeySlot(key, n); got != want {
				t.Errorf("KeySlot(%q, %d) = %d, want %d", key, n, got, want)
			}
		}
	}
	// Known values of CRC-32/IEEE, so the rule cannot drift together with
	// the standard library call used above.
	known := map[string]uint32{"": 0, "a": 0xe8b7be43, "123456789": 0xcbf43926}
	for key, sum := range known {
		if got, want := KeySlot(key, 1<<30), int(sum%(1<<30)); got != want {
			t.Errorf("KeySlot(%q, 1<<30) = %d, want %d", key, got, want)
		}
	}
}

func TestKeySlotDoesNotAllocate(t *testing.T) {
	key := strings.Repeat("x", 200)
	if n := testing.AllocsPerRun(100, func() { _ = KeySlot(key, 16) }); n != 0 {
		t.Errorf("KeySlot allocates %v times per call, want 0", n)
	}
}
