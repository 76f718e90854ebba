package testenv

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// modulePath is the module whose go.mod marks the repository root.
const modulePath = "github.com/mcrib/mcrib"

// RepoRoot returns the directory holding the go.mod of the
// github.com/mcrib/mcrib module, searching upwards from the working
// directory. It fails the test when there is none.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("testenv: getting working directory: %v", err)
	}
	for {
		if moduleOf(filepath.Join(dir, "go.mod")) == modulePath {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("testenv: no go.mod of module %s above the working directory", modulePath)
		}
		dir = parent
	}
}

// moduleOf returns the module path declared in the go.mod file at path, or ""
// when the file cannot be read or declares none.
func moduleOf(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`)
		}
	}
	return ""
}

// ConsulBinary returns the path of the Consul binary: $MCRIB_CONSUL_BIN when
// set, else <repo root>/bin/consul. When it is missing the test is skipped, or
// failed when the environment variable CI is set.
func ConsulBinary(t testing.TB) string {
	t.Helper()
	path := os.Getenv("MCRIB_CONSUL_BIN")
	if path == "" {
		path = filepath.Join(RepoRoot(t), "bin", "consul")
	}
	if !isExecutable(path) {
		missing(t, "consul binary %s not found (run `make deps` or set MCRIB_CONSUL_BIN)", path)
	}
	return path
}

// MemcachedBinary returns the path of memcached, looked up in PATH and then
// at /usr/bin/memcached. When it is missing the test is skipped, or failed
// when the environment variable CI is set.
func MemcachedBinary(t testing.TB) string {
	t.Helper()
	if path, err := exec.LookPath("memcached"); err == nil {
		return path
	}
	const fallback = "/usr/bin/memcached"
	if !isExecutable(fallback) {
		missing(t, "memcached not found in PATH or at %s (run `make deps`)", fallback)
	}
	return fallback
}

// isExecutable reports whether path is a regular file with an execute bit.
func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// missing skips the test, or fails it when the environment variable CI is
// set, because a required binary is absent.
func missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("testenv: "+format+" (CI is set, so this is a failure, not a skip)", args...)
		return
	}
	t.Skipf("testenv: "+format, args...)
}
