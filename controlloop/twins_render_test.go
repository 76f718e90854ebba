package controlloop

import (
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/testenv"
)

// growKeys is how many keys the renderer tests route before and after a
// doubling.
const growKeys = 100_000

// routerPools returns the servers of each pool of an mcrouter config.
func routerPools(t *testing.T, m *cachenodes.SlotMap) map[string][]string {
	t.Helper()
	data, err := MCRouterConfig(m, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Pools map[string]struct {
			Servers []string `json:"servers"`
		} `json:"pools"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	out := make(map[string][]string)
	for name, p := range cfg.Pools {
		out[name] = p.Servers
	}
	return out
}

// routerServer is the server mcrouter's PoolRoute with the Crc32 hash
// sends key to.
func routerServer(servers []string, key string) string {
	return servers[(crc32.ChecksumIEEE([]byte(key))&0x7fffffff)%uint32(len(servers))]
}

// twemproxyServers returns the servers of a twemproxy config in the order
// nutcracker lays them on its modula continuum: sorted by name, length
// first, then bytes.
func twemproxyServers(t *testing.T, m *cachenodes.SlotMap) []string {
	t.Helper()
	data, err := TwemproxyConfig(m, "")
	if err != nil {
		t.Fatal(err)
	}
	type server struct{ addr, name string }
	var servers []server
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "    - "); ok {
			hostPortWeight, name, _ := strings.Cut(rest, " ")
			addr := hostPortWeight[:strings.LastIndexByte(hostPortWeight, ':')]
			servers = append(servers, server{addr, name})
		}
	}
	slices.SortStableFunc(servers, func(a, b server) int {
		if len(a.name) != len(b.name) {
			return len(a.name) - len(b.name)
		}
		return strings.Compare(a.name, b.name)
	})
	out := make([]string, len(servers))
	for i, s := range servers {
		out[i] = s.addr
	}
	return out
}

// grownMaps returns a 16-slot pool with a vacant slot and a warming slot,
// and its doubling.
func grownMaps(t *testing.T) (*cachenodes.SlotMap, *cachenodes.SlotMap) {
	t.Helper()
	addrs := make([]string, 16)
	for i := range addrs {
		if i != 6 {
			addrs[i] = fmt.Sprintf("10.0.0.%d:11211", i+1)
		}
	}
	m := warmingMap(t, map[int]string{3: "10.0.1.3:11211"}, "default", addrs...)
	d, err := m.Double(time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	return m, d
}

// TestMCRouterConfigAfterDoubling checks that the mcrouter config of a
// doubled map names slot s's server at index s and s + N, in both the
// holders' and the warm pool, so mcrouter sends each of 100,000 keys to
// the memcached it reached before the first write.
func TestMCRouterConfigAfterDoubling(t *testing.T) {
	m, d := grownMaps(t)
	before, after := routerPools(t, m), routerPools(t, d)
	for _, pool := range []string{"default", "default.warm"} {
		b, a := before[pool], after[pool]
		if len(b) != 16 || len(a) != 32 {
			t.Fatalf("pool %s: %d servers before, %d after; want 16 and 32", pool, len(b), len(a))
		}
		for s := range 16 {
			if a[s] != b[s] || a[s+16] != b[s] {
				t.Errorf("pool %s: slot %d is %s, and %s and %s after the doubling", pool, s, b[s], a[s], a[s+16])
			}
		}
		for i := range growKeys {
			key := fmt.Sprintf("user:%d", i)
			if x, y := routerServer(b, key), routerServer(a, key); x != y {
				t.Fatalf("pool %s: key %q goes to %s before the doubling and to %s after", pool, key, x, y)
			}
		}
	}
	if got := after["default.warm"][19]; got != "10.0.1.3:11211" {
		t.Errorf("the twin of the warming slot 3 warms from %s, want 10.0.1.3:11211", got)
	}
}

// TestTwemproxyConfigAfterDoubling checks that the twemproxy config of a
// doubled map lists slot s's server under the names slot s and slot s + N,
// and that nutcracker's order and hash send each of 100,000 keys to the
// memcached it reached before (and where the Go selector sends it).
func TestTwemproxyConfigAfterDoubling(t *testing.T) {
	m, d := grownMaps(t)
	before, after := twemproxyServers(t, m), twemproxyServers(t, d)
	if len(before) != 16 || len(after) != 32 {
		t.Fatalf("%d servers before, %d after; want 16 and 32", len(before), len(after))
	}
	sel, err := cachenodes.NewSelector(d)
	if err != nil {
		t.Fatal(err)
	}
	for i := range growKeys {
		key := fmt.Sprintf("user:%d", i)
		h := crc32.ChecksumIEEE([]byte(key)) // crc32a
		x, y := before[h%16], after[h%32]
		if x != y {
			t.Fatalf("key %q goes to %s before the doubling and to %s after", key, x, y)
		}
		addr, err := sel.PickServer(key)
		if want := VacantServer; err != nil && y != want || err == nil && addr.String() != y {
			t.Fatalf("key %q: twemproxy sends it to %s, the Go selector to %v (%v)", key, y, addr, err)
		}
	}
	data, err := TwemproxyConfig(d, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"10.0.0.5:11211:1 slot0004", "10.0.0.5:11211:1 slot0020"} {
		if !strings.Contains(string(data), name) {
			t.Errorf("the config lacks %q:\n%s", name, data)
		}
	}
	path := filepath.Join(t.TempDir(), "nutcracker.yml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := testenv.CheckNutcrackerConfig(t, path); err != nil {
		t.Errorf("nutcracker refuses the doubled config: %v", err)
	}
}
