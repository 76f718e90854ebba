package ratelimit

import (
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/clock"
)

// TestAdmitShare: replicas admitting from their shares stay within the
// pool's limit together, and a share follows the document and the count.
func TestAdmitShare(t *testing.T) {
	client, err := api.NewClient(api.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		limit     float64
		burst, n  int
		wantBurst int
		perSecond int
	}{{20, 20, 3, 6, 6}, {20, 20, 1, 20, 20}, {20, 2, 3, 1, 6}, {0, 1, 2, 0, 0}, {20, 20, 0, 20, 20}} {
		clk := clock.NewFake(time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC))
		svc, err := NewService(ServiceOptions{Client: client, Key: "mcrib/p/bootlimit", Clock: clk, Config: ControllerConfig{Floor: 1, Ceiling: 1000, Low: 0.8, Target: 0.9, Interval: time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		svc.writeMu.Lock()
		svc.setDoc(Document{Mode: "manual", Limit: tc.limit, Burst: tc.burst})
		svc.writeMu.Unlock()
		count := func() int {
			n := 0
			for range 100 {
				if ok, _ := svc.AdmitShare(tc.n); ok {
					n++
				}
			}
			return n
		}
		if got := count(); got != tc.wantBurst {
			t.Errorf("limit %v burst %d over %d replicas: %d admitted at once, want %d", tc.limit, tc.burst, tc.n, got, tc.wantBurst)
		}
		clk.Advance(time.Second)
		if got := count(); got != min(tc.perSecond, tc.wantBurst) {
			t.Errorf("limit %v over %d replicas: %d admitted in the next second, want %d", tc.limit, tc.n, got, min(tc.perSecond, tc.wantBurst))
		}
	}
}
