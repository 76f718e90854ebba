package mcclient

import (
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/bradfitz/gomemcache/memcache"
)

func TestUnreachable(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"miss", memcache.ErrCacheMiss, false},
		{"not stored", memcache.ErrNotStored, false},
		{"cas conflict", memcache.ErrCASConflict, false},
		{"malformed key", memcache.ErrMalformedKey, false},
		{"server error", fmt.Errorf("%w: out of memory", memcache.ErrServerError), false},
		{"read timeout", errDown, true},
		{"connect timeout", &memcache.ConnectTimeoutError{Addr: &net.TCPAddr{}}, true},
		{"refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{"reset", fmt.Errorf("reading: %w", syscall.ECONNRESET), true},
		{"closed by the server", io.EOF, true},
		{"cut short", io.ErrUnexpectedEOF, true},
		{"some other error", errors.New("memcache: unexpected response line from \"gets\": \"X\""), false},
	} {
		if got := Unreachable(tc.err); got != tc.want {
			t.Errorf("Unreachable(%s: %v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
