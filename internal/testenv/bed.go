package testenv

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// maxHostsPerBed is how many hosts a bed's /24 holds: .1 is the bridge,
// .2 to .254 are hosts.
const maxHostsPerBed = 253

// hostNameRE is what a host name may look like: it becomes part of a
// network namespace name and a Consul node name.
var hostNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,30}$`)

// Bed is a test bed of hosts: a Linux bridge in the root network namespace
// with an address in the bed's own /24 of 198.18.0.0/15 (the RFC 2544
// benchmarking range), and one network namespace per host, each joined to
// the bridge by a veth pair and holding one address of the /24. The test
// binary reaches every host through the bridge; hosts reach each other and
// the bridge address, and nothing else (they have no default route).
//
// Each bed takes a /24 that no other live bed on the machine holds (see
// lockBed), so tests in other processes can run beds at the same time. Its
// bridge, veth pairs and namespaces are removed when the test ends, also
// when it fails; NewBed also removes what dead earlier runs left behind.
//
// The zero value is not usable; use NewBed. Methods are safe for concurrent
// use.
type Bed struct {
	// Addr is the bridge's address in the root namespace, e.g.
	// "198.18.7.1": the address the hosts see the test binary at.
	Addr string

	ip     string // path of the ip binary
	index  int    // which /24 of 198.18.0.0/15
	prefix netip.Prefix
	root   *Host

	mu    sync.Mutex
	hosts []*Host
}

// NewBed creates a bed with no hosts: it takes a free /24, creates the
// bridge and gives it the /24's first address. It skips the test under
// -short (see SkipShort); without root or without ip it skips the test
// too, or fails it when the environment variable CI is set. Everything the
// bed creates is removed when the test ends.
func NewBed(t testing.TB) *Bed {
	t.Helper()
	SkipShort(t, "a test bed of hosts (network namespaces)")
	requireRoot(t)
	ip := ipBinary(t)
	if err := sweepDeadBeds(ip); err != nil {
		t.Logf("testenv: removing leftovers of dead test beds: %v", err)
	}
	index, lock, err := lockBed()
	if err != nil {
		t.Fatalf("testenv: taking a test bed network: %v", err)
	}
	b := &Bed{ip: ip, index: index, prefix: bedPrefix(index)}
	b.Addr = b.hostAddr(1)
	b.root = &Host{Name: "root", Addr: b.Addr, bed: b}
	t.Cleanup(func() {
		err := purgeBed(ip, index)
		lock.Close() // releases the lock: only after the purge
		if err != nil {
			t.Errorf("testenv: removing test bed %s: %v", b.prefix, err)
		}
	})
	// Leftovers of a dead run that held this /24 (the lock is ours now).
	if err := purgeBed(ip, index); err != nil {
		t.Fatalf("testenv: removing leftovers of test bed %s: %v", b.prefix, err)
	}
	bridge := bridgeName(index)
	err = runIPBatch(ip, nil, []string{
		"link add " + bridge + " type bridge forward_delay 0",
		fmt.Sprintf("addr add %s/24 dev %s", b.Addr, bridge),
		"link set " + bridge + " up",
	})
	if err != nil {
		if strings.Contains(err.Error(), "Operation not permitted") {
			missing(t, "creating a bridge is not permitted here: %v", err)
		}
		t.Fatalf("testenv: creating the bridge of test bed %s: %v", b.prefix, err)
	}
	return b
}

// Root returns the host that stands for the root network namespace: the
// test binary's own, at the bridge address Addr. Processes started on it
// run in the root namespace, so they are not cut off by any host's faults.
// Cut and Heal fail the test on it.
func (b *Bed) Root() *Host { return b.root }

// Prefix returns the bed's /24, e.g. 198.18.7.0/24.
func (b *Bed) Prefix() netip.Prefix { return b.prefix }

// AddHost creates a host named name (lower-case letters, digits and dashes,
// up to 31 characters, unique in the bed): a network namespace with
// loopback up and an interface eth0 holding the next free address of the
// bed's /24, joined to the bridge. The host is removed with the bed.
func (b *Bed) AddHost(t testing.TB, name string) *Host {
	t.Helper()
	if !hostNameRE.MatchString(name) {
		t.Fatalf("testenv: host name %q is not lower-case letters, digits and dashes (at most 31)", name)
		return nil
	}
	b.mu.Lock()
	i := len(b.hosts)
	for _, h := range b.hosts {
		if h.Name == name {
			b.mu.Unlock()
			t.Fatalf("testenv: the bed already has a host named %q", name)
			return nil
		}
	}
	if i >= maxHostsPerBed {
		b.mu.Unlock()
		t.Fatalf("testenv: a bed holds at most %d hosts", maxHostsPerBed)
		return nil
	}
	h := &Host{
		Name:  name,
		Addr:  b.hostAddr(2 + i),
		NetNS: netnsName(b.index, name),
		bed:   b,
		link:  vethName(b.index, i),
	}
	b.hosts = append(b.hosts, h)
	b.mu.Unlock()

	err := runIPBatch(b.ip, nil, []string{
		"netns add " + h.NetNS,
		"link add " + h.link + " type veth peer name eth0 netns " + h.NetNS,
		"link set " + h.link + " master " + bridgeName(b.index) + " up",
	})
	if err == nil {
		err = runIPBatch(b.ip, []string{"-n", h.NetNS}, []string{
			fmt.Sprintf("addr add %s/24 dev eth0", h.Addr),
			"link set eth0 up",
			"link set lo up",
		})
	}
	if err != nil {
		t.Fatalf("testenv: creating host %s: %v", name, err)
		return nil
	}
	return h
}

// Hosts returns the bed's hosts in the order they were added (Root not
// included).
func (b *Bed) Hosts() []*Host {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*Host(nil), b.hosts...)
}

// hostAddr returns the address with last byte n in the bed's /24.
func (b *Bed) hostAddr(n int) string {
	a := b.prefix.Addr().As4()
	a[3] = byte(n)
	return netip.AddrFrom4(a).String()
}

// contains reports whether addr is an IPv4 address in the bed's /24.
func (b *Bed) contains(addr string) bool {
	a, err := netip.ParseAddr(addr)
	return err == nil && b.prefix.Contains(a)
}

// bedPrefix returns the index-th /24 of 198.18.0.0/15.
func bedPrefix(index int) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 18 + byte(index/256), byte(index % 256), 0}), 24)
}
