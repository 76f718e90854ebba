package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// block is a run of statements a coverage profile counts.
type block struct {
	file                                 string // as the profile names it
	startLine, startCol, endLine, endCol int
}

// covers reports whether one of blocks holds line:col.
func covers(blocks []block, line, col int) bool {
	for _, b := range blocks {
		if b.holds(line, col) {
			return true
		}
	}
	return false
}

func (b block) holds(line, col int) bool {
	if line < b.startLine || line > b.endLine {
		return false
	}
	if line == b.startLine && col < b.startCol {
		return false
	}
	return line != b.endLine || col < b.endCol
}

// dstCoverage runs the dst package's tests once under a coverage build of
// the scope's packages and returns the blocks they ran, by "dir/file".
func dstCoverage(ctx context.Context, src, work string, targets []target) (map[string][]block, error) {
	var pkgs []string
	for _, t := range targets {
		pkgs = append(pkgs, "./"+t.Dir)
	}
	prof := filepath.Join(work, "dst.cover.out")
	if _, err := goOutput(ctx, src, []string{goflags("-trimpath")}, "test", "-count=1", "-covermode=set", "-coverpkg="+strings.Join(pkgs, ","), "-coverprofile="+prof, "-skip="+killerSkip, "./"+killerPackage); err != nil {
		return nil, fmt.Errorf("dst fails without any mutant: %w", err)
	}
	mod, err := modulePath(src)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(prof)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	blocks, err := readProfile(f)
	covered := map[string][]block{}
	for _, b := range blocks {
		k := strings.TrimPrefix(b.file, mod+"/")
		covered[k] = append(covered[k], b)
	}
	return covered, err
}

// modulePath reads the module path of src/go.mod.
func modulePath(src string) (string, error) {
	b, err := os.ReadFile(filepath.Join(src, "go.mod"))
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`), nil
		}
	}
	return "", fmt.Errorf("%s/go.mod names no module", src)
}

// secondPass decides every viable mutant the package's tests did not kill:
// one gremlins timed out, or never ran because it sits in a package-level
// declaration (coverage counts no statement there), runs against the
// package's tests again; then every one still alive whose line the dst
// run covers (or that is package-level) runs against go test ./dst. It
// returns how many go test runs it made.
func secondPass(ctx context.Context, src, work string, targets []target, rep *report, ms []*mutant, pkgCov, dstCov map[string][]block, workers int) (int, error) {
	byDir := map[string]target{}
	for _, t := range targets {
		byDir[t.Dir] = t
	}
	covering := map[string][]string{}
	for _, p := range rep.Packages {
		covering[p.Dir] = p.Covering
	}
	var todo []*mutant
	for _, m := range ms {
		if m.Status == "" {
			todo = append(todo, m)
		}
	}
	var runs atomic.Int64
	var done atomic.Int64
	errs := make([]error, len(todo))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range jobs {
				m := todo[i]
				n, err := decide(ctx, src, work, w, byDir[m.Dir], covering[m.Dir], m, pkgCov, dstCov)
				runs.Add(int64(n))
				errs[i] = err
				fmt.Printf("mutate: [%d/%d] %s/%s:%d:%d %s %s→%s: %s\n", done.Add(1), len(todo), m.Dir, m.File, m.Line, m.Col, m.Type, m.From, m.To, m.Status)
			}
		})
	}
	for i := range todo {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return int(runs.Load()), err
		}
	}
	return int(runs.Load()), nil
}

// decide runs mutant m as secondPass says and sets its status. dstCov is
// nil when dst is not a killer.
func decide(ctx context.Context, src, work string, worker int, t target, covering []string, m *mutant, pkgCov, dstCov map[string][]block) (int, error) {
	path := filepath.Join(src, m.Dir, m.File)
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	mu, err := locate(b, m.Line, m.Col, m.Type)
	if err != nil {
		return 0, err
	}
	inFunc, anchor, err := where(b, mu.Offset)
	if err != nil {
		return 0, err
	}
	pkgLevel := !inFunc
	line, col := lineCol(b, anchor)
	key := m.Dir + "/" + m.File
	rerun := m.Gremlins == "TIMED OUT" || (m.Gremlins == "NOT COVERED" && (pkgLevel || covers(pkgCov[key], line, col)))
	dstCovers := dstCov != nil && (pkgLevel || covers(dstCov[key], line, col))
	if !rerun && !dstCovers {
		m.Status = map[bool]string{true: notCovered, false: lived}[m.Gremlins == "NOT COVERED"]
		return 0, nil
	}
	dir := filepath.Join(work, "overlay-"+strconv.Itoa(worker))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	mutated := filepath.Join(dir, m.File)
	if err := os.WriteFile(mutated, apply(b, mu), 0o644); err != nil {
		return 0, err
	}
	overlay := filepath.Join(dir, "overlay.json")
	data, _ := json.Marshal(map[string]map[string]string{"Replace": {path: mutated}})
	if err := os.WriteFile(overlay, data, 0o644); err != nil {
		return 0, err
	}
	common := []string{"-overlay=" + overlay, "-trimpath", "-vet=off", "-count=1", "-failfast"}
	runs := 0
	if rerun {
		args := append(clone(common), "-timeout=60s")
		if t.Short {
			args = append(args, "-short")
		}
		if !pkgLevel {
			args = append(args, "-run="+runPattern(covering))
		}
		ok, out, err := passes(ctx, src, nil, append(args, "./"+m.Dir)...)
		runs++
		if err != nil {
			return runs, err
		}
		if !ok {
			m.Status, m.Detail = killedByTests, out
			return runs, nil
		}
	}
	if dstCovers {
		ok, out, err := passes(ctx, src, nil, append(clone(common), "-timeout=2m", "-skip="+killerSkip, "./"+killerPackage)...)
		runs++
		if err != nil {
			return runs, err
		}
		if !ok {
			m.Status, m.Detail = killedByDST, out
			return runs, nil
		}
	}
	m.Status = lived
	return runs, nil
}

// clone returns a copy of s, to append to.
func clone(s []string) []string { return append([]string(nil), s...) }
