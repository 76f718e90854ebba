package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/mcribapi"
)

// mcrouterServers reads the servers of pool "default" from an mcrouter
// config file.
func mcrouterServers(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var cfg struct {
		Pools map[string]struct {
			Servers []string `json:"servers"`
		} `json:"pools"`
		Route struct {
			Type string `json:"type"`
			Pool string `json:"pool"`
			Hash struct {
				HashFunc string `json:"hash_func"`
			} `json:"hash"`
		} `json:"route"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatalf("the mcrouter config is not JSON: %v\n%s", err, data)
	}
	switch {
	case cfg.Route.Type == "OperationSelectorRoute":
		// A slot warms (a warm move, docs/api.md): the holders
		// are the pool "default", the warm sources "default.warm".
		if _, ok := cfg.Pools["default.warm"]; !ok {
			t.Fatalf("mcrouter warming config without the pool default.warm:\n%s", data)
		}
	case cfg.Route.Type != "PoolRoute" || cfg.Route.Pool != "default" || cfg.Route.Hash.HashFunc != "Crc32":
		t.Fatalf("mcrouter route %+v, want PoolRoute over pool default with Crc32", cfg.Route)
	}
	return cfg.Pools["default"].Servers
}

// TestMaintenanceReplacesWithoutHold puts serving nodes into Consul
// maintenance: each is replaced at once, without waiting for the 10-minute
// hold, but never beyond --max-replacements-per-minute; the mcrouter config
// follows the slot map; the metrics and the JSON log say what happened.
func TestMaintenanceReplacesWithoutHold(t *testing.T) {
	p := newPool(t, 6)
	router := filepath.Join(t.TempDir(), "mcrouter.json")
	m := startMcrib(t, p.consul.HTTPAddr, flags("--slots", "4", "--hold", "10m",
		"--max-replacements-per-minute", "1", "--mcrouter-config", router, "--log-format", "json")...)
	before := filled(t, p, m, 4)
	testenv.Eventually(t, 10*time.Second, "the mcrouter config written", func() bool {
		servers := mcrouterServers(t, router)
		return len(servers) == 4 && servers[0] == before.Slot(0).Addr && servers[3] == before.Slot(3).Addr
	})

	first, second := before.Slot(1), before.Slot(2)
	if err := p.consul.Client.Agent().EnableServiceMaintenance(first.ID, "kernel upgrade"); err != nil {
		t.Fatal(err)
	}
	if err := p.consul.Client.Agent().EnableServiceMaintenance(second.ID, "kernel upgrade"); err != nil {
		t.Fatal(err)
	}
	// Announced at once, served 12 s later (docs/api.md, "Announce, then
	// serve").
	testenv.Eventually(t, 10*time.Second+cachenodes.AnnounceLead, "one node in maintenance replaced, without the hold", func() bool {
		sm := m.slotMap()
		return sm != nil && (sm.Slot(1).ID != first.ID) != (sm.Slot(2).ID != second.ID)
	})
	time.Sleep(2 * time.Second) // the ceiling holds the other one back
	sm := m.slotMap()
	if (sm.Slot(1).ID != first.ID) == (sm.Slot(2).ID != second.ID) {
		t.Fatalf("with a ceiling of 1 per minute both or neither were replaced: %v", sm.Slots())
	}
	st := m.status()
	if st.AutoFrozen || st.ReplacementsBlocked != 1 {
		t.Fatalf("auto_frozen %v, replacements_blocked %d; want no automatic freeze (maintenance is deliberate) and 1 blocked by the ceiling", st.AutoFrozen, st.ReplacementsBlocked)
	}
	if n, _ := nodeStatus(st, first.ID); n.Consul != mcribapi.ConsulMaintenance {
		t.Fatalf("%s shows consul %q, want maintenance", first.ID, n.Consul)
	}
	testenv.Eventually(t, 10*time.Second, "the mcrouter config follows", func() bool {
		servers := mcrouterServers(t, router)
		return len(servers) == 4 && servers[1] == sm.Slot(1).Addr && servers[2] == sm.Slot(2).Addr
	})

	_, body, _ := m.call("GET", "/metrics", "", "")
	for _, want := range []struct{ name, labels, value string }{
		{"mcrib_slot_replacements_total", `reason="maintenance"`, "1"},
		{"mcrib_slot_replacements_total", `reason="hold_expired"`, "0"},
		{"mcrib_flushes_total", `reason="placement"`, "1"},
		// The node in maintenance still answers: its slot moved warm
		// (invariant 9).
		{"mcrib_slot_moves_total", `kind="warm"`, "1"},
		{"mcrib_slot_moves_total", `kind="cold"`, "0"},
		{"mcrib_replacements_blocked", "", "1"},
		{"mcrib_leader", "", "1"},
		{"mcrib_ready", "", "1"},
		{"mcrib_slotmap_generation", "", itoa(sm.Generation())},
	} {
		if !hasSample(string(body), want.name, want.labels, want.value) {
			t.Errorf("/metrics lacks %s{%s} %s (with the pool label)", want.name, want.labels, want.value)
		}
	}

	code, page, header := m.call("GET", "/", "", "")
	if code != 200 || !strings.HasPrefix(header.Get("Content-Type"), "text/html") || !strings.Contains(string(page), "mcrib") {
		t.Fatalf("GET /: %d %s", code, header.Get("Content-Type"))
	}

	replaced := false
	for _, line := range strings.Split(strings.TrimSpace(m.Output()), "\n") {
		if !strings.HasPrefix(line, "{") {
			continue // the one plain line on stdout
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("--log-format json wrote a line that is not JSON: %q", line)
		}
		// A warm move (the node still answers) logs "slot move".
		if (rec["msg"] == "slot replacement" || rec["msg"] == "slot move") && rec["reason"] == "maintenance" {
			replaced = true
		}
	}
	if !replaced {
		t.Fatalf("no JSON log line for the replacement")
	}
}

func itoa(v uint64) string { return strconv.FormatUint(v, 10) }

// hasSample reports whether the exposition body has a sample of name whose
// labels include pool="default" and labels (when not empty), with value.
func hasSample(body, name, labels, value string) bool {
	for _, line := range strings.Split(body, "\n") {
		rest, ok := strings.CutPrefix(line, name+"{")
		if !ok {
			continue
		}
		set, val, ok := strings.Cut(rest, "} ")
		if ok && val == value && strings.Contains(set, `pool="default"`) && (labels == "" || strings.Contains(set, labels)) {
			return true
		}
	}
	return false
}
