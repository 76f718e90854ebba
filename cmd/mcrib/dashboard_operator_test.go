package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mcrib/mcrib/internal/dashtest"
	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/mcclient"
	"github.com/mcrib/mcrib/mcribapi"
)

// The operator's dashboard at 3 a.m., on real stacks: a lone
// dead holder raises no zone banner and says when its slot goes to a
// spare; a drained zone's warm sources are listed; a warm drain under a
// cache-aside load keeps the boot limit steady. With MCRIB_SCREENSHOT set
// (or MCRIB_SCREENSHOT_DIR, the directory to write to; /tmp otherwise)
// each writes its screenshot, docs/dashboard-*.png by name.

// dashStack is a Consul dev agent, memcached in zones (mc-<zone>-<i>) and
// mcrib serve in this process.
type dashStack struct {
	base  string
	nodes map[string]*testenv.Memcached
}

func startDashStack(t *testing.T, zones []string, perZone int, args ...string) *dashStack {
	t.Helper()
	consul := testenv.StartConsul(t)
	s := &dashStack{nodes: map[string]*testenv.Memcached{}}
	for _, z := range zones {
		for i := range perZone {
			id := fmt.Sprintf("mc-%s-%d", z, i+1)
			s.nodes[id] = testenv.StartMemcached(t)
			testenv.Register(t, consul.Client, s.nodes[id], testenv.Registration{ID: id, Meta: map[string]string{"az": z}})
		}
	}
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	serveInProcess(t, append([]string{"--consul", consul.HTTPAddr, "--listen", addr}, args...)...)
	s.base = "http://" + addr
	return s
}

// status reads GET /v1/status.
func (s *dashStack) status() (mcribapi.Status, bool) {
	var st mcribapi.Status
	return st, stackGet(s.base+"/v1/status", &st)
}

// stackOperator is the operator's name the stack tests' changes carry,
// as the CLI sends --who: the dashboard shows it as their "by".
const stackOperator = "alice@ops-laptop"

// stackCall sends method path with a JSON body to base, as the operator
// stackOperator, and returns the status and the body.
func stackCall(base, method, path, body string) (int, string, error) {
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(mcribapi.OperatorHeader, stackOperator)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// dashShot writes a screenshot of the page at base named name (under
// docs/ in the repository) when MCRIB_SCREENSHOT or MCRIB_SCREENSHOT_DIR
// is set.
func dashShot(t *testing.T, bin, base, name, size string) {
	t.Helper()
	dir := os.Getenv("MCRIB_SCREENSHOT_DIR")
	if dir == "" && os.Getenv("MCRIB_SCREENSHOT") == "" {
		return
	}
	if dir == "" {
		dir = "/tmp"
	}
	dashtest.Screenshot(t, bin, base+"/", filepath.Join(dir, name), size)
}

// TestDashboardLoneDeadHolder: the memcached of the one slot holder of
// zone b dies. That is a node to replace, not a zone to drain: no zone
// banner and no zone alert; its slot row says "held, replaced in … if it
// does not return", and the band counts one slot unserved.
func TestDashboardLoneDeadHolder(t *testing.T) {
	bin := testenv.ChromiumBinary(t)
	s := startDashStack(t, []string{"a", "b", "c"}, 2, "--slots", "4", "--hold", "60s",
		"--probe-interval", "200ms", "--stats-interval", "200ms")
	var victim string
	testenv.Eventually(t, 30*time.Second, "4 slots filled, zone b holding one", func() bool {
		st, ok := s.status()
		if !ok {
			return false
		}
		held := 0
		for _, n := range st.Nodes {
			if n.Slot != nil && n.AZ == "b" {
				held++
				victim = n.ID
			}
		}
		return held == 1 && st.VacantSlots == 0 && len(st.Nodes) == 6
	})
	s.nodes[victim].Kill(t)
	testenv.Eventually(t, 20*time.Second, victim+" held with held_until", func() bool {
		st, ok := s.status()
		if !ok {
			return false
		}
		for _, n := range st.Nodes {
			if n.ID == victim {
				return n.State == mcribapi.NodeHeld && n.HeldUntil != nil && !n.Reachable
			}
		}
		return false
	})
	st, _ := s.status()
	if st.ZoneAlert != "" || strings.Contains(st.AutoFreezeReason, "mcrib drain") || st.SlotsUnserved != 1 {
		t.Fatalf("status: zone alert %q, automatic freeze %q, slots unserved %d; want no alert and 1 unserved", st.ZoneAlert, st.AutoFreezeReason, st.SlotsUnserved)
	}

	d := dashtest.ParseDOM(t, dashtest.Chromium(t, bin, "--dump-dom", s.base+"/"))
	dashtest.WantShown(t, d, "zonealert-banner", false)
	dashtest.WantText(t, d, "unserved", "1 of 4 (25 %)")
	var row *dashtest.Node
	for _, tr := range d.ByID(t, "slots").ElementsNamed("tr") {
		if strings.Contains(tr.Text(), victim) {
			row = tr
		}
	}
	if row == nil {
		t.Fatalf("no slot row names %s:\n%s", victim, d.ByID(t, "slots").Text())
	}
	if txt := row.Text(); !strings.Contains(txt, "held, replaced in ") || !strings.Contains(txt, " if it does not return") || !strings.Contains(txt, "NO") {
		t.Errorf("%s's slot row %q: want it held, unreachable, with when it is replaced", victim, txt)
	}
	if strings.Contains(d.Find(func(n *dashtest.Node) bool { return n.Tag == "body" }).Text(), "ZONE ALERT:") && d.ByID(t, "zonealert-banner").Shown() {
		t.Errorf("a zone alert is shown for one dead holder")
	}
	dashShot(t, bin, s.base, "dashboard-lone-dead-holder.png", "1440,1000")
}

// dashLoad is a cache-aside load through mcclient: Zipf reads of keys,
// a miss read from the "database" and set.
type dashLoad struct {
	c            *mcclient.Client
	keys         uint64
	reads, miss  atomic.Int64
	errs         atomic.Int64
	opsPerWorker int // a second
}

func (l *dashLoad) key(k uint64) string { return fmt.Sprintf("dash-%06d", k) }

func (l *dashLoad) run(ctx context.Context, workers int) {
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 21))
			z := rand.NewZipf(r, 1.1, 1, l.keys-1)
			tick := time.NewTicker(time.Second / time.Duration(l.opsPerWorker))
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				name := l.key(z.Uint64())
				l.reads.Add(1)
				if _, err := l.c.Get(name); err != nil {
					l.miss.Add(1)
					if !errors.Is(err, memcache.ErrCacheMiss) {
						l.errs.Add(1)
					}
					l.c.Set(&memcache.Item{Key: name, Value: []byte("db:" + name)})
				}
			}
		})
	}
	wg.Wait()
}

