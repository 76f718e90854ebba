package metrics

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// runbookBase is where every alert's runbook_url points: the README's
// runbook, one section per incident.
const runbookBase = "https://github.com/mcrib/mcrib/blob/main/README.md#"

// readmeAnchors returns the anchors GitHub makes of the README's headings.
func readmeAnchors(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	heading := regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	drop := regexp.MustCompile(`[^a-z0-9 _-]`)
	anchors := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(string(data), -1) {
		a := drop.ReplaceAllString(strings.ToLower(strings.TrimSpace(m[1])), "")
		anchors[strings.ReplaceAll(a, " ", "-")] = true
	}
	return anchors
}

func TestEveryAlertHasARunbook(t *testing.T) {
	data, err := os.ReadFile(alertRulesFile)
	if err != nil {
		t.Fatal(err)
	}
	anchors := readmeAnchors(t)
	if !anchors["runbook"] {
		t.Fatalf("the README has no Runbook section")
	}
	alert := regexp.MustCompile(`^\s*- alert:\s*(\S+)`)
	url := regexp.MustCompile(`^\s*runbook_url:\s*"([^"]*)"`)
	seen := map[string]string{}
	var cur string
	for _, line := range strings.Split(string(data), "\n") {
		if m := alert.FindStringSubmatch(line); m != nil {
			cur = m[1]
		}
		if m := url.FindStringSubmatch(line); m != nil && cur != "" {
			seen[cur] = m[1]
		}
	}
	for _, name := range wantAlerts {
		u, ok := seen[name]
		anchor, based := strings.CutPrefix(u, runbookBase)
		switch {
		case !ok:
			t.Errorf("alert %s has no runbook_url", name)
		case !based:
			t.Errorf("alert %s: runbook_url %q is not in the README (%s…)", name, u, runbookBase)
		case !anchors[anchor]:
			t.Errorf("alert %s: runbook_url %q names no heading of the README", name, u)
		}
	}
}
