package testenv

import (
	"testing"
	"time"
)

// pollInterval is how often Eventually evaluates its condition.
const pollInterval = 20 * time.Millisecond

// Eventually calls cond every 20ms until it returns true, and fails the test
// with a message naming what when timeout passes first. cond is always called
// at least once, and is called from the caller's goroutine.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Poll(timeout, pollInterval, cond) {
		t.Fatalf("testenv: timed out after %v waiting for %s", timeout, what)
	}
}

// Poll calls cond every interval until it returns true (Poll reports true) or
// timeout passes (Poll reports false), for checks that report with t.Errorf
// and go on. cond is always called at least once.
func Poll(timeout, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(interval)
	}
}
