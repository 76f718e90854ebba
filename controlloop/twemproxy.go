package controlloop

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"

	"github.com/mcrib/mcrib/cachenodes"
)

// DefaultTwemproxyListen is the listen address written into the twemproxy
// pool when Options.TwemproxyListen is empty (docs/cli.md).
const DefaultTwemproxyListen = "127.0.0.1:22121"

// plainYAML matches a pool name that YAML reads as itself without quotes.
var plainYAML = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)

// TwemproxyConfig returns the twemproxy (nutcracker) YAML config for m: one
// pool named after m's pool, listening on listen, with `hash: crc32a`,
// `distribution: modula` and `auto_eject_hosts: false`, and one server per
// slot in slot order, so nutcracker sends a key where cachenodes.KeySlot
// does (crc32a % the number of servers) and never moves keys of a failed
// server to the others. A vacant slot is written as VacantServer, where
// nothing listens: its keys fail fast and are never rehashed.
//
// Each server is written as "host:port:1 slotNNNN". The name matters:
// nutcracker sorts a pool's servers by name before it lays them on the
// modula continuum (conf_validate_server in src/nc_conf.c sorts with
// conf_server_name_cmp, which compares length, then bytes), and an unnamed
// server is named by its address. Names of one width in slot order keep
// the servers in slot order whatever their addresses, keep the name of a
// slot the same when its node changes, and let the vacant slots share one
// address (nutcracker refuses two servers with one name, not one address).
// An IPv6 host is written without brackets, as nutcracker splits
// "host:port:weight" from the right.
func TwemproxyConfig(m *cachenodes.SlotMap, listen string) ([]byte, error) {
	if listen == "" {
		listen = DefaultTwemproxyListen
	}
	n := m.NumSlots()
	width := max(4, len(strconv.Itoa(n-1)))
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by mcrib for pool %s: one server per slot, in slot order.\n", strconv.Quote(m.Pool()))
	b.WriteString("# mcrib replaces this file whenever the slot map changes; nutcracker reads it\n")
	b.WriteString("# only at start, so restart nutcracker to apply it. Do not edit by hand.\n")
	fmt.Fprintf(&b, "%s:\n", yamlKey(m.Pool()))
	fmt.Fprintf(&b, "  listen: %s\n", listen)
	b.WriteString("  hash: crc32a\n")
	b.WriteString("  distribution: modula\n")
	b.WriteString("  auto_eject_hosts: false\n")
	b.WriteString("  redis: false\n")
	b.WriteString("  servers:\n")
	for i, node := range m.Slots() {
		addr := node.Addr
		if node.IsZero() {
			addr = VacantServer
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("rendering the twemproxy config: node %q of slot %d has address %q: %w", node.ID, i, addr, err)
		}
		fmt.Fprintf(&b, "    - %s:%s:1 slot%0*d\n", host, port, width, i)
	}
	return []byte(b.String()), nil
}

// yamlKey returns name as a YAML mapping key: plain when it reads as
// itself, else double-quoted.
func yamlKey(name string) string {
	if plainYAML.MatchString(name) {
		return name
	}
	return strconv.Quote(name)
}

// writeTwemproxyConfig keeps the twemproxy config of opts in step with m,
// when one is configured (see writeConfig).
func (o *outputs) writeTwemproxyConfig(opts Options, m *cachenodes.SlotMap) {
	o.writeConfig(opts, ConfigTwemproxy, opts.TwemproxyConfig, m, func(m *cachenodes.SlotMap) ([]byte, error) {
		return TwemproxyConfig(m, opts.TwemproxyListen)
	})
}
