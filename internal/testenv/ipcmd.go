package testenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// ipBinary returns the path of iproute2's ip, looked up as LookPath does.
// When it is missing the test is skipped, or failed when the environment
// variable CI is set.
func ipBinary(t testing.TB) string {
	t.Helper()
	return LookPath(t, "ip", "Debian package iproute2")
}

// requireRoot skips the test, or fails it when the environment variable CI
// is set, unless the test binary runs as root: network namespaces, bridges
// and veth pairs need CAP_NET_ADMIN and CAP_SYS_ADMIN.
func requireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		missing(t, "a test bed of hosts needs root (network namespaces and a bridge); run the test as root")
	}
}

// runIP runs ip with args and returns an error holding its output when it
// fails.
func runIP(ip string, args ...string) error {
	out, err := exec.Command(ip, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("running ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// runIPBatch runs the ip commands lines (one per line, without the leading
// "ip") in one process, after the global options opts, with -force so that
// a failing line does not stop the others. It returns an error holding ip's
// output when any line failed.
func runIPBatch(ip string, opts []string, lines []string) error {
	if len(lines) == 0 {
		return nil
	}
	args := append(append([]string(nil), opts...), "-force", "-batch", "-")
	cmd := exec.Command(ip, args...)
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("running ip %s with %q: %w: %s", strings.Join(args, " "), lines, err, bytes.TrimSpace(out))
	}
	return nil
}
