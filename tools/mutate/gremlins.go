package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// gremlinsOutput is the part of gremlins' -o file that make mutate reads.
type gremlinsOutput struct {
	Files []struct {
		Filename  string `json:"file_name"`
		Mutations []struct {
			Line   int    `json:"line"`
			Column int    `json:"column"`
			Type   string `json:"type"`
			Status string `json:"status"`
		} `json:"mutations"`
	} `json:"files"`
}

// scopeFiles returns the base names of the non-test Go files of t's
// package (in the module copy src) that t's patterns match, and those
// that they do not.
func scopeFiles(src string, t target) (in, out []string, err error) {
	entries, err := os.ReadDir(filepath.Join(src, t.Dir))
	if err != nil {
		return nil, nil, err
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		matched := false
		for _, p := range t.Files {
			if ok, _ := path.Match(p, name); ok {
				matched = true
			}
		}
		if matched {
			in = append(in, name)
		} else {
			out = append(out, name)
		}
	}
	return in, out, nil
}

// runGremlins runs gremlins over t's package in the module copy src: the
// mutants of the files in scope, each killed or not by the covering tests
// alone (-run), -short when t.Short, the race detector and vet off. The
// flags reach gremlins' go test runs through GOFLAGS, which gremlins
// passes on; -trimpath lets its copies of the module share the build
// cache. It returns the mutants gremlins found, with gremlins' statuses.
func runGremlins(ctx context.Context, bin, src, work string, t target, excluded, covering []string, workers, coefficient int) ([]*mutant, error) {
	out := filepath.Join(work, strings.ReplaceAll(t.Dir, "/", "_")+".gremlins.json")
	flags := []string{"-trimpath", "-vet=off", "-count=1", "-run=" + runPattern(covering)}
	if t.Short {
		flags = append(flags, "-short")
	}
	args := []string{"unleash", "--workers", strconv.Itoa(workers), "--timeout-coefficient", strconv.Itoa(coefficient), "-o", out, "-S", "lt"}
	args = append(args, mutators...)
	// Files of the package outside the scope, and anything in a
	// subdirectory (testdata), are left alone.
	args = append(args, "-E", "/")
	for _, name := range excluded {
		args = append(args, "-E", "^"+regexp.QuoteMeta(name)+"$")
	}
	args = append(args, "./"+t.Dir)
	// gremlins stops when its coverage run fails, which a test that waits
	// on real time can under load: it gets three tries.
	for try := 1; ; try++ {
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Dir = src
		cmd.Env = append(os.Environ(), goflags(flags...), "TMPDIR="+work)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		err := cmd.Run()
		if err == nil {
			break
		}
		if try == 3 || ctx.Err() != nil {
			return nil, fmt.Errorf("gremlins on %s: %w", t.Dir, err)
		}
		fmt.Printf("mutate: gremlins on %s failed (%v); again\n", t.Dir, err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	var res gremlinsOutput
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, fmt.Errorf("reading %s: %w", out, err)
	}
	var ms []*mutant
	for _, f := range res.Files {
		for _, m := range f.Mutations {
			ms = append(ms, &mutant{Dir: t.Dir, File: f.Filename, Line: m.Line, Col: m.Column, Type: m.Type, Gremlins: m.Status})
		}
	}
	return ms, nil
}
