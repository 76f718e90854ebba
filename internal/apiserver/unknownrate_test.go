package apiserver

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/ratelimit"
)

// TestUnknownHitRateSaidOneWay: before any interval with gets the
// boot-limit document and the status both send the hit rate as null (and
// `mcrib ratelimit` prints "unknown", internal/cli's
// TestUnknownHitRatePrinted).
func TestUnknownHitRateSaidOneWay(t *testing.T) {
	boot, err := ratelimit.NewService(ratelimit.ServiceOptions{Client: &api.Client{}, Key: "test/pool/bootlimit",
		Config: ratelimit.ControllerConfig{Floor: 10, Ceiling: 1000, Low: 0.8, Target: 0.9, Interval: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	a := newServer(Options{Loop: newFakePlane(testSlotMap(t, 1)), Boot: boot})

	rr := call(a, http.MethodGet, "/v1/ratelimit", "", "")
	if rr.Code != 200 || !strings.Contains(rr.Body.String(), `"hit_rate":null`) {
		t.Fatalf("GET /v1/ratelimit: %d %s, want hit_rate null", rr.Code, rr.Body)
	}
	st := call(a, http.MethodGet, "/v1/status", "", "")
	if n := strings.Count(st.Body.String(), `"hit_rate":null`); st.Code != 200 || n != 2 {
		t.Errorf("GET /v1/status: %d, %d null hit rates in %s; want the status's and the boot limit's", st.Code, n, st.Body)
	}
}

// TestManualLimitAboveTheCeilingRefused: PUT /v1/ratelimit with a manual
// limit above --boot-limit-max is a 400 whose one sentence names the
// ceiling (it was accepted, and enforced above the ceiling).
func TestManualLimitAboveTheCeilingRefused(t *testing.T) {
	boot, err := ratelimit.NewService(ratelimit.ServiceOptions{Client: &api.Client{}, Key: "test/pool/bootlimit",
		Config: ratelimit.ControllerConfig{Floor: 10, Ceiling: 1000, Low: 0.8, Target: 0.9, Interval: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	a := newServer(Options{Loop: newFakePlane(testSlotMap(t, 1)), Boot: boot})
	rr := call(a, http.MethodPut, "/v1/ratelimit", `{"mode":"manual","limit":5000}`, "")
	if rr.Code != http.StatusBadRequest {
		t.Fatalf("manual 5000 over a ceiling of 1000: %d %s, want 400", rr.Code, rr.Body)
	}
	if msg := errorSentence(t, rr); !strings.Contains(msg, "ceiling of 1000") || !strings.Contains(msg, "--boot-limit-max") {
		t.Errorf("refusal %q does not name the ceiling and its flag", msg)
	}
}
