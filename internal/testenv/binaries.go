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
// set, else <repo root>/bin/consul. It skips the test under -short (see
// SkipShort). When the binary is missing the test is skipped, or failed when
// the environment variable CI is set.
func ConsulBinary(t testing.TB) string {
	t.Helper()
	SkipShort(t, "Consul")
	path := os.Getenv("MCRIB_CONSUL_BIN")
	if path == "" {
		path = filepath.Join(RepoRoot(t), "bin", "consul")
	}
	if !isExecutable(path) {
		missing(t, "consul binary %s not found (run `make deps` or set MCRIB_CONSUL_BIN)", path)
	}
	return path
}

// MemcachedBinary returns the path of memcached, looked up as LookPath does.
// It skips the test under -short (see SkipShort). When memcached is missing
// the test is skipped, or failed when the environment variable CI is set.
func MemcachedBinary(t testing.TB) string {
	t.Helper()
	SkipShort(t, "memcached")
	return LookPath(t, "memcached", "run `make deps`")
}

// ChromiumBinary returns the path of Debian's chromium, looked up as
// LookPath does. It skips the test under -short (see SkipShort). When
// chromium is missing the test is skipped, or failed when the environment
// variable CI is set.
func ChromiumBinary(t testing.TB) string {
	t.Helper()
	SkipShort(t, "chromium")
	return LookPath(t, "chromium", "Debian package chromium; `make deps` installs it")
}

// LookPath returns the path of the program name, looked up in PATH and then
// in /usr/bin, /usr/sbin and /sbin (Debian's places, which a normal user's
// PATH may lack). When it is missing the test is skipped, or failed when
// the environment variable CI is set and go test does not run with -short;
// install says how to get it. It does not skip under -short by itself:
// small tools such as promtool or bash run in make check when they are
// there.
func LookPath(t testing.TB, name, install string) string {
	t.Helper()
	if path, err := exec.LookPath(name); err == nil {
		return path
	}
	for _, dir := range []string{"/usr/bin", "/usr/sbin", "/sbin"} {
		if path := filepath.Join(dir, name); isExecutable(path) {
			return path
		}
	}
	missing(t, "%s not found in PATH, /usr/bin, /usr/sbin or /sbin (%s)", name, install)
	return ""
}

// isExecutable reports whether path is a regular file with an execute bit.
func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// missing skips the test, or fails it when the environment variable CI is
// set, because something the test needs is absent. Under -short it skips
// even in CI: make check asks for what runs without installs.
func missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" && !testing.Short() {
		t.Fatalf("testenv: "+format+" (CI is set, so this is a failure, not a skip)", args...)
		return
	}
	t.Skipf("testenv: "+format, args...)
}
