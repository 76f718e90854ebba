package testenv

import (
	"os/exec"
	"testing"
)

// dropMAC is the link-layer address Drop points a neighbour entry at: a
// locally administered unicast address that no interface of a bed has, so
// frames sent to it are flooded by the bridge and accepted by nobody.
const dropMAC = "02:00:00:de:ad:00"

// Host is one host of a Bed: a network namespace with loopback and one
// interface, eth0, holding Addr, linked to the bed's bridge. A process
// started on a host has its own ports (a fresh namespace has none taken),
// reaches the other hosts and the bridge address, and can be cut off by the
// faults below. Bed.Root returns a Host for the root namespace instead.
//
// Hosts are made by Bed.AddHost; the zero value is not usable. Methods are
// safe for concurrent use, but the faults of one host must not race with
// each other.
type Host struct {
	// Name is the host's name in the test, e.g. "mc1"; processes started by
	// this package on it use it as their Consul node name.
	Name string
	// Addr is the host's IPv4 address, e.g. "198.18.7.2".
	Addr string
	// NetNS is the name of the host's network namespace (as in `ip netns
	// list`), or "" for Bed.Root.
	NetNS string

	bed  *Bed
	link string // root-side veth name; "" for Bed.Root
}

// Command returns a command that runs name with args on the host: through
// `ip netns exec <NetNS>`, which execs name in place, so the command's
// process is name itself once started. On Bed.Root it is a plain command.
// The caller starts it and must kill it before the test ends; StartProcess
// does that for you.
func (h *Host) Command(name string, args ...string) *exec.Cmd {
	p := h.execPrefix()
	if p == nil {
		return exec.Command(name, args...)
	}
	return exec.Command(p[0], append(append(p[1:], name), args...)...)
}

// execPrefix returns the command line that runs a program on the host when
// the program and its arguments are appended, or nil on Bed.Root.
func (h *Host) execPrefix() []string {
	if h.NetNS == "" {
		return nil
	}
	return []string{h.bed.ip, "netns", "exec", h.NetNS}
}

// Cut takes the host's link to the bridge down, like a pulled cable: no
// packet leaves or reaches the host (connections time out; the host's own
// processes still reach each other, on Addr too). It fails on Bed.Root.
func (h *Host) Cut(t testing.TB) {
	t.Helper()
	h.setLink(t, "down")
}

// Heal brings the host's link up again after Cut.
func (h *Host) Heal(t testing.TB) {
	t.Helper()
	h.setLink(t, "up")
}

func (h *Host) setLink(t testing.TB, state string) {
	t.Helper()
	if h.link == "" {
		t.Fatalf("testenv: the root namespace of a bed cannot be cut")
		return
	}
	if err := runIP(h.bed.ip, "link", "set", h.link, state); err != nil {
		t.Fatalf("testenv: setting the link of host %s %s: %v", h.Name, state, err)
	}
}

// Blackhole adds a blackhole route to addr (an address of the bed) on the
// host: a partial partition between the host and addr, seen by the host
// alone. The host's own connects and sends to addr fail at once (the kernel
// answers EINVAL); packets from addr still arrive, but the host's replies
// are discarded, so addr's connections to the host time out. Other hosts
// and the root namespace still reach addr. Use Drop for a partition where
// the host's side times out too.
func (h *Host) Blackhole(t testing.TB, addr string) {
	t.Helper()
	h.route(t, "add", addr)
}

// Unblackhole removes the route Blackhole added.
func (h *Host) Unblackhole(t testing.TB, addr string) {
	t.Helper()
	h.route(t, "del", addr)
}

func (h *Host) route(t testing.TB, verb, addr string) {
	t.Helper()
	if !h.checkAddr(t, addr) {
		return
	}
	if err := runIP(h.bed.ip, h.ipArgs("route", verb, "blackhole", addr+"/32")...); err != nil {
		t.Fatalf("testenv: blackhole route to %s on host %s: %v", addr, h.Name, err)
	}
}

// Drop makes the host send everything for addr (an address of the bed) to
// a link-layer address nobody has, by a permanent neighbour entry: every
// packet the host sends to addr is lost on the wire without an error, like
// a silent partition. The host's connections to addr time out; addr's
// packets still reach the host, but the host's replies are lost, so addr's
// connections to the host time out too (one-way datagrams from addr still
// arrive). Other hosts and the root namespace still reach addr.
func (h *Host) Drop(t testing.TB, addr string) {
	t.Helper()
	if !h.checkAddr(t, addr) {
		return
	}
	args := h.ipArgs("neigh", "replace", addr, "lladdr", dropMAC, "dev", h.dev(), "nud", "permanent")
	if err := runIP(h.bed.ip, args...); err != nil {
		t.Fatalf("testenv: dropping traffic to %s on host %s: %v", addr, h.Name, err)
	}
}

// Undrop removes the neighbour entry Drop added; the host resolves addr
// again on its next packet.
func (h *Host) Undrop(t testing.TB, addr string) {
	t.Helper()
	if !h.checkAddr(t, addr) {
		return
	}
	if err := runIP(h.bed.ip, h.ipArgs("neigh", "del", addr, "dev", h.dev())...); err != nil {
		t.Fatalf("testenv: undoing Drop of %s on host %s: %v", addr, h.Name, err)
	}
}

// checkAddr fails the test unless addr is an address of the bed other than
// the host's own: faults never touch anything outside the bed.
func (h *Host) checkAddr(t testing.TB, addr string) bool {
	t.Helper()
	if !h.bed.contains(addr) || addr == h.Addr {
		t.Fatalf("testenv: %q is not another address of test bed %s", addr, h.bed.prefix)
		return false
	}
	return true
}

// ipArgs returns args for ip, run in the host's namespace.
func (h *Host) ipArgs(args ...string) []string {
	if h.NetNS == "" {
		return args
	}
	return append([]string{"-n", h.NetNS}, args...)
}

// dev returns the host's interface on the bed's network.
func (h *Host) dev() string {
	if h.NetNS == "" {
		return bridgeName(h.bed.index)
	}
	return "eth0"
}
