package controlloop

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/testenv"
)

// TestTwemproxyPlacesKeysLikeTheSelector runs real nutcracker on the
// rendered config in front of real memcached: every key written through
// nutcracker is found on exactly the memcached that mcrib's selector names
// for it, every key written through the selector is read back through
// nutcracker, and a key of a vacant slot fails fast through nutcracker and
// lands nowhere (it is not rehashed onto another node).
func TestTwemproxyPlacesKeysLikeTheSelector(t *testing.T) {
	tests := []struct {
		slots  int
		vacant []int
	}{
		{slots: 16},
		{slots: 8, vacant: []int{5}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d slots", tt.slots), func(t *testing.T) {
			testenv.NutcrackerBinary(t) // skip before starting anything
			addrs := make([]string, tt.slots)
			nodes := map[string]*testenv.Memcached{}
			for i := range addrs {
				if !containsInt(tt.vacant, i) {
					mc := testenv.StartMemcached(t)
					addrs[i], nodes[mc.Addr] = mc.Addr, mc
				}
			}
			m := poolMap(t, "default", addrs...)
			sel, err := cachenodes.NewSelector(m)
			if err != nil {
				t.Fatal(err)
			}
			proxy := startTwemproxy(t, m)
			viaProxy := memcache.New(proxy.Addr)
			viaProxy.Timeout = 2 * time.Second
			direct := memcache.NewFromSelector(sel)

			// Through nutcracker, found on exactly the selector's node.
			const n = 300
			var placed []string
			vacantKeys := 0
			for i := range n {
				key := fmt.Sprintf("proxy-key:%d", i)
				start := time.Now()
				err := viaProxy.Set(&memcache.Item{Key: key, Value: []byte(key)})
				if _, perr := sel.PickServer(key); errors.Is(perr, cachenodes.ErrVacantSlot) {
					vacantKeys++
					if err == nil {
						t.Fatalf("set %q of vacant slot %d through nutcracker succeeded; want a failure", key, cachenodes.KeySlot(key, tt.slots))
					}
					if d := time.Since(start); d > time.Second {
						t.Errorf("set %q of a vacant slot took %v to fail; want it to fail fast", key, d)
					}
					placed = append(placed, key) // must be found nowhere
					continue
				}
				if err != nil {
					t.Fatalf("set %q through nutcracker: %v", key, err)
				}
				placed = append(placed, key)
			}
			if len(tt.vacant) > 0 && vacantKeys == 0 {
				t.Fatalf("no key of %d fell into a vacant slot; the test proves nothing about them", n)
			}
			for addr := range nodes {
				found, err := memcache.New(addr).GetMulti(placed)
				if err != nil {
					t.Fatalf("reading %s directly: %v", addr, err)
				}
				for _, key := range placed {
					want := pickAddr(t, sel, key) == addr
					if _, got := found[key]; got != want {
						t.Errorf("key %q (slot %d) on %s: %v, want %v", key, cachenodes.KeySlot(key, tt.slots), addr, got, want)
					}
				}
			}

			// Through the selector, read back through nutcracker.
			for i := range n {
				key := fmt.Sprintf("direct-key:%d", i)
				err := direct.Set(&memcache.Item{Key: key, Value: []byte("v" + strconv.Itoa(i))})
				if errors.Is(err, cachenodes.ErrVacantSlot) {
					continue
				}
				if err != nil {
					t.Fatalf("set %q directly: %v", key, err)
				}
				it, err := viaProxy.Get(key)
				if err != nil || string(it.Value) != "v"+strconv.Itoa(i) {
					t.Fatalf("get %q through nutcracker: %v, %v; want the value written to %s", key, it, err, pickAddr(t, sel, key))
				}
			}
		})
	}
}

// startTwemproxy writes the twemproxy config of m with a free listen port
// and runs nutcracker on it.
func startTwemproxy(t *testing.T, m *cachenodes.SlotMap) *testenv.Nutcracker {
	t.Helper()
	listen := net.JoinHostPort("127.0.0.1", strconv.Itoa(testenv.FreePort(t)))
	data, err := TwemproxyConfig(m, listen)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "nutcracker.yml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return testenv.StartNutcracker(t, path, listen)
}

// pickAddr returns the address the selector routes key to, "" for a
// vacant slot.
func pickAddr(t *testing.T, sel *cachenodes.Selector, key string) string {
	t.Helper()
	a, err := sel.PickServer(key)
	if errors.Is(err, cachenodes.ErrVacantSlot) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return a.String()
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
