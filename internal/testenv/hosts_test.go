package testenv

import (
	"errors"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Dial timeouts of the bed tests: long enough for a loaded machine when a
// connection is expected, short when it is not.
const (
	reachTimeout   = 2 * time.Second
	unreachTimeout = 300 * time.Millisecond
)

// dial opens and closes a TCP connection from from to addr.
func dial(from *Host, addr string, timeout time.Duration) error {
	conn, err := from.DialTimeout(addr, timeout)
	if err != nil {
		return err
	}
	return conn.Close()
}

// mustReach fails the test unless from reaches addr within 5s.
func mustReach(t *testing.T, from *Host, addr string) {
	t.Helper()
	var err error
	Eventually(t, 5*time.Second, from.Name+" reaches "+addr, func() bool {
		err = dial(from, addr, reachTimeout)
		return err == nil
	})
}

// mustNotReach fails the test when from reaches addr, and returns the error.
func mustNotReach(t *testing.T, from *Host, addr string) error {
	t.Helper()
	err := dial(from, addr, unreachTimeout)
	if err == nil {
		t.Fatalf("%s reaches %s; want it cut off", from.Name, addr)
	}
	return err
}

// mustAddr parses s as an IP address.
func mustAddr(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatalf("parsing address %q: %v", s, err)
	}
	return a
}

// isTimeout reports whether err is a net.Error that timed out.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestBedReachability(t *testing.T) {
	start := time.Now()
	bed := NewBed(t)
	a, b, c := bed.AddHost(t, "a"), bed.AddHost(t, "b"), bed.AddHost(t, "c")
	t.Logf("a bed with three hosts took %v", time.Since(start))
	if !bed.Prefix().Contains(mustAddr(t, bed.Addr)) || a.Addr == b.Addr || b.Addr == c.Addr || a.Addr == c.Addr {
		t.Fatalf("addresses bridge %s, a %s, b %s, c %s: want distinct ones in %s", bed.Addr, a.Addr, b.Addr, c.Addr, bed.Prefix())
	}
	for _, h := range []*Host{a, b, c} {
		if !bed.Prefix().Contains(mustAddr(t, h.Addr)) || len(h.NetNS) == 0 {
			t.Errorf("host %s: address %s, namespace %q; want an address in %s and a namespace", h.Name, h.Addr, h.NetNS, bed.Prefix())
		}
	}
	root := bed.Root()
	lnRoot := root.Listen(t, "")
	lnA, lnB := a.Listen(t, ""), b.Listen(t, "")
	mustReach(t, root, lnA.Addr().String())
	mustReach(t, root, lnB.Addr().String())
	mustReach(t, a, lnB.Addr().String())
	mustReach(t, b, lnA.Addr().String())
	mustReach(t, c, lnRoot.Addr().String())
	mustReach(t, a, lnA.Addr().String())

	// A host has no route out of the bed (203.0.113.1 is TEST-NET-3; the
	// route lookup sends nothing).
	out, err := a.Command("ip", "route", "get", "203.0.113.1").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "unreachable") {
		t.Errorf("route from a to 203.0.113.1: %v, %s; want unreachable", err, out)
	}
	// Command runs in the host's namespace.
	out, err = b.Command("ip", "-o", "-4", "addr", "show", "dev", "eth0").CombinedOutput()
	if err != nil || !strings.Contains(string(out), b.Addr+"/24") {
		t.Errorf("b's eth0: %v, %s; want %s/24", err, out, b.Addr)
	}

	other := NewBed(t)
	if other.Prefix() == bed.Prefix() {
		t.Errorf("two live beds share %s", bed.Prefix())
	}
	if _, dup := captureFatal(func(tb *fakeTB) { bed.AddHost(tb, "a") }); !dup {
		t.Errorf("AddHost with a taken name did not fail")
	}
	if _, bad := captureFatal(func(tb *fakeTB) { bed.AddHost(tb, "Bad_Name") }); !bad {
		t.Errorf("AddHost with an invalid name did not fail")
	}
}

func TestBedCutHeal(t *testing.T) {
	bed := NewBed(t)
	a, b := bed.AddHost(t, "a"), bed.AddHost(t, "b")
	root := bed.Root()
	lnB := b.Listen(t, "").Addr().String()
	lnA := a.Listen(t, "").Addr().String()
	mustReach(t, root, lnB)
	mustReach(t, a, lnB)

	b.Cut(t)
	if err := mustNotReach(t, root, lnB); !isTimeout(err) {
		t.Errorf("root to cut b: %v, want a timeout", err)
	}
	mustNotReach(t, a, lnB)
	mustNotReach(t, b, lnA)
	// A cut host still reaches itself, on its own address too.
	mustReach(t, b, lnB)
	mustReach(t, a, lnA)

	b.Heal(t)
	mustReach(t, root, lnB)
	mustReach(t, a, lnB)
	mustReach(t, b, lnA)

	if _, failed := captureFatal(func(tb *fakeTB) { root.Cut(tb) }); !failed {
		t.Errorf("Cut of the root namespace did not fail")
	}
}

func TestBedBlackholeAndDrop(t *testing.T) {
	bed := NewBed(t)
	a, b, c := bed.AddHost(t, "a"), bed.AddHost(t, "b"), bed.AddHost(t, "c")
	root := bed.Root()
	lnA := a.Listen(t, "").Addr().String()
	lnB := b.Listen(t, "").Addr().String()
	lnC := c.Listen(t, "").Addr().String()
	mustReach(t, a, lnB)

	a.Blackhole(t, b.Addr)
	if err := mustNotReach(t, a, lnB); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("a to blackholed b: %v, want EINVAL at once", err)
	}
	if err := mustNotReach(t, b, lnA); !isTimeout(err) {
		t.Errorf("b to a, which blackholed b: %v, want a timeout", err)
	}
	mustReach(t, a, lnC)
	mustReach(t, root, lnB)
	mustReach(t, c, lnB)
	a.Unblackhole(t, b.Addr)
	mustReach(t, a, lnB)

	a.Drop(t, b.Addr)
	if err := mustNotReach(t, a, lnB); !isTimeout(err) {
		t.Errorf("a to dropped b: %v, want a timeout", err)
	}
	if err := mustNotReach(t, b, lnA); !isTimeout(err) {
		t.Errorf("b to a, which drops b: %v, want a timeout", err)
	}
	mustReach(t, a, lnC)
	mustReach(t, root, lnB)
	mustReach(t, c, lnB)
	a.Undrop(t, b.Addr)
	mustReach(t, a, lnB)

	for _, addr := range []string{a.Addr, "192.0.2.1", "not-an-ip"} {
		if _, failed := captureFatal(func(tb *fakeTB) { a.Blackhole(tb, addr) }); !failed {
			t.Errorf("Blackhole(%q) did not fail; only other addresses of the bed are allowed", addr)
		}
	}
}

// captureFatal runs f with a fakeTB and reports the first Fatalf message and
// whether there was one. The fakeTB's Fatalf returns, so the helpers must
// return after it.
func captureFatal(f func(tb *fakeTB)) (string, bool) {
	tb := &fakeTB{}
	f(tb)
	if len(tb.fatals) == 0 {
		return "", false
	}
	return tb.fatals[0], true
}

// ipOutput runs ip with args in the root namespace and returns its output.
func ipOutput(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(ipBinary(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
