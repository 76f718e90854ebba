package repocheck

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// leaves are the packages whose doc comment promises that they are
// leaves, with the packages of this module each may import besides the
// standard library: the decisions they hold stay pure because nothing
// that does I/O, logs or tells events is within their reach.
var leaves = []struct {
	dir string
	may []string
}{
	{"hitrate", nil},
	// mcribapi is the wire vocabulary, a leaf itself.
	{"mcribapi", nil},
	// slotplan's plans carry the wire's eviction reasons; its Input may
	// carry the self-test's reverted fixes (package revert, itself a leaf).
	{"slotplan", []string{"github.com/mcrib/mcrib/cachenodes", "github.com/mcrib/mcrib/mcribapi", "github.com/mcrib/mcrib/internal/revert"}},
	{"internal/revert", nil},
}

// TestLeavesStayLeaves: the non-test files of each leaf import only the
// standard library and the packages its entry names.
func TestLeavesStayLeaves(t *testing.T) {
	for _, leaf := range leaves {
		files, err := filepath.Glob(filepath.Join(root, leaf.dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", leaf.dir, err)
		}
		fset := token.NewFileSet()
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range file.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				first, _, _ := strings.Cut(path, "/")
				if !strings.Contains(first, ".") || slices.Contains(leaf.may, path) {
					continue // the standard library has no dot in its first element
				}
				rel, _ := filepath.Rel(root, f)
				t.Errorf("%s imports %s: package %s is a leaf (the standard library%s only)", filepath.ToSlash(rel), path, leaf.dir, mayList(leaf.may))
			}
		}
	}
}

func mayList(may []string) string {
	if len(may) == 0 {
		return ""
	}
	return " and " + strings.Join(may, ", ")
}
