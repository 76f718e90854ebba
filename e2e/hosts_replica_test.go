package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/mcribapi"
)

// replica is one `mcrib serve` on its own host.
type replica struct {
	p     *hostsPool
	name  string
	host  *testenv.Host
	agent *testenv.ConsulAgent
	prog  *testenv.Program
	addr  string // <host addr>:7070, what the test binary calls
}

// reconciledAfter reports whether st shows a pass completed after at.
func reconciledAfter(st mcribapi.Status, at time.Time) bool {
	return st.LastReconcileAt != nil && st.LastReconcileAt.After(at)
}

func (r *replica) url(path string) string { return "http://" + r.addr + path }

// get GETs path and returns the status code and body; code 0 when the
// replica does not answer within the client's timeout.
func (r *replica) get(path string) (int, []byte) {
	resp, err := r.p.client.Get(r.url(path))
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// status returns the replica's status document.
func (r *replica) status() (mcribapi.Status, error) {
	code, body := r.get("/v1/status")
	if code != http.StatusOK {
		return mcribapi.Status{}, fmt.Errorf("GET %s/v1/status: %d %s", r.name, code, body)
	}
	return decodeAs[mcribapi.Status](body, r.name+"/v1/status")
}

func (r *replica) ready() int {
	code, _ := r.get("/readyz")
	return code
}

// slotMap returns the slot map the replica serves, or nil.
func (r *replica) slotMap() *cachenodes.SlotMap {
	code, body := r.get("/v1/slotmap")
	if code != http.StatusOK {
		return nil
	}
	sm, err := cachenodes.ParseSlotMap(body)
	if err != nil {
		return nil
	}
	return sm
}

// call sends method path with body, and the bearer token tok unless it is
// "", and returns the status code and body (code 0 and the error text when
// there is no answer).
func (r *replica) call(method, path, body, tok string) (int, string) {
	req, err := http.NewRequest(method, r.url(path), strings.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := r.p.client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
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
					switch code, body := r.call("POST", "/v1/boot", "", ""); code {
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

// procStopped reports whether process pid is stopped (state T in
// /proc/<pid>/stat): a SIGSTOP is delivered asynchronously.
func procStopped(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+3 <= len(s) && s[i+2] == 'T'
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
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}
