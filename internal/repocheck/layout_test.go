package repocheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeLayoutMatchesTheTree: the README's table of where each concept
// lives names every top-level directory and every package under internal/
// of the tree, and each path it names exists.
func TestReadmeLayoutMatchesTheTree(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "Where each concept lives:")
	if !ok {
		t.Fatal(`README.md has no "Where each concept lives:" table`)
	}
	paths := map[string]bool{}    // the first column, without a trailing slash
	internal := map[string]bool{} // the names the internal/… row lists
	tick := regexp.MustCompile("`([^`]+)`")
	for line := range strings.SplitSeq(table, "\n") {
		if !strings.HasPrefix(line, "| `") {
			if len(paths) > 0 && !strings.HasPrefix(line, "|") {
				break // the table ended
			}
			continue
		}
		cells := strings.Split(line, "|")
		first := strings.TrimSuffix(strings.Trim(strings.TrimSpace(cells[1]), "`"), "/")
		for p := range strings.SplitSeq(first, "`, `") {
			paths[p] = true
		}
		if first == "internal/…" {
			for _, m := range tick.FindAllStringSubmatch(cells[2], -1) {
				internal[m[1]] = true
			}
		}
	}
	for p := range paths {
		if p == "internal/…" {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("README's layout names %s, which is not in the tree", p)
		}
	}
	top, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range top {
		if !e.IsDir() || e.Name() == ".git" || e.Name() == "bin" {
			continue // the repository itself, and what make installs
		}
		if !paths[e.Name()] && !hasPrefixed(paths, e.Name()+"/") && e.Name() != "internal" {
			t.Errorf("README's layout does not name the top-level directory %s", e.Name())
		}
	}
	in, err := os.ReadDir(filepath.Join(root, "internal"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range in {
		if e.IsDir() && !internal[e.Name()] && !paths["internal/"+e.Name()] {
			t.Errorf("README's layout does not name internal/%s", e.Name())
		}
	}
}

// hasPrefixed reports whether a key of set starts with prefix.
func hasPrefixed(set map[string]bool, prefix string) bool {
	for k := range set {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}
