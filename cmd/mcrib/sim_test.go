package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcrib/mcrib/cachenodes"
)

// simSmall are the flags of a run of a second or so.
var simSmall = []string{"--nodes", "8", "--warmup", "1m", "--duration", "1m", "--clients", "100", "--sampled-reads", "200", "--items-per-node", "500", "--db-capacity", "200"}

func TestSimWritesTheReport(t *testing.T) {
	dir := t.TempDir()
	args := append([]string{"sim", "--scenario", "observer-blip", "--policy", "immediate,mcrib", "--out", dir}, simSmall...)
	code, stdout, stderr := runCLI(t, nil, args...)
	if code != 0 {
		t.Fatalf("mcrib sim: exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{"## observer-blip", "| immediate |", "| mcrib |", "observer-blip under mcrib: 0 flushes, 0 replacements: met"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "real time") {
		t.Errorf("stderr does not report the speed-up: %q", stderr)
	}
	report, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(report), "![observer-blip](observer-blip.svg)") {
		t.Errorf("report.md does not show the chart:\n%s", report)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "observer-blip.svg"))
	if err != nil || !strings.HasPrefix(string(svg), "<svg ") || strings.Contains(string(svg), "http://www.w3.org/1999/xlink") {
		t.Errorf("observer-blip.svg: %v, starts %.40q", err, svg)
	}
}

func TestSimLike(t *testing.T) {
	spec := cachenodes.SlotMapSpec{Pool: "web", Generation: 3, Spares: []cachenodes.Node{{ID: "e", Addr: "10.0.0.5:11211"}}}
	for _, id := range []string{"a", "b", "c", "d"} {
		spec.Slots = append(spec.Slots, cachenodes.Node{ID: id, Addr: "10.0.0." + id + ":11211"})
	}
	m, err := cachenodes.NewSlotMap(spec)
	if err != nil {
		t.Fatal(err)
	}
	slotmap, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	status := `{"pool":"web","nodes":[{},{},{},{},{}],"boot_limit":{"mode":"auto","limit":40,"burst":4,"floor":5,"ceiling":400}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/status":
			w.Write([]byte(status))
		case "/v1/slotmap":
			w.Write(slotmap)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	args := append([]string{"sim", "--scenario", "agent-rollout", "--policy", "mcrib", "--like", srv.URL, "--out", dir}, simSmall...)
	code, _, stderr := runCLI(t, nil, args...)
	if code != 0 {
		t.Fatalf("mcrib sim --like: exit %d, stderr %q", code, stderr)
	}
	report, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`(pool "web"): 5 nodes, 4 slots`, "boot limit 5..400 boots/s"} {
		if !strings.Contains(string(report), want) {
			t.Errorf("report.md lacks %q:\n%.600s", want, report)
		}
	}
}

func TestSimUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"sim", "--policy", "fast"},
		{"sim", "--scenario", "flood"},
		{"sim", "--nodes", "4", "--slots", "8"},
		{"sim", "extra"},
	} {
		if code, _, stderr := runCLI(t, nil, args...); code != 2 || stderr == "" {
			t.Errorf("mcrib %s: exit %d, stderr %q; want 2 and a message", strings.Join(args, " "), code, stderr)
		}
	}
}

func TestSimZoneDrain(t *testing.T) {
	args := append([]string{"sim", "--scenario", "zone-drain", "--policy", "immediate,mcrib,mcrib-cold"}, simSmall...)
	code, stdout, stderr := runCLI(t, nil, args...)
	if code != 0 {
		t.Fatalf("mcrib sim zone-drain: exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{"time to drained", "| mcrib |", "| mcrib-cold |", "zone-drain under mcrib: zone b drained within"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "| immediate |") {
		t.Errorf("zone-drain ran under immediate, which has no drain:\n%s", stdout)
	}
	if code, _, stderr := runCLI(t, nil, "sim", "--scenario", "zone-drain", "--policy", "immediate"); code != 2 || !strings.Contains(stderr, "needs mcrib's loop") {
		t.Errorf("zone-drain under immediate alone: exit %d, stderr %q; want 2 naming the loop", code, stderr)
	}
}
