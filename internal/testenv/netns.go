package testenv

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// inNetNS runs f on a fresh OS thread that has entered the host's network
// namespace, so sockets f opens belong to the host (and stay there whatever
// thread uses them later). The thread is never unlocked, so the Go runtime
// discards it when f returns instead of running other goroutines in the
// host's namespace. On Bed.Root, f runs on the caller's goroutine.
func (h *Host) inNetNS(f func()) error {
	if h.NetNS == "" {
		f()
		return nil
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: see above
		path := filepath.Join(netnsDir, h.NetNS)
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			errc <- fmt.Errorf("opening %s: %w", path, err)
			return
		}
		err = unix.Setns(fd, unix.CLONE_NEWNET)
		syscall.Close(fd)
		if err != nil {
			errc <- fmt.Errorf("entering network namespace %s: %w", h.NetNS, err)
			return
		}
		f()
		errc <- nil
	}()
	return <-errc
}

// DialTimeout opens a TCP connection from the host to addr ("ip:port"),
// giving up after timeout: a connection as a process on the host would
// open it, subject to the host's faults.
func (h *Host) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	var conn net.Conn
	var err error
	if nsErr := h.inNetNS(func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		conn, err = (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	}); nsErr != nil {
		return nil, nsErr
	}
	return conn, err
}

// Listen opens a TCP listener on the host at addr (":0" or "ip:port"; ""
// means Addr on a port the kernel picks), closed when the test ends.
func (h *Host) Listen(t testing.TB, addr string) net.Listener {
	t.Helper()
	if addr == "" {
		addr = net.JoinHostPort(h.Addr, "0")
	}
	var ln net.Listener
	var err error
	if nsErr := h.inNetNS(func() { ln, err = net.Listen("tcp", addr) }); nsErr != nil {
		err = nsErr
	}
	if err != nil {
		t.Fatalf("testenv: listening on %s on host %s: %v", addr, h.Name, err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}
