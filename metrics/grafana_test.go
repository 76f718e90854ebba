package metrics

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/mcribapi"
)

// grafanaFile is the Grafana dashboard shipped in deploy/grafana.
const grafanaFile = "../deploy/grafana/mcrib.json"

// grafanaQueries returns every PromQL query of the dashboard: the panels'
// target expressions and the template variables' queries.
func grafanaQueries(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(grafanaFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("%s: %v", grafanaFile, err)
	}
	var out []string
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q has an empty query", p.Title)
			}
			out = append(out, tg.Expr)
		}
	}
	for _, v := range dash.Templating.List {
		if q, ok := v.Query.(map[string]any); ok && v.Type == "query" {
			out = append(out, fmt.Sprint(q["query"]))
		}
	}
	return out
}

// TestGrafanaQueriesUseExposedMetrics checks that every metric a query of
// the Grafana dashboard names is one /metrics exposes, as mcrib serve sets
// the metrics up (pool label, runtime metrics), and that every query
// parses as PromQL (promtool, when installed).
func TestGrafanaQueriesUseExposedMetrics(t *testing.T) {
	queries := grafanaQueries(t)
	if len(queries) < 10 {
		t.Fatalf("the dashboard has %d queries; want a dashboard", len(queries))
	}
	rec, h, err := New(Options{
		Gauges: func() Gauges {
			hit := 0.9
			return Gauges{ConfigGenerations: map[string]uint64{"mcrouter": 1}, NodesByState: map[mcribapi.NodeState]int{"spare": 1},
				Zones: []ZoneGauges{{Zone: "a", HitRate: &hit}}}
		},
		Pool: "default", Version: "test", Runtime: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	rec.Pass("ok", time.Millisecond)
	_, families := scrape(t, h)
	exposed := seriesNames(families)
	metricName := regexp.MustCompile(`\b(?:mcrib|go|process)_[a-z0-9_]+`)
	for _, q := range queries {
		used := metricName.FindAllString(q, -1)
		if len(used) == 0 {
			t.Errorf("query %q names no metric of mcrib", q)
		}
		for _, name := range used {
			if !exposed[name] {
				t.Errorf("query %q uses %s, which /metrics does not expose", q, name)
			}
		}
	}

	// Each query, with the dashboard's variables filled in, must parse:
	// promtool checks them as recording rules.
	bin := testenv.LookPath(t, "promtool", "Debian package prometheus") // a failure, not a skip, when CI is set
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: grafana\n    rules:\n")
	for i, q := range queries {
		if strings.HasPrefix(q, "label_values(") {
			continue // a Grafana function, not PromQL
		}
		expr, _ := json.Marshal(strings.ReplaceAll(q, "$pool", "default"))
		fmt.Fprintf(&rules, "      - record: grafana_query_%d\n        expr: %s\n", i, expr)
	}
	path := filepath.Join(t.TempDir(), "grafana_rules.yml")
	if err := os.WriteFile(path, []byte(rules.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, bin, "check", "rules", path).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules on the dashboard's queries: %v\n%s", err, out)
	}
}
