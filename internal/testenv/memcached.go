package testenv

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// memcachedReadyTimeout bounds how long StartMemcached waits for an answer.
const memcachedReadyTimeout = 20 * time.Second

// memcachedHostPort is the port of memcached on a host of a test bed:
// memcached's default, as the host's namespace has all its ports free.
const memcachedHostPort = 11211

// Memcached is a memcached process listening on 127.0.0.1, or on the
// address of a host of a test bed: its Process handle (Kill, Start, Pause,
// Resume, PID, …; Start waits until it answers again, with an empty cache)
// and its address. Its zero value is not usable; use StartMemcached or
// StartMemcachedOn. Methods are safe for concurrent use, but Kill, Start,
// Pause and Resume must not race with each other.
type Memcached struct {
	*Process
	// Addr is "<IP>:<Port>".
	Addr string
	// IP is the address memcached listens on: "127.0.0.1", or its host's
	// Addr.
	IP string
	// Port is the TCP port memcached listens on; it stays the same across
	// Kill and Start.
	Port int
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
	m := &Memcached{IP: "127.0.0.1"}
	name := "memcached"
	if h != nil {
		m.IP = h.Addr
		name += " on " + h.Name
	}
	m.Process = newProcess(t, name, MemcachedBinary(t))
	if h != nil {
		m.prefix = h.execPrefix()
	}
	m.ready, m.readyTimeout, m.readyInterval = m.answers, memcachedReadyTimeout, 10*time.Millisecond
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
		args := []string{"-l", m.IP, "-p", strconv.Itoa(m.Port), "-U", "0", "-m", "64", "-t", "2"}
		if os.Geteuid() == 0 {
			args = append(args, "-u", "root")
		}
		m.setArgs(args...)
		if err = m.launch(); err == nil {
			return m
		}
		if !errors.Is(err, errExited) {
			break
		}
		// Most likely the port was taken between FreePort and bind: retry.
	}
	t.Fatalf("testenv: starting memcached: %v\n%s", err, m.tail(20))
	return nil
}

// answers reports whether memcached answers the version command.
func (m *Memcached) answers() bool {
	return memcachedVersion(m.Addr, 500*time.Millisecond) == nil
}

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
