package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/mcribapi"
)

// TestBootAdmissionFollowsManualLimit pins 5 boots/s with burst 5: 40
// rapid boots admit between 5 and 7, and a refusal says when to retry.
func TestBootAdmissionFollowsManualLimit(t *testing.T) {
	p := newPool(t, 2)
	m := startMcrib(t, p.consul.HTTPAddr, flags("--slots", "2")...)
	filled(t, p, m, 2)
	code, body, _ := m.call("PUT", "/v1/ratelimit", `{"mode":"manual","limit":5,"burst":5}`, "")
	if code != 200 {
		t.Fatalf("PUT /v1/ratelimit: %d %s", code, body)
	}
	doc, err := decodeAs[mcribapi.BootLimit](body, "PUT /v1/ratelimit")
	if err != nil || doc.Mode != "manual" || doc.Limit != 5 || doc.Burst != 5 || doc.Reason == "" {
		t.Fatalf("boot-limit document %s (%v)", body, err)
	}
	admitted := 0
	for range 40 {
		code, body, hdr := m.call("POST", "/v1/boot", "", "")
		switch code {
		case 200:
			admitted++
		case 429:
			secs, err := strconv.Atoi(hdr.Get("Retry-After"))
			if err != nil || secs < 1 || !strings.Contains(string(body), `"admitted":false`) {
				t.Fatalf("429 with Retry-After %q and body %s", hdr.Get("Retry-After"), body)
			}
		default:
			t.Fatalf("POST /v1/boot: %d %s", code, body)
		}
	}
	if admitted < 5 || admitted > 7 {
		t.Fatalf("40 rapid boots admitted %d, want 5 to 7", admitted)
	}
}

// TestRateLimitKnobRefusesBadInput: every bad input is a 400 that changes
// nothing, and the knob needs the token.
func TestRateLimitKnobRefusesBadInput(t *testing.T) {
	p := newPool(t, 2)
	m := startMcrib(t, p.consul.HTTPAddr, flags(append(withToken(t), "--slots", "2")...)...)
	filled(t, p, m, 2)
	before := m.bootLimit()
	if before.Mode != "auto" || before.Limit != 1000 {
		t.Fatalf("a new pool starts at %s %v, want auto at the ceiling 1000", before.Mode, before.Limit)
	}
	for _, tc := range []struct {
		name, body, tok string
		want            int
	}{
		{"no token", `{"mode":"manual","limit":5}`, "", 401},
		{"negative", `{"mode":"manual","limit":-1}`, token, 400},
		{"not finite", `{"mode":"manual","limit":1e999}`, token, 400},
		{"NaN", `{"mode":"manual","limit":NaN}`, token, 400},
		{"a string", `{"mode":"manual","limit":"5"}`, token, 400},
		{"unknown mode", `{"mode":"turbo","limit":5}`, token, 400},
		{"manual without limit", `{"mode":"manual"}`, token, 400},
		{"burst below 1", `{"mode":"manual","limit":5,"burst":0}`, token, 400},
		{"burst not an integer", `{"mode":"manual","limit":5,"burst":2.5}`, token, 400},
		{"unknown field", `{"mode":"auto","speed":3}`, token, 400},
		{"malformed", `{"mode":`, token, 400},
		{"too large", `{"mode":"auto","x":"` + strings.Repeat("y", 70<<10) + `"}`, token, 413},
	} {
		code, body, _ := m.call("PUT", "/v1/ratelimit", tc.body, tc.tok)
		if code != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, code, body, tc.want)
		}
		if !isErrorBody(body) {
			t.Errorf("%s: body %s is not a JSON error", tc.name, body)
		}
		if after := m.bootLimit(); after.Mode != before.Mode || after.Limit != before.Limit || after.Burst != before.Burst {
			t.Errorf("%s changed the boot limit: %+v", tc.name, after)
		}
	}
	if code, body, _ := m.call("PUT", "/v1/ratelimit", `{"mode":"manual","limit":0}`, token); code != 200 {
		t.Fatalf("a limit of 0 is allowed: %d %s", code, body)
	}
	if code, _, _ := m.call("POST", "/v1/boot", "", ""); code != 429 {
		t.Fatalf("POST /v1/boot at limit 0: %d, want 429", code)
	}
	m.restart()
	if d := m.bootLimit(); d.Mode != "manual" || d.Limit != 0 {
		t.Fatalf("after a restart the boot limit is %s %v, want the stored manual 0", d.Mode, d.Limit)
	}
}

// TestBootLimitFollowsHitRate floods a real memcached with misses: the
// limit falls below half the ceiling with a reason naming the hit rate;
// then hits bring it back up in more than one step.
func TestBootLimitFollowsHitRate(t *testing.T) {
	p := newPool(t, 2)
	m := startMcrib(t, p.consul.HTTPAddr, "--slots", "2", "--probe-interval", "200ms", "--stats-interval", "100ms")
	sm := filled(t, p, m, 2)
	c := routedClient(t, sm)
	for i := range 50 {
		if err := c.Set(&memcache.Item{Key: fmt.Sprintf("warm-%d", i), Value: []byte("v")}); err != nil {
			t.Fatal(err)
		}
	}
	// traffic reads as fast as one reader goes, never setting a key: keys
	// never set (every read a miss), or the 50 set above (every read a
	// hit). It returns the function that stops it.
	traffic := func(hit bool) (stop func()) {
		l := &cacheLoad{client: c, name: func(k uint64) string { return fmt.Sprintf("cold-%d", k) },
			workers: 1, readOnly: true, pick: func(i uint64) uint64 { return i }}
		if hit {
			l.name = func(k uint64) string { return fmt.Sprintf("warm-%d", k) }
			l.pick = func(i uint64) uint64 { return i % 50 }
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); l.run(ctx) }()
		return func() { cancel(); <-done }
	}
	stopMisses := traffic(false)
	start := time.Now()
	testenv.Eventually(t, 20*time.Second, "the limit falls below half the ceiling", func() bool {
		d := m.bootLimit()
		return d.Limit < 500 && strings.Contains(d.Reason, "hit rate")
	})
	t.Logf("cut below half the ceiling after %s: %s", time.Since(start), m.bootLimit().Reason)
	stopMisses()
	defer traffic(true)()
	low := m.bootLimit().Limit
	seen := map[float64]bool{}
	testenv.Eventually(t, 60*time.Second, "the limit climbs back in several steps", func() bool {
		d := m.bootLimit()
		if d.Limit > low {
			seen[d.Limit] = true
		}
		return len(seen) >= 2 && d.Limit >= 500
	})
	if len(seen) < 2 {
		t.Fatalf("the limit rose in %d step(s), want more than one", len(seen))
	}
}
