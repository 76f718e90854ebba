package testenv

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// memcachedReadyTimeout bounds how long StartMemcached waits for an answer.
const memcachedReadyTimeout = 20 * time.Second

// memcachedHostPort is the port of memcached on a host of a test bed:
// memcached's default, as the host's namespace has all its ports free.
const memcachedHostPort = 11211

// Memcached is a memcached process listening on 127.0.0.1, or on the
// address of a host of a test bed. Its zero value is not usable; use
// StartMemcached or StartMemcachedOn. Methods are safe for concurrent use,
// but Kill, Start, Pause and Resume must not race with each other.
type Memcached struct {
	// Addr is "<IP>:<Port>".
	Addr string
	// IP is the address memcached listens on: "127.0.0.1", or its host's
	// Addr.
	IP string
	// Port is the TCP port memcached listens on; it stays the same across
	// Kill and Start.
	Port int

	bin  string
	proc *process
}

// StartMemcached starts `memcached -l 127.0.0.1 -p <free port> -U 0 -m 64 -t 2`
// (plus `-u root` when running as root) and waits until it answers the
// `version` command. The process is killed when the test ends.
func StartMemcached(t testing.TB) *Memcached {
	t.Helper()
	return startMemcached(t, nil, 0)
}

// StartMemcachedOn starts memcached like StartMemcached, on host h of a
// test bed: listening on h.Addr, port 11211 when h is a host of its own, or
// a free port on Bed.Root.
func StartMemcachedOn(t testing.TB, h *Host) *Memcached {
	t.Helper()
	return startMemcached(t, h, 0)
}

// StartMemcachedOnPort starts memcached like StartMemcachedOn, on host h of
// a test bed (not Bed.Root) at the given port: for several memcached on one
// host, each on a port of its own.
func StartMemcachedOnPort(t testing.TB, h *Host, port int) *Memcached {
	t.Helper()
	if h == nil || h.NetNS == "" || port <= 0 || port > 65535 {
		t.Fatalf("testenv: StartMemcachedOnPort needs a host of its own and a port from 1 to 65535, not %d", port)
		return nil
	}
	return startMemcached(t, h, port)
}

// startMemcached starts memcached on h, or on 127.0.0.1 when h is nil, at
// port when above 0 (a host of its own only).
func startMemcached(t testing.TB, h *Host, port int) *Memcached {
	t.Helper()
	m := &Memcached{bin: MemcachedBinary(t), IP: "127.0.0.1"}
	name := "memcached"
	if h != nil {
		m.IP = h.Addr
		name += " on " + h.Name
	}
	m.proc = newProcess(t, name)
	if h != nil {
		m.proc.prefix = h.execPrefix()
	}
	var err error
	for attempt := 0; attempt < startAttempts(h); attempt++ {
		if port > 0 {
			m.Port = port
		} else if h != nil && h.NetNS != "" {
			m.Port = memcachedHostPort
		} else {
			ports, perr := freePorts(m.IP, 1, false)
			if perr != nil {
				t.Fatalf("testenv: finding a port for memcached: %v", perr)
			}
			m.Port = ports[0]
		}
		m.Addr = net.JoinHostPort(m.IP, strconv.Itoa(m.Port))
		if err = m.start(); err == nil {
			return m
		}
		if !errors.Is(err, errExited) {
			break
		}
		// Most likely the port was taken between FreePort and bind: retry.
	}
	t.Fatalf("testenv: starting memcached: %v\n%s", err, m.proc.tail(20))
	return nil
}

// start runs memcached on m.Port and waits until it answers.
func (m *Memcached) start() error {
	args := []string{"-l", m.IP, "-p", strconv.Itoa(m.Port), "-U", "0", "-m", "64", "-t", "2"}
	if os.Geteuid() == 0 {
		args = append(args, "-u", "root")
	}
	if err := m.proc.start(m.bin, args...); err != nil {
		return err
	}
	return m.proc.waitReady(memcachedReadyTimeout, 10*time.Millisecond, func() bool {
		return memcachedVersion(m.Addr, 500*time.Millisecond) == nil
	})
}

// Start starts memcached again on the same port after Kill, and waits until
// it answers. The cache is empty again.
func (m *Memcached) Start(t testing.TB) {
	t.Helper()
	if err := m.start(); err != nil {
		t.Fatalf("testenv: restarting memcached on %s: %v\n%s", m.Addr, err, m.proc.tail(20))
	}
}

// Kill sends SIGKILL to memcached and waits for it to exit.
func (m *Memcached) Kill(t testing.TB) {
	t.Helper()
	if err := m.proc.stop(syscall.SIGKILL); err != nil {
		t.Fatalf("testenv: killing memcached on %s: %v", m.Addr, err)
	}
}

// Pause sends SIGSTOP to memcached: connections are still accepted by the
// kernel, but nothing answers until Resume.
func (m *Memcached) Pause(t testing.TB) {
	t.Helper()
	if err := m.proc.signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("testenv: pausing memcached on %s: %v", m.Addr, err)
	}
}

// Resume sends SIGCONT to memcached after Pause.
func (m *Memcached) Resume(t testing.TB) {
	t.Helper()
	if err := m.proc.signal(syscall.SIGCONT); err != nil {
		t.Fatalf("testenv: resuming memcached on %s: %v", m.Addr, err)
	}
}

// PID returns the process ID of memcached, or 0 when it is not running.
func (m *Memcached) PID() int { return m.proc.pid() }

// memcachedVersion sends the `version` command to addr and checks the answer,
// all within timeout.
func memcachedVersion(addr string, timeout time.Duration) error {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(timeout))
	if _, err := conn.Write([]byte("version\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "VERSION ") {
		return fmt.Errorf("testenv: unexpected answer to version from %s: %q", addr, line)
	}
	return nil
}
