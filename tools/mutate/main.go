// Command mutate is make mutate: mutation testing of mcrib's decision code
// (docs/testing.md#mutation-testing).
//
// It copies the module's files (git ls-files, bin/ left out) to a work
// directory, so that edits made during the run change nothing, and then,
// for each package of the scope (scope.go):
//
//  1. finds the package's tests that run a statement of the files in
//     scope, each test run alone under a coverage build;
//  2. runs gremlins (bin/gremlins, built from this module's go.mod) over
//     those files, each mutant against exactly those tests, -short where
//     the package's integration tests would start Consul;
//  3. type-checks every mutant, since gremlins counts one that does not
//     compile as killed.
//
// Then every viable mutant the package's tests left alive (or timed out,
// or never ran because it sits in a package-level declaration) runs
// against the deterministic simulation, go test ./dst as make test runs it,
// when that run covers the mutant's line. A mutant killed by either is
// killed. The score is killed / (viable mutants), not-covered ones counted
// as living. The report goes to bench/mutate/ (report.md, mutants.json)
// and its table to standard output.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

// mutant is one mutant and what became of it.
type mutant struct {
	Dir      string `json:"dir"`  // package directory
	File     string `json:"file"` // base name in Dir
	Line     int    `json:"line"`
	Col      int    `json:"col"`
	Type     string `json:"type"`     // gremlins' mutant type
	From     string `json:"from"`     // the token in the source
	To       string `json:"to"`       // the token the mutant puts there
	Source   string `json:"source"`   // the line of the source, trimmed
	Gremlins string `json:"gremlins"` // gremlins' status
	Status   string `json:"status"`   // the final status, one of the status constants
	Detail   string `json:"detail,omitempty"`
}

// The final statuses of a mutant.
const (
	killedByTests = "killed by the package's tests"
	killedByDST   = "killed by dst"
	lived         = "lived"
	notCovered    = "not covered"
	notViable     = "not viable"
)

