// Package leakcheck is the one goroutine-leak check of mcrib's loop tests:
// a test that starts a loop calls Check first, and fails if a goroutine it
// started outlives it. It wraps go.uber.org/goleak, which retries for a
// while before it reports, so goroutines still winding down are not
// flagged.
package leakcheck

import (
	"testing"

	"go.uber.org/goleak"
)

// Check records the goroutines running now and, when t ends, fails t if
// any goroutine started since is still running. Goroutines of the HTTP
// transport's idle connection pool, which outlive a test by design, are
// ignored. Tests that call Check must not run in parallel with tests that
// start goroutines of their own.
func Check(t testing.TB) {
	t.Helper()
	opts := []goleak.Option{
		goleak.IgnoreCurrent(),
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	}
	t.Cleanup(func() {
		if err := goleak.Find(opts...); err != nil {
			t.Errorf("goroutines outlived the test: %v", err)
		}
	})
}
