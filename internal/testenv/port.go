package testenv

import (
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"testing"
)

// portLow and portHigh bound the ports FreePort hands out: below Linux's
// default ephemeral range (32768-60999) and above the well-known services.
const (
	portLow  = 20000
	portHigh = 32000
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago. The
// port is not reserved: another process may take it before the caller binds
// it, which the process starters in this package detect and retry.
//
// Ports come from below the kernel's ephemeral range (see portLow and
// portHigh), so the outgoing connections of every other test cannot take
// a port while a process is restarted on it.
func FreePort(t testing.TB) int {
	t.Helper()
	ports, err := freePorts("127.0.0.1", 1, false)
	if err != nil {
		t.Fatalf("testenv: finding a free port: %v", err)
	}
	return ports[0]
}

// freePorts returns n distinct ports that are free for TCP (and for UDP too
// when udp is set, as Serf needs both) on ip. All candidate sockets are held
// open until the end, so the ports are distinct.
func freePorts(ip string, n int, udp bool) ([]int, error) {
	var closers []func() error
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	ports := make([]int, 0, n)
	for attempts := 0; len(ports) < n; attempts++ {
		if attempts > 200*n {
			return nil, errNoFreePort
		}
		port := portLow + rand.IntN(portHigh-portLow)
		if slices.Contains(ports, port) {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err != nil {
			continue // taken; try another port.
		}
		closers = append(closers, l.Close)
		if udp {
			pc, err := net.ListenPacket("udp", net.JoinHostPort(ip, strconv.Itoa(port)))
			if err != nil {
				continue // UDP side taken; try another port.
			}
			closers = append(closers, pc.Close)
		}
		ports = append(ports, port)
	}
	return ports, nil
}
