package metrics

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/internal/testenv"
)

// Paths of the alert rules and their promtool tests, relative to this
// package's directory (go test runs in it).
const (
	alertRulesFile = "../deploy/prometheus/alerts.yml"
	alertTestsFile = "../deploy/prometheus/alerts_test.yml"
)

// wantAlerts are the alerts the rules file must define.
var wantAlerts = []string{
	"McribReconcileStale", "McribMetricsAbsent", "McribNotReady", "McribAutoFrozen",
	"McribDiscoveryFault", "McribFrozenTooLong", "McribNoLeader", "McribVacantSlots",
	"McribReplacementsBlocked", "McribHitRateLow", "McribConfigWriteFailing",
	"McribBootLimitPinned", "McribNoSpares", "McribConfigBehindMap", "McribObserverFaultTooLong",
	"McribKVDocumentCorrupt", "McribZoneHoldersUnreachable", "McribPoolOutgrown",
}

func TestAlertRulesPromtool(t *testing.T) {
	bin := testenv.LookPath(t, "promtool", "Debian package prometheus")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for _, args := range [][]string{
		{"check", "rules", alertRulesFile},
		{"test", "rules", alertTestsFile},
	} {
		out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// alertRule is one alerting rule of the rules file, as far as these tests
// need it.
type alertRule struct {
	name string
	expr string
}

// parseAlertRules reads the alert names and expr strings of a Prometheus
// rules file. It understands the shapes alerts.yml uses: `expr:` with the
// expression on the same line (optionally quoted) or as a block scalar
// (`|`, `>`, with chomping indicators) on the more indented lines below.
func parseAlertRules(t *testing.T, path string) []alertRule {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading alert rules: %v", err)
	}
	alertLine := regexp.MustCompile(`^\s*-?\s*alert:\s*(\S+)\s*$`)
	exprLine := regexp.MustCompile(`^(\s*)-?\s*expr:\s*(.*)$`)
	var rules []alertRule
	lines := []string{}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	for i := 0; i < len(lines); i++ {
		if m := alertLine.FindStringSubmatch(lines[i]); m != nil {
			rules = append(rules, alertRule{name: m[1]})
			continue
		}
		m := exprLine.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		if len(rules) == 0 || rules[len(rules)-1].expr != "" {
			t.Fatalf("%s:%d: expr without its own alert", path, i+1)
		}
		indent, rest := len(m[1]), strings.TrimSpace(m[2])
		var expr string
		switch {
		case strings.HasPrefix(rest, "|") || strings.HasPrefix(rest, ">"):
			var block []string
			for i+1 < len(lines) {
				next := lines[i+1]
				if strings.TrimSpace(next) != "" && len(next)-len(strings.TrimLeft(next, " ")) <= indent {
					break
				}
				block = append(block, strings.TrimSpace(next))
				i++
			}
			expr = strings.Join(block, " ")
		default:
			expr = strings.Trim(rest, `"'`)
		}
		if strings.TrimSpace(expr) == "" {
			t.Fatalf("%s:%d: empty expr", path, i+1)
		}
		rules[len(rules)-1].expr = expr
	}
	return rules
}

func TestAlertRulesUseExposedMetrics(t *testing.T) {
	rules := parseAlertRules(t, alertRulesFile)
	var names []string
	for _, r := range rules {
		names = append(names, r.name)
		if r.expr == "" {
			t.Errorf("alert %s: no expr found", r.name)
		}
	}
	if !slices.Equal(slices.Sorted(slices.Values(names)), slices.Sorted(slices.Values(wantAlerts))) {
		t.Errorf("alerts in %s = %v, want %v", alertRulesFile, names, wantAlerts)
	}

	// mcrib_config_generation has a series for each config file kept, the
	// zone gauges one for each zone.
	hit := 0.9
	rec, h := newRecorder(t, func() Gauges {
		return Gauges{ConfigGenerations: map[string]uint64{"mcrouter": 1}, Zones: []ZoneGauges{{Zone: "a", HitRate: &hit}}}
	})
	rec.Pass("ok", time.Millisecond) // the histogram appears with the first pass
	_, families := scrape(t, h)
	exposed := seriesNames(families)

	metricName := regexp.MustCompile(`mcrib_[a-z_]+`)
	for _, r := range rules {
		used := metricName.FindAllString(r.expr, -1)
		if len(used) == 0 {
			t.Errorf("alert %s: expr %q uses no mcrib metric", r.name, r.expr)
		}
		for _, name := range used {
			if !exposed[name] {
				t.Errorf("alert %s: expr %q uses %s, which the metrics package does not expose", r.name, r.expr, name)
			}
		}
	}
}

func TestParseAlertRules(t *testing.T) {
	tests := []struct {
		name string
		file string
		want []alertRule
	}{
		{
			name: "inline, quoted and block exprs",
			file: `groups:
  - name: g
    rules:
      - alert: A
        expr: mcrib_ready == 0
        for: 2m
      - alert: B
        expr: "mcrib_leader == 0"
      - alert: C
        expr: |
          time() - mcrib_last_reconcile_timestamp_seconds
            > 60
        labels:
          severity: critical
      - alert: D
        expr: >-
          mcrib_hit_rate < 0.8
        annotations:
          summary: mcrib_not_a_metric
`,
			want: []alertRule{
				{"A", "mcrib_ready == 0"},
				{"B", "mcrib_leader == 0"},
				{"C", "time() - mcrib_last_reconcile_timestamp_seconds > 60"},
				{"D", "mcrib_hit_rate < 0.8"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := t.TempDir() + "/rules.yml"
			if err := os.WriteFile(path, []byte(tt.file), 0o600); err != nil {
				t.Fatal(err)
			}
			got := parseAlertRules(t, path)
			if !slices.Equal(got, tt.want) {
				t.Errorf("parseAlertRules = %q, want %q", got, tt.want)
			}
		})
	}
}