func main() {
	root := flag.String("root", ".", "the root of the github.com/mcrib/mcrib module")
	gremlins := flag.String("gremlins", "bin/gremlins", "the gremlins binary (relative to -root, or absolute)")
	out := flag.String("out", "bench/mutate", "the report's directory (relative to -root, or absolute)")
	workers := flag.Int("workers", runtime.NumCPU(), "mutants tested at once")
	coefficient := flag.Int("timeout-coefficient", 30, "a mutant's go test may take this many times gremlins' coverage run before gremlins calls it timed out (the second pass runs those again: a spurious timeout under load costs time, not a wrong status)")
	only := flag.String("pkgs", "", "comma-separated package directories of the scope to run (default: all of it)")
	noDST := flag.Bool("no-dst", false, "skip the dst pass (the package's tests alone)")
	keep := flag.Bool("keep", false, "keep the work directory")
	merge := flag.Bool("merge", false, "with -pkgs: keep the other packages' mutants from the report in -out and replace only those of -pkgs")
	try := flag.String("try", "", "run one mutant, dir/file.go:line:col:TYPE as the report names it, against its package's tests and dst, and say which kill it")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *try != "" {
		if err := tryOne(ctx, *root, *try, !*noDST); err != nil {
			fmt.Fprintln(os.Stderr, "mutate:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(ctx, options{root: *root, gremlins: *gremlins, out: *out, workers: *workers, coefficient: *coefficient, only: *only, dst: !*noDST, keep: *keep, merge: *merge}); err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(1)
	}
}

// options are main's flags.
type options struct {
	root, gremlins, out  string
	workers, coefficient int
	only                 string
	dst, keep, merge     bool
}

func run(ctx context.Context, o options) error {
	start := time.Now()
	root, err := filepath.Abs(o.root)
	if err != nil {
		return err
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(root, p)
	}
	work, err := os.MkdirTemp("", "mcrib-mutate-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Println("mutate: work directory", work)
	} else {
		defer os.RemoveAll(work)
	}
	src := filepath.Join(work, "src")
	if err := copyModule(root, src); err != nil {
		return err
	}

	targets := scope
	if o.only != "" {
		want := strings.Split(o.only, ",")
		targets = slices.DeleteFunc(slices.Clone(scope), func(t target) bool { return !slices.Contains(want, t.Dir) })
		if len(targets) == 0 {
			return fmt.Errorf("-pkgs %q names no package of the scope", o.only)
		}
	}

	rep := &report{Started: start, Workers: o.workers, Commit: describe(root)}
	pkgCov := map[string][]block{} // what the covering tests run, by dir/file
	var all []*mutant
	for _, t := range targets {
		p := phase(fmt.Sprintf("%s: covering tests", t.Dir))
		in, excluded, err := scopeFiles(src, t)
		if err != nil {
			return err
		}
		covering, cov, err := coveringTests(ctx, src, work, t, in, o.workers)
		if err != nil {
			return err
		}
		maps.Copy(pkgCov, cov)
		p.done(fmt.Sprintf("%d tests", len(covering)))
		rep.Packages = append(rep.Packages, pkgReport{Dir: t.Dir, Files: in, Short: t.Short, Covering: covering})

		p = phase(fmt.Sprintf("%s: gremlins", t.Dir))
		ms, err := runGremlins(ctx, abs(o.gremlins), src, work, t, excluded, covering, o.workers, o.coefficient)
		if err != nil {
			return err
		}
		p.done(fmt.Sprintf("%d mutants", len(ms)))
		if err := classify(ctx, src, t, ms); err != nil {
			return err
		}
		all = append(all, ms...)
	}
	var dstCov map[string][]block
	if o.dst {
		p := phase("dst: coverage")
		if dstCov, err = dstCoverage(ctx, src, work, targets); err != nil {
			return err
		}
		p.done("")
	}
	p := phase("second runs (dst, and what gremlins did not run)")
	n, err := secondPass(ctx, src, work, targets, rep, all, pkgCov, dstCov, o.workers)
	if err != nil {
		return err
	}
	p.done(fmt.Sprintf("%d go test runs", n))
	rep.DST = o.dst
	rep.Elapsed = time.Since(start)
	rep.Mutants = all
	if o.merge {
		if err := rep.mergeInto(abs(o.out)); err != nil {
			return err
		}
	}
	if err := rep.write(abs(o.out)); err != nil {
		return err
	}
	rep.table(os.Stdout)
	fmt.Printf("mutate: report in %s (%s)\n", abs(o.out), rep.Elapsed.Round(time.Second))
	return nil
}

// classify fills in each mutant's tokens and source line, marks those
// that do not compile as not viable and those the package's tests killed
// as killed; the others are left for the second pass.
func classify(ctx context.Context, src string, t target, ms []*mutant) error {
	c, err := newChecker(ctx, src, t.Dir)
	if err != nil {
		return err
	}
	sources := map[string][]byte{}
	for _, m := range ms {
		b, ok := sources[m.File]
		if !ok {
			if b, err = os.ReadFile(filepath.Join(src, t.Dir, m.File)); err != nil {
				return err
			}
			sources[m.File] = b
		}
		mu, err := locate(b, m.Line, m.Col, m.Type)
		if err != nil {
			return fmt.Errorf("%s/%s: %w", t.Dir, m.File, err)
		}
		m.From, m.To = mu.From, mu.To
		m.Source = strings.TrimSpace(strings.SplitN(string(b[mu.Offset-m.Col+1:]), "\n", 2)[0])
		if m.Gremlins == "NOT VIABLE" {
			m.Status = notViable
			continue
		}
		if err := c.check(m.File, apply(b, mu)); err != nil {
			m.Status, m.Detail = notViable, err.Error()
			continue
		}
		if m.Gremlins == "KILLED" {
			m.Status = killedByTests
		}
	}
	return nil
}

// copyModule copies the files git knows of under root (tracked, or new and
// not ignored), bin/ left out, to dst.
func copyModule(root, dst string) error {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("git ls-files in %s: %w", root, err)
	}
	for _, name := range strings.Split(string(out), "\x00") {
		if name == "" || strings.HasPrefix(name, "bin/") {
			continue
		}
		if err := copyFile(filepath.Join(root, name), filepath.Join(dst, name)); err != nil {
			if os.IsNotExist(err) {
				continue // deleted in the work tree
			}
			return err
		}
	}
	return nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil || fi.IsDir() {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	o, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(o, in); err != nil {
		o.Close()
		return err
	}
	return o.Close()
}

// timer prints how long a phase took.
type timer struct {
	name  string
	start time.Time
}

func phase(name string) timer {
	fmt.Printf("mutate: %s ...\n", name)
	return timer{name, time.Now()}
}

func (t timer) done(what string) {
	if what != "" {
		what = ", " + what
	}
	fmt.Printf("mutate: %s done in %s%s\n", t.name, time.Since(t.start).Round(time.Second), what)
}
