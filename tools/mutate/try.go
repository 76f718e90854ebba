package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// tryOne runs the one mutant spec (dir/file.go:line:col:TYPE) against all
// the tests of its package (with -short where the scope says) and, when
// withDST, go test ./dst, in the module at root itself, and prints which
// killed it: the check that a new test kills the survivor it was written
// for.
func tryOne(ctx context.Context, root, spec string, withDST bool) error {
	parts := strings.Split(spec, ":")
	if len(parts) != 4 {
		return fmt.Errorf("-try %q: want dir/file.go:line:col:TYPE", spec)
	}
	line, err1 := strconv.Atoi(parts[1])
	col, err2 := strconv.Atoi(parts[2])
	if err1 != nil || err2 != nil {
		return fmt.Errorf("-try %q: line and column are numbers", spec)
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	dir, file := filepath.Split(parts[0])
	dir = filepath.Clean(dir)
	var t target
	for _, s := range scope {
		if s.Dir == dir {
			t = s
		}
	}
	if t.Dir == "" {
		return fmt.Errorf("-try %q: %s is not a package of the scope", spec, dir)
	}
	path := filepath.Join(root, dir, file)
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	mu, err := locate(b, line, col, parts[3])
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "mcrib-mutate-try-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	mutated := filepath.Join(work, file)
	if err := os.WriteFile(mutated, apply(b, mu), 0o644); err != nil {
		return err
	}
	overlay := filepath.Join(work, "overlay.json")
	data, _ := json.Marshal(map[string]map[string]string{"Replace": {path: mutated}})
	if err := os.WriteFile(overlay, data, 0o644); err != nil {
		return err
	}
	fmt.Printf("mutant %s: %q→%q\n", spec, mu.From, mu.To)
	common := []string{"-overlay=" + overlay, "-count=1", "-vet=off", "-timeout=3m"}
	args := clone(common)
	if t.Short {
		args = append(args, "-short")
	}
	ok, out, err := passes(ctx, root, nil, append(args, "./"+dir)...)
	if err != nil {
		return err
	}
	report := func(name string, ok bool, out string) {
		if ok {
			fmt.Printf("%s: pass (the mutant lives)\n", name)
		} else {
			fmt.Printf("%s: FAIL (killed)\n%s\n", name, out)
		}
	}
	report("go test ./"+dir, ok, out)
	if withDST {
		ok, out, err := passes(ctx, root, nil, append(common, "-skip="+killerSkip, "./"+killerPackage)...)
		if err != nil {
			return err
		}
		report("go test ./"+killerPackage, ok, out)
	}
	return nil
}
