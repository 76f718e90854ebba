package repocheck

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goPackage is the Go files of one directory of the module, by package.
type goPackage struct {
	dir string
	// name is the package's name: that of its non-test files, or of its
	// in-package test files when it has no others.
	name string
	// doc is the package doc comment, "" when no file has one.
	doc string
}

// modulePackages returns the packages of the module rooted at root,
// leaving out testdata, hidden directories and nested modules (the
// tools/consul build).
func modulePackages(t *testing.T) []goPackage {
	t.Helper()
	var pkgs []goPackage
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != root {
			if name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module
			}
		}
		p, ok, err := readPackage(path)
		if err != nil {
			return err
		}
		if ok {
			rel, _ := filepath.Rel(root, path)
			p.dir = filepath.ToSlash(rel)
			pkgs = append(pkgs, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// readPackage reads the package clauses and doc comments of the Go files
// of dir; ok is false when dir has none.
func readPackage(dir string) (p goPackage, ok bool, err error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		return goPackage{}, false, err
	}
	fset := token.NewFileSet()
	docs := map[string]string{} // package name → doc comment
	var code, tests []string    // package names of non-test and in-package test files
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return goPackage{}, false, err
		}
		name := file.Name.Name
		if strings.HasSuffix(f, "_test.go") {
			if strings.HasSuffix(name, "_test") {
				continue // an external test package documents nothing
			}
			tests = append(tests, name)
		} else {
			code = append(code, name)
		}
		if file.Doc != nil && docs[name] == "" {
			docs[name] = file.Doc.Text()
		}
	}
	switch {
	case len(code) > 0:
		p.name = code[0]
	case len(tests) > 0:
		p.name = tests[0]
	default:
		return goPackage{}, false, nil
	}
	p.doc = docs[p.name]
	return p, true, nil
}

// TestEveryPackageHasADocComment: every Go package of the module has a
// package doc comment that starts as Go's convention has it, "Package x"
// (or "Command x" for a main package).
func TestEveryPackageHasADocComment(t *testing.T) {
	pkgs := modulePackages(t)
	if len(pkgs) < 10 {
		t.Fatalf("found only %d packages under %s: the walk is broken", len(pkgs), root)
	}
	for _, p := range pkgs {
		want := "Package " + p.name + " "
		if p.name == "main" {
			want = "Command "
		}
		switch {
		case p.doc == "":
			t.Errorf("%s: package %s has no package doc comment", p.dir, p.name)
		case !strings.HasPrefix(p.doc, want):
			t.Errorf("%s: the package doc comment of %s starts %q, want %q…", p.dir, p.name, firstLine(p.doc), want)
		}
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
