package repocheck

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// runbookBase is where every alert's runbook_url points: the runbook
// page, one section per situation, on the main branch.
const runbookBase = "https://github.com/mcrib/mcrib/blob/main/docs/runbook.md"

var (
	alertLine   = regexp.MustCompile(`^\s*-\s*alert:\s*(\S+)`)
	runbookLine = regexp.MustCompile(`^\s*runbook_url:\s*"?([^"\s]*)"?\s*$`)
)

// promFiles returns the files of deploy/prometheus, relative to root.
func promFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "deploy", "prometheus", "*.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("deploy/prometheus holds no .yml file")
	}
	var out []string
	for _, f := range files {
		rel, err := filepath.Rel(root, f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, filepath.ToSlash(rel))
	}
	return out
}

// TestRunbookURLs: every runbook_url in deploy/prometheus/*.yml (the
// rules and the expected annotations of their promtool tests) points to
// a heading of docs/runbook.md, and every alerting rule has one.
func TestRunbookURLs(t *testing.T) {
	runbook := anchors(readPage(t, "docs/runbook.md"))
	urls := 0
	for _, file := range promFiles(t) {
		alert, alertAt, hasURL := "", 0, false
		endRule := func() {
			if alert != "" && !hasURL && !strings.HasSuffix(file, "_test.yml") {
				t.Errorf("%s:%d: alert %s has no runbook_url", file, alertAt, alert)
			}
		}
		for i, line := range strings.Split(readPage(t, file), "\n") {
			if m := alertLine.FindStringSubmatch(line); m != nil {
				endRule()
				alert, alertAt, hasURL = m[1], i+1, false
			}
			m := runbookLine.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			urls++
			hasURL = true
			anchor, ok := strings.CutPrefix(m[1], runbookBase+"#")
			switch {
			case !ok:
				t.Errorf("%s:%d: runbook_url %q is not a section of the runbook (%s#…)", file, i+1, m[1], runbookBase)
			case !runbook[anchor]:
				t.Errorf("%s:%d: runbook_url %q: docs/runbook.md has no heading #%s", file, i+1, m[1], anchor)
			}
		}
		endRule()
	}
	if urls == 0 {
		t.Fatal("no runbook_url found in deploy/prometheus: the pattern is broken")
	}
}
