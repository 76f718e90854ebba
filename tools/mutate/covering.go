package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// testName matches the names go test -list prints for tests, examples and
// fuzz targets (benchmarks never run without -bench).
var testName = regexp.MustCompile(`^(Test|Example|Fuzz)[^ ]*$`)

// coveringTests returns the tests of t's package (in the module copy src)
// that run at least one statement of files: each test runs alone, as the
// mutants' runs will (with -short when t.Short), under a coverage build of
// the package. A test that fails on the code as it is stops make mutate,
// since it would kill every mutant.
func coveringTests(ctx context.Context, src, work string, t target, files []string, workers int) ([]string, map[string][]block, error) {
	bin := filepath.Join(work, strings.ReplaceAll(t.Dir, "/", "_")+".cover.test")
	if _, err := goOutput(ctx, src, []string{goflags("-trimpath")}, "test", "-c", "-cover", "-covermode=set", "-coverpkg=./"+t.Dir, "-o", bin, "./"+t.Dir); err != nil {
		return nil, nil, err
	}
	dir := filepath.Join(src, t.Dir)
	list := exec.CommandContext(ctx, bin, "-test.list", ".")
	list.Dir = dir
	out, err := list.Output()
	if err != nil {
		return nil, nil, fmt.Errorf("%s -test.list: %w", bin, err)
	}
	var names []string
	for _, l := range strings.Split(string(out), "\n") {
		if testName.MatchString(l) {
			names = append(names, l)
		}
	}
	inScope := map[string]bool{}
	for _, f := range files {
		inScope[f] = true
	}
	covers := make([][]block, len(names))
	errs := make([]error, len(names))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				covers[i], errs[i] = testCovers(ctx, bin, dir, work, names[i], t.Short, inScope)
			}
		})
	}
	for i := range names {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	var covering []string
	covered := map[string][]block{}
	for i, name := range names {
		if errs[i] != nil {
			return nil, nil, errs[i]
		}
		if len(covers[i]) > 0 {
			covering = append(covering, name)
		}
		for _, b := range covers[i] {
			k := t.Dir + "/" + path.Base(b.file)
			covered[k] = append(covered[k], b)
		}
	}
	return covering, covered, nil
}

// testCovers runs the one test name of the coverage binary bin in dir and
// returns the blocks it ran of the files in inScope (base names).
func testCovers(ctx context.Context, bin, dir, work, name string, short bool, inScope map[string]bool) ([]block, error) {
	prof, err := os.CreateTemp(work, "cover-*.out")
	if err != nil {
		return nil, err
	}
	prof.Close()
	defer os.Remove(prof.Name())
	args := []string{"-test.run", "^" + regexp.QuoteMeta(name) + "$", "-test.count=1", "-test.timeout=10m", "-test.coverprofile=" + prof.Name()}
	if short {
		args = append(args, "-test.short")
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%s fails without any mutant, so it would kill them all:\n%s", name, tail(string(out), 30))
	}
	f, err := os.Open(prof.Name())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	blocks, err := readProfile(f)
	return slices.DeleteFunc(blocks, func(b block) bool { return !inScope[path.Base(b.file)] }), err
}

// readProfile returns the blocks a coverage profile counts as run.
func readProfile(r io.Reader) ([]block, error) {
	var out []block
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		// github.com/mcrib/mcrib/controlloop/verdict.go:12.3,14.2 1 1
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.HasSuffix(rest, " 0") {
			continue
		}
		b := block{file: name}
		if _, err := fmt.Sscanf(rest, "%d.%d,%d.%d", &b.startLine, &b.startCol, &b.endLine, &b.endCol); err != nil {
			continue
		}
		out = append(out, b)
	}
	return out, sc.Err()
}

// runPattern is the -run pattern that selects exactly names.
func runPattern(names []string) string {
	if len(names) == 0 {
		return "^$"
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	return "^(" + strings.Join(quoted, "|") + ")$"
}
