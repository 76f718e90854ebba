package controlloop

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/testenv"
)

// twemproxyHeader is the comment every rendered config starts with, for
// pool "default".
const twemproxyHeader = `# Written by mcrib for pool "default": one server per slot, in slot order.
# mcrib replaces this file whenever the slot map changes; nutcracker reads it
# only at start, so restart nutcracker to apply it. Do not edit by hand.
`

// poolMap builds a map of pool with the given slot addresses ("" for a
// vacant slot), node i named mc-i.
func poolMap(t testing.TB, pool string, addrs ...string) *cachenodes.SlotMap {
	t.Helper()
	spec := cachenodes.SlotMapSpec{Pool: pool, Generation: 1}
	for i, a := range addrs {
		n := cachenodes.Node{}
		if a != "" {
			n = cachenodes.Node{ID: fmt.Sprintf("mc-%d", i), Addr: a}
		}
		spec.Slots = append(spec.Slots, n)
	}
	m, err := cachenodes.NewSlotMap(spec)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestTwemproxyConfig(t *testing.T) {
	tests := []struct {
		name    string
		m       *cachenodes.SlotMap
		listen  string
		want    string
		wantErr string
	}{
		{name: "default listen, a vacant slot, a host name",
			m: poolMap(t, "default", "10.0.0.1:11211", "", "10.0.0.3:11211", "cache-4.example:11211"),
			want: twemproxyHeader + `default:
  listen: 127.0.0.1:22121
  hash: crc32a
  distribution: modula
  auto_eject_hosts: false
  redis: false
  servers:
    - 10.0.0.1:11211:1 slot0000
    - 127.0.0.1:1:1 slot0001
    - 10.0.0.3:11211:1 slot0002
    - cache-4.example:11211:1 slot0003
`},
		{name: "given listen, one slot",
			m: poolMap(t, "default", "10.0.0.1:11211"), listen: "0.0.0.0:22122",
			want: twemproxyHeader + `default:
  listen: 0.0.0.0:22122
  hash: crc32a
  distribution: modula
  auto_eject_hosts: false
  redis: false
  servers:
    - 10.0.0.1:11211:1 slot0000
`},
		{name: "every slot vacant, an IPv6 node without brackets",
			m: poolMap(t, "default", "", "[::1]:11211"),
			want: twemproxyHeader + `default:
  listen: 127.0.0.1:22121
  hash: crc32a
  distribution: modula
  auto_eject_hosts: false
  redis: false
  servers:
    - 127.0.0.1:1:1 slot0000
    - ::1:11211:1 slot0001
`},
		{name: "a pool name YAML must quote",
			m: poolMap(t, "payments: east", "10.0.0.1:11211"),
			want: `# Written by mcrib for pool "payments: east": one server per slot, in slot order.
# mcrib replaces this file whenever the slot map changes; nutcracker reads it
# only at start, so restart nutcracker to apply it. Do not edit by hand.
"payments: east":
  listen: 127.0.0.1:22121
  hash: crc32a
  distribution: modula
  auto_eject_hosts: false
  redis: false
  servers:
    - 10.0.0.1:11211:1 slot0000
`},
		{name: "an address without a port",
			m: poolMap(t, "default", "10.0.0.1:11211", "10.0.0.2"), wantErr: `node "mc-1" of slot 1 has address "10.0.0.2"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := TwemproxyConfig(tt.m, tt.listen)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("TwemproxyConfig error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("TwemproxyConfig\n got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// TestTwemproxyServerNamesSortInSlotOrder checks, for the largest slot
// count, that nutcracker's sort of the servers by name (length, then
// bytes: string_compare in src/nc_string.c) leaves them in slot order, and
// that no two names are equal.
func TestTwemproxyServerNamesSortInSlotOrder(t *testing.T) {
	addrs := make([]string, 4096)
	for i := range addrs {
		if i%7 != 3 { // every seventh slot vacant
			addrs[i] = fmt.Sprintf("10.0.%d.%d:11211", i/256, i%256)
		}
	}
	data, err := TwemproxyConfig(poolMap(t, "default", addrs...), "")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "    - ") {
			names = append(names, line[strings.LastIndexByte(line, ' ')+1:])
		}
	}
	if len(names) != len(addrs) {
		t.Fatalf("%d servers written, want %d", len(names), len(addrs))
	}
	sorted := slices.SortedFunc(slices.Values(names), func(a, b string) int {
		if len(a) != len(b) {
			return len(a) - len(b)
		}
		return strings.Compare(a, b)
	})
	if !slices.Equal(sorted, names) {
		t.Errorf("nutcracker would reorder the servers: first names %v", names[:5])
	}
	if len(slices.Compact(sorted)) != len(names) {
		t.Errorf("two servers share a name")
	}
}

// TestTwemproxyConfigNutcrackerAccepts runs `nutcracker -t` over rendered
// configs: vacant slots sharing an address, a quoted pool name, 4096
// slots.
func TestTwemproxyConfigNutcrackerAccepts(t *testing.T) {
	big := make([]string, 4096)
	for i := range big {
		if i%2 == 0 {
			big[i] = fmt.Sprintf("10.1.%d.%d:11211", i/256, i%256)
		}
	}
	for _, m := range []*cachenodes.SlotMap{
		poolMap(t, "default", "127.0.0.1:11211", "", "", "127.0.0.1:11214"),
		poolMap(t, "payments: east", "127.0.0.1:11211"),
		poolMap(t, "default", big...),
	} {
		data, err := TwemproxyConfig(m, "")
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "nutcracker.yml")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := testenv.CheckNutcrackerConfig(t, path); err != nil {
			t.Errorf("pool %q, %d slots: %v", m.Pool(), m.NumSlots(), err)
		}
	}
}

// TestTwemproxyConfigSwitchesAtOnce checks that a warming slot is written
// with its new holder only: twemproxy cannot warm, so its config switches
// at once and the warm source appears nowhere.
func TestTwemproxyConfigSwitchesAtOnce(t *testing.T) {
	addrs := []string{"10.0.0.1:11211", "", "10.0.0.7:11211"}
	warming := warmingMap(t, map[int]string{2: "10.0.1.2:11211"}, "default", addrs...)
	got, err := TwemproxyConfig(warming, "")
	if err != nil {
		t.Fatal(err)
	}
	want, err := TwemproxyConfig(poolMap(t, "default", addrs...), "")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("a warming map renders\n%s\nwant the holders only\n%s", got, want)
	}
	if strings.Contains(string(got), "10.0.1.2") || !strings.Contains(string(got), "- 10.0.0.7:11211:1 slot0002") {
		t.Fatalf("slot 2 is not written with its new holder only:\n%s", got)
	}
}