// TestDashboardDrainUnderLoad: a cache-aside load runs through mcclient;
// zone a (two of four slots) is drained warm in one step. While its slots
// warm, the Warm sources table lists its two nodes, each marked as a warm
// source of its slot in a drained zone until when, and the zone's row
// says it is drained with nothing left to move. It is undrained at once:
// the return waits, visibly, for the warmings from zone a's own nodes,
// then gives back the very slots the drain moved. The boot limit stays at
// the ceiling through the drain and the return, as the history the page
// draws shows.
func TestDashboardDrainUnderLoad(t *testing.T) {
	bin := testenv.ChromiumBinary(t)
	s := startDashStack(t, []string{"a", "b", "c"}, 3, "--slots", "4", "--hold", "60s", "--warm-for", "40s",
		"--probe-interval", "200ms", "--stats-interval", "500ms")
	testenv.Eventually(t, 30*time.Second, "4 slots filled, zone a holding two", func() bool {
		st, ok := s.status()
		if !ok || st.VacantSlots != 0 {
			return false
		}
		for _, z := range st.Zones {
			if z.Zone == "a" {
				return z.Slots == 2
			}
		}
		return false
	})
	f, err := mcclient.NewHTTPFollower(mcclient.HTTPFollowerOptions{URL: s.base, WaitTime: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c, err := mcclient.New(mcclient.Options{Source: f, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { c.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait(); c.Close() })
	if err := c.WaitForSlotMap(ctx); err != nil {
		t.Fatal(err)
	}
	l := &dashLoad{c: c, keys: 20_000, opsPerWorker: 250}
	for k := range l.keys {
		c.Set(&memcache.Item{Key: l.key(k), Value: []byte("db")})
	}
	wg.Go(func() { l.run(ctx, 4) })

	limit := func() float64 {
		var doc struct {
			Limit float64 `json:"limit"`
		}
		stackGet(s.base+"/v1/ratelimit", &doc)
		return doc.Limit
	}
	testenv.Eventually(t, 30*time.Second, "the hit rate measured under the load", func() bool {
		st, ok := s.status()
		return ok && st.HitRate != nil && *st.HitRate > 0.9 && l.reads.Load() > 5000
	})
	before := limit()
	put := time.Now()
	code, body, err := stackCall(s.base, "PUT", "/v1/drain/a", `{"reason":"INC-2107: link to a flapping","step_percent":100,"step_interval":"2s"}`)
	if err != nil || code != 200 {
		t.Fatalf("PUT /v1/drain/a: %d %s %v", code, body, err)
	}
	var sources []string
	testenv.Eventually(t, 20*time.Second, "zone a drained, its two nodes warm sources", func() bool {
		st, ok := s.status()
		if !ok {
			return false
		}
		sources = sources[:0]
		for _, n := range st.Nodes {
			if n.AZ == "a" && n.State == mcribapi.NodeWarming && n.Drained {
				sources = append(sources, n.ID)
			}
		}
		return len(sources) == 2
	})
	d := dashtest.ParseDOM(t, dashtest.Chromium(t, bin, "--dump-dom", s.base+"/"))
	rows := d.ByID(t, "warmsources").ElementsNamed("tr")
	if len(rows) != 2 {
		t.Fatalf("#warmsources has %d rows, want the 2 warm sources %v:\n%s", len(rows), sources, d.ByID(t, "warmsources").Text())
	}
	for i, id := range sources {
		txt := rows[i].Text()
		for _, want := range []string{id, "warming", "warm source of slot", "zone drained", "until"} {
			if !strings.Contains(txt, want) {
				t.Errorf("warm source row %q lacks %q", txt, want)
			}
		}
	}
	dashtest.WantContains(t, d, "zones", "drained", "2 slots moved, 0 left of a baseline of 2")
	// The operator's drain is told with their name, not a socket address.
	dashtest.WantContains(t, d, "events", "operator change", stackOperator, "drain zone a")
	dashShot(t, bin, s.base, "dashboard-drain-warm-source.png", "1440,1300")

	// Undrain at once: the slots the drain moved still warm from zone a's
	// nodes, so the return waits, and the zone's row says for what.
	zoneA := func() (mcribapi.ZoneStatus, mcribapi.Status) {
		st, _ := s.status()
		for _, z := range st.Zones {
			if z.Zone == "a" {
				return z, st
			}
		}
		return mcribapi.ZoneStatus{}, st
	}
	za, _ := zoneA()
	if za.Drain == nil || len(za.Drain.MovedSlots) != 2 {
		t.Fatalf("zone a's drain entry %+v, want the two slots it moved", za.Drain)
	}
	moved := slices.Sorted(slices.Values(za.Drain.MovedSlots))
	if code, body, err := stackCall(s.base, "DELETE", "/v1/drain/a", ""); err != nil || code != 200 {
		t.Fatalf("DELETE /v1/drain/a: %d %s %v", code, body, err)
	}
	testenv.Eventually(t, 10*time.Second, "the return blocked by the warmings", func() bool {
		z, _ := zoneA()
		return z.Drain != nil && strings.Contains(z.Drain.Blocked, "still warms from")
	})
	d = dashtest.ParseDOM(t, dashtest.Chromium(t, bin, "--dump-dom", s.base+"/"))
	dashtest.WantContains(t, d, "zones", "returning", "2 slots to give back, 0 held of a baseline of 2", "still warms from mc-a-", "until", "it comes back when the warming ends")
	dashtest.WantContains(t, d, "warmsources", "mc-a-")

	// Through the drain's warmings, the return and its warmings, and a
	// few stats intervals after: the boot limit holds.
	lowest := before
	var back time.Time
	for time.Since(put) < 150*time.Second {
		lowest = min(lowest, limit())
		z, st := zoneA()
		warming := slices.ContainsFunc(st.Nodes, func(n mcribapi.NodeStatus) bool { return n.Warming != nil })
		if back.IsZero() && z.Slots == 2 && z.Drain == nil && !warming {
			back = time.Now()
		}
		if !back.IsZero() && time.Since(back) > 5*time.Second {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if back.IsZero() {
		t.Fatalf("zone a did not hold its two slots again, without a drain entry or a warming, within 150 s of the drain")
	}
	// The return gave back the very slots the drain moved.
	_, st := zoneA()
	var held []int
	for _, n := range st.Nodes {
		if n.AZ == "a" && n.Slot != nil {
			held = append(held, *n.Slot)
		}
	}
	slices.Sort(held)
	if !slices.Equal(held, moved) {
		t.Errorf("zone a holds slots %v after the return, want the slots its drain moved, %v", held, moved)
	}
	var h mcribapi.History
	if !stackGet(s.base+"/v1/history", &h) {
		t.Fatal("GET /v1/history failed")
	}
	for i, at := range h.At {
		if at.After(put) {
			lowest = min(lowest, h.BootLimit[i])
		}
	}
	t.Logf("boot limit %v before the drain, lowest %v through it and its return; %d reads, %d misses, %d errors", before, lowest, l.reads.Load(), l.miss.Load(), l.errs.Load())
	if lowest != before {
		t.Errorf("the warm drain and its return moved the boot limit from %v down to %v", before, lowest)
	}
	d = dashtest.ParseDOM(t, dashtest.Chromium(t, bin, "--dump-dom", s.base+"/"))
	dashtest.WantContains(t, d, "chart-bootlimit", fmt.Sprintf("limit %v", before))
	dashtest.WantContains(t, d, "bl-limit", fmt.Sprintf("%v boots/s", before))
	dashShot(t, bin, s.base, "dashboard-drain-under-load.png", "1440,1700")
}
