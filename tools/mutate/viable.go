package main

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// checker type-checks a package with one of its files replaced, to tell a
// mutant that does not compile from one the tests kill. gremlins v0.6.0
// cannot: it takes go test's exit status 2 for "does not build", but go
// test exits 1 on a build failure as on a failed test, so it would count
// a string's + turned into - as killed.
type checker struct {
	path    string               // the package's import path
	fset    *token.FileSet       // positions of files
	files   map[string]*ast.File // parsed files by base name
	order   []string             // base names of the package's Go files
	exports map[string]string    // export data file by import path
	imp     types.Importer       // reads exports, shared by every check
}

// newChecker loads the package in dir (of the module at src): its file
// list and the export data of everything it imports, which go list
// -export builds.
func newChecker(ctx context.Context, src, dir string) (*checker, error) {
	out, err := goOutput(ctx, src, nil, "list", "-f", "{{.ImportPath}}\n{{join .GoFiles \"\\n\"}}", "./"+dir)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	c := &checker{path: lines[0], fset: token.NewFileSet(), files: map[string]*ast.File{}, order: lines[1:], exports: map[string]string{}}
	for _, name := range c.order {
		f, err := parser.ParseFile(c.fset, filepath.Join(src, dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		c.files[name] = f
	}
	out, err = goOutput(ctx, src, nil, "list", "-export", "-deps", "-f", "{{.ImportPath}}={{.Export}}", "./"+dir)
	if err != nil {
		return nil, err
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok && v != "" {
			c.exports[k] = v
		}
	}
	c.imp = importer.ForCompiler(c.fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := c.exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
	return c, nil
}

// check reports nil when the package compiles with file name's source
// replaced by src, and the first type error otherwise.
func (c *checker) check(name string, src []byte) error {
	f, err := parser.ParseFile(c.fset, name, bytes.NewReader(src), parser.SkipObjectResolution)
	if err != nil {
		return err
	}
	files := make([]*ast.File, 0, len(c.order))
	for _, n := range c.order {
		if n == name {
			files = append(files, f)
		} else {
			files = append(files, c.files[n])
		}
	}
	var first error
	conf := types.Config{
		Importer: c.imp,
		Error: func(err error) {
			if first == nil {
				first = err
			}
		},
	}
	_, _ = conf.Check(c.path, c.fset, files, nil)
	return first
}
