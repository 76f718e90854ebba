package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/mcribapi"
)

// replica is one `mcrib serve` on a host of its own, with the host's own
// Consul agent; its api is the bed's client (hostsPool.client).
type replica struct {
	*mcrib
	name  string
	host  *testenv.Host
	agent *testenv.ConsulAgent
}

// reconciledAfter reports whether st shows a pass completed after at.
func reconciledAfter(st mcribapi.Status, at time.Time) bool {
	return st.LastReconcileAt != nil && st.LastReconcileAt.After(at)
}

// served returns the slot map the replica serves, or nil when it does not
// answer with a valid one.
func (r *replica) served() *cachenodes.SlotMap {
	sm, _, err := r.api.slotMap("")
	if err != nil {
		return nil
	}
	return sm
}

// bootResult counts the answers of a boot load.
type bootResult struct {
	admitted, refused, other int
	firstOther               string
	elapsed                  time.Duration
}

// bootLoad calls POST /v1/boot on every replica of reps from perReplica
// goroutines each, for d: each goroutine sends one boot at a time, 10ms
// apart, as many applications booting would (a bounded loop: it ends at d).
// A boot is admitted on 200 and refused on 429; anything else, a transport
// error included, is counted as other.
func bootLoad(reps []*replica, perReplica int, d time.Duration) bootResult {
	results := make(chan bootResult, len(reps)*perReplica)
	start := time.Now()
	deadline := start.Add(d)
	for _, r := range reps {
		for range perReplica {
			go func() {
				var res bootResult
				for time.Now().Before(deadline) {
					switch code, body := r.api.do("POST", "/v1/boot", "", ""); code {
					case http.StatusOK:
						res.admitted++
					case http.StatusTooManyRequests:
						res.refused++
					default:
						res.other++
						if res.firstOther == "" {
							res.firstOther = fmt.Sprintf("%s: %d %s", r.name, code, body)
						}
					}
					time.Sleep(10 * time.Millisecond)
				}
				results <- res
			}()
		}
	}
	var total bootResult
	for range len(reps) * perReplica {
		res := <-results
		total.admitted += res.admitted
		total.refused += res.refused
		total.other += res.other
		if total.firstOther == "" {
			total.firstOther = res.firstOther
		}
	}
	total.elapsed = time.Since(start)
	return total
}

// steady checks cond every 100ms for d and fails the test with what and
// cond's answer the first time cond returns a non-empty string: the
// observation window of a test that something does not happen.
func steady(t *testing.T, d time.Duration, what string, cond func() string) {
	t.Helper()
	if bad := holds(d, cond); bad != "" {
		t.Fatalf("%s: %s", what, bad)
	}
}

// holds checks cond every 100ms for d, and returns its first non-empty
// answer, or "" when it returned "" all along.
func holds(d time.Duration, cond func() string) string {
	deadline := time.Now().Add(d)
	for {
		if bad := cond(); bad != "" {
			return bad
		}
		if time.Now().After(deadline) {
			return ""
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// within calls cond every 50ms until it returns true (within reports true)
// or timeout passes (false), for checks that report with t.Errorf and go on.
func within(timeout time.Duration, cond func() bool) bool {
	return testenv.Poll(timeout, 50*time.Millisecond, cond)
}
