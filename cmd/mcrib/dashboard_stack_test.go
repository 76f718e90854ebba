package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/internal/dashtest"
	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/mcribapi"
)

// stackGet decodes GET url into v and reports whether it answered 200.
func stackGet(url string, v any) bool {
	resp, err := http.Get(url)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return err == nil && resp.StatusCode == http.StatusOK && json.Unmarshal(b, v) == nil
}

// TestDashboardInChromiumThroughAReplacement runs a real stack (a Consul
// dev agent, six memcached, mcrib serve in this process), kills the
// memcached of slot 2, waits for its replacement, and checks that the
// page draws the history and lists the replacement with its node and
// reason. MCRIB_SCREENSHOT=1 also writes /tmp/mcrib-dashboard-replacement.png.
func TestDashboardInChromiumThroughAReplacement(t *testing.T) {
	bin := testenv.ChromiumBinary(t)
	consul := testenv.StartConsul(t)
	nodes := map[string]*testenv.Memcached{}
	for i := range 6 {
		id := fmt.Sprintf("mc-%d", i+1)
		nodes[id] = testenv.StartMemcached(t)
		testenv.Register(t, consul.Client, nodes[id], testenv.Registration{ID: id, Meta: map[string]string{"az": string(rune('a' + i%3))}})
	}
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	serveInProcess(t, "--consul", consul.HTTPAddr, "--listen", addr, "--slots", "4", "--hold", "2s",
		"--probe-interval", "200ms", "--stats-interval", "200ms")
	base := "http://" + addr

	var victim string
	testenv.Eventually(t, 30*time.Second, "all 4 slots filled", func() bool {
		var doc struct {
			Slots []struct {
				NodeID string `json:"node_id"`
			} `json:"slots"`
		}
		if !stackGet(base+"/v1/slotmap", &doc) || len(doc.Slots) != 4 {
			return false
		}
		for _, s := range doc.Slots {
			if s.NodeID == "" {
				return false
			}
		}
		victim = doc.Slots[2].NodeID
		return true
	})
	nodes[victim].Kill(t)

	var replaced mcribapi.Event
	testenv.Eventually(t, 30*time.Second, victim+"'s replacement in /v1/events", func() bool {
		var evs []mcribapi.Event
		if !stackGet(base+"/v1/events", &evs) {
			return false
		}
		for _, e := range evs {
			if e.Kind == mcribapi.EventReplacement && e.Node == victim {
				replaced = e
				return true
			}
		}
		return false
	})
	testenv.Eventually(t, 10*time.Second, "the replacement in /v1/history", func() bool {
		var h mcribapi.History
		if !stackGet(base+"/v1/history", &h) {
			return false
		}
		for _, n := range h.Replacements {
			if n > 0 {
				return true
			}
		}
		return false
	})

	d := dashtest.ParseDOM(t, dashtest.Chromium(t, bin, "--dump-dom", base+"/"))
	dashtest.WantShown(t, d, "ops-error", false)
	for _, id := range []string{"chart-hitrate", "chart-bootlimit", "chart-boots", "chart-moves"} {
		svg := d.ByID(t, id).Find(func(n *dashtest.Node) bool { return n.Tag == "svg" })
		if svg == nil || svg.Attrs["data-points"] == "" || svg.Attrs["data-points"] == "0" {
			t.Errorf("#%s has no chart with points: %+v", id, svg)
		}
	}
	moves := d.ByID(t, "chart-moves")
	if moves.Find(func(n *dashtest.Node) bool { return n.Attrs["data-series"] == "replacements" }) == nil {
		t.Errorf("#chart-moves draws no replacements series")
	}
	dashtest.WantContains(t, d, "chart-moves", "Flushes and replacements", "replacements ")
	var row *dashtest.Node
	for _, tr := range d.ByID(t, "events").ElementsNamed("tr") {
		if tr.Attrs["data-kind"] == string(mcribapi.EventReplacement) {
			row = tr
		}
	}
	if row == nil {
		t.Fatalf("#events lists no replacement:\n%s", d.ByID(t, "events").Text())
	}
	for _, want := range []string{victim, "slot 2", replaced.Reason, "mcrib"} {
		if !strings.Contains(row.Text(), want) {
			t.Errorf("the replacement row %q lacks %q", row.Text(), want)
		}
	}
	if os.Getenv("MCRIB_SCREENSHOT") != "" {
		dashtest.Screenshot(t, bin, base+"/", "/tmp/mcrib-dashboard-replacement.png", "1280,1600")
	}
}
