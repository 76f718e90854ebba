package repocheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The Go client's page shows the compiled example of mcclient, so that what
// a reader copies is what `go test ./mcclient` runs.
const (
	examplePage = "docs/clients.md"
	exampleFile = "mcclient/example_replicas_test.go"
	exampleFunc = "useCache"
)

// exampleParts returns the import block of exampleFile and the function
// exampleFunc with its doc comment, as written there.
func exampleParts(t *testing.T) (imports, fn string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(exampleFile)))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	block := func(start func(string) bool, withComment bool) string {
		for i, line := range lines {
			if !start(line) {
				continue
			}
			from := i
			for withComment && from > 0 && strings.HasPrefix(lines[from-1], "//") {
				from--
			}
			for j := i; j < len(lines); j++ {
				if strings.TrimRight(lines[j], "\n") == "}" || strings.TrimRight(lines[j], "\n") == ")" {
					return strings.Join(lines[from:j+1], "")
				}
			}
		}
		return ""
	}
	imports = block(func(l string) bool { return l == "import (\n" }, false)
	fn = block(func(l string) bool { return strings.HasPrefix(l, "func "+exampleFunc+"(") }, true)
	if imports == "" || fn == "" {
		t.Fatalf("%s: no import block or no func %s", exampleFile, exampleFunc)
	}
	return imports, fn
}

// TestClientsPageQuotesTheExample: docs/clients.md holds the example's
// imports and its useCache function word for word.
func TestClientsPageQuotesTheExample(t *testing.T) {
	imports, fn := exampleParts(t)
	page := readPage(t, examplePage)
	if !strings.Contains(page, imports) {
		t.Errorf("%s does not quote the import block of %s as it is:\n%s", examplePage, exampleFile, imports)
	}
	if !strings.Contains(page, fn) {
		t.Errorf("%s does not quote func %s of %s as it is:\n%s", examplePage, exampleFunc, exampleFile, fn)
	}
}
