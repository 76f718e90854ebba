package e2e

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/mcclient"
	"github.com/mcrib/mcrib/mcribapi"
)

// TestWhatIfDrainMatchesTheDrain is the what-if's check on real Consul
// and memcached (docs/simulation.md, "What-if"): under a cache-aside load
// through the Go client, mcrib drain --dry-run prints the simulator's
// prediction and changes nothing; then the same drain runs for real, and
// the prediction's lowest hit rate (of 5 seconds) is within 2 points of
// the one measured, its duration (until the zone is drained and no
// warming object is left) within 25%.
func TestWhatIfDrainMatchesTheDrain(t *testing.T) {
	const slots = 8
	p := newZonedPool(t, []string{"a", "b", "c"}, 4)
	m := startMcrib(t, p.consul.HTTPAddr, append(withToken(t), "--slots", "8", "--hold", "60s", "--probe-interval", "1s")...)
	filled(t, p, m, slots)
	api := newAPIClient(m.Addr, apiTimeout)
	zones := mustZones(t, api)
	zone := "c"
	t.Logf("the first fill: a:%d b:%d c:%d; draining zone %s", zones["a"].Slots, zones["b"].Slots, zones["c"].Slots, zone)

	f, err := mcclient.NewHTTPFollower(mcclient.HTTPFollowerOptions{URL: "http://" + m.Addr, WaitTime: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c := followingClient(t, f, clientTimeout)
	testenv.Eventually(t, 10*time.Second, "the client follows the map", func() bool { return c.SlotMap() != nil })
	l := startMeasuredLoad(t, "what-if", c, 40000, 1500, 5*time.Second, 15*time.Second)
	defer l.stop()
	var st mcribapi.Status
	testenv.Eventually(t, 30*time.Second, "the status knows the hit rate and the gets a second", func() bool {
		st, err = api.status()
		return err == nil && st.HitRate != nil && st.GetsPerSecond != nil && st.Flags != nil
	})
	t.Logf("the status: hit rate %s, %.0f gets/s, flags %+v", pct(*st.HitRate), *st.GetsPerSecond, *st.Flags)

	// The what-if: no token, nothing changed.
	before := m.slotMap()
	asked := time.Now()
	code, out, stderr := runCLI(t, m.Addr, nil, "drain", zone, "--dry-run", "--step", "50", "--every", "5s", "--json")
	if code != 0 {
		t.Fatalf("mcrib drain --dry-run: exit %d, %s", code, stderr)
	}
	var pred mcribapi.Prediction
	if err := json.Unmarshal([]byte(out), &pred); err != nil || pred.Action != "drain" || pred.Blocked != "" {
		t.Fatalf("mcrib drain --dry-run printed %q (%v)", out, err)
	}
	predicted, err := time.ParseDuration(pred.Duration)
	if err != nil {
		t.Fatalf("the prediction's duration %q: %v", pred.Duration, err)
	}
	t.Logf("predicted in %v: %s", time.Since(asked).Round(10*time.Millisecond), strings.TrimSpace(out))
	if after := m.slotMap(); after.Revision() != before.Revision() {
		t.Errorf("the what-if wrote the slot map: revision %d → %d", before.Revision(), after.Revision())
	}
	if d, _, err := api.drain(); err != nil || len(d.Zones) != 0 {
		t.Errorf("the what-if set a drain: %+v (%v)", d, err)
	}

	// The drain itself, measured as the prediction counts it.
	put := time.Now()
	from := time.Since(l.started)
	if code, b := api.do("PUT", "/v1/drain/"+zone, drainBody("what-if check", 100, 50, "5s"), token); code != 200 {
		t.Fatalf("PUT /v1/drain/%s: %d %s", zone, code, b)
	}
	testenv.Eventually(t, 5*time.Minute, "the drain over: zone "+zone+" drained and no warming left", func() bool {
		d, _, err := api.drain()
		if err != nil {
			return false
		}
		e, ok := drainEntry(d, zone)
		sm := m.slotMap()
		return ok && e.State == mcribapi.DrainDrained && sm != nil && !sm.AnyWarming() && !sm.AnyIncoming()
	})
	took := time.Since(put)
	time.Sleep(2 * time.Second) // the load's last seconds are counted
	win := l.window(from, from+took+time.Second)
	lowest := lowestOver(win, 5)
	t.Logf("measured: over in %v, lowest hit rate of 5 s %s (steady %s); predicted %v, %s, %d extra misses, lowest boot limit %g",
		took.Round(100*time.Millisecond), pct(lowest), pct(l.steady), predicted, pct(pred.LowestHitRate), pred.ExtraMisses, pred.LowestBootLimit)
	if gap := 100 * math.Abs(pred.LowestHitRate-lowest); gap > 2 {
		t.Errorf("the predicted lowest hit rate %s is %.2f points from the measured %s: want within 2", pct(pred.LowestHitRate), gap, pct(lowest))
	}
	if off := math.Abs(predicted.Seconds()-took.Seconds()) / took.Seconds(); off > 0.25 {
		t.Errorf("the predicted duration %v is %.0f%% off the measured %v: want within 25%%", predicted, 100*off, took.Round(100*time.Millisecond))
	}
}
