package testenv

import "testing"

// SkipShort skips the test when go test runs with -short (make check),
// saying that it needs what: a real process such as a Consul agent,
// memcached, nutcracker or chromium, a test bed of hosts, or a run too long
// for the fast loop. It is the one place that decides what -short leaves
// out: every helper of this package that finds or starts an outside
// program calls it first, so a test that goes through them needs nothing
// of its own; the few tests that start something else, or run for long
// without any process, call it themselves. Under -short the skip stands
// even when the environment variable CI is set: -short asks for the fast
// loop, and make test runs everything.
func SkipShort(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("testenv: -short: skipped, needs %s (make test runs it)", what)
	}
}
