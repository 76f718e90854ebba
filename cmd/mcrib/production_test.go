package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcrib/mcrib/internal/testenv"
)

// productionPage is the walk-through "production on three hosts", relative
// to this package. Its shell blocks marked <!-- production-test: NAME -->
// are run by the tests below (and the consul-acl one by e2e), so that the
// page stays true.
const productionPage = "../../docs/production.md"

// pageBlock returns the shell block that follows the marker
// <!-- production-test: name --> in the production page.
func pageBlock(t *testing.T, name string) string {
	t.Helper()
	page, err := os.ReadFile(productionPage)
	if err != nil {
		t.Fatal(err)
	}
	marker := "<!-- production-test: " + name + " -->\n```sh\n"
	_, rest, ok := strings.Cut(string(page), marker)
	if !ok {
		t.Fatalf("%s has no block marked %q", productionPage, marker)
	}
	block, _, ok := strings.Cut(rest, "\n```\n")
	if !ok {
		t.Fatalf("the block %q of %s does not end", name, productionPage)
	}
	return block + "\n"
}

// runShell runs script with bash -eu -o pipefail in dir with the extra
// environment env, and fails the test with its output when it fails.
func runShell(t *testing.T, dir, script string, env ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-eu", "-o", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("running\n%s\nin %s: %v\n%s", script, dir, err, out)
	}
}

// hostCheckout returns a directory laid out as the production page expects
// on a host: bin/mcrib (a stand-in, mode 0700 so that the install must set
// the mode) and deploy/ (the repository's).
func hostCheckout(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "mcrib"), []byte("#!/bin/sh\nexit 0\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	deploy, err := filepath.Abs("../../deploy")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(deploy, filepath.Join(dir, "deploy")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// checkModes checks that each path (relative to root) exists with its mode.
func checkModes(t *testing.T, root string, want map[string]fs.FileMode) {
	t.Helper()
	for path, mode := range want {
		fi, err := os.Lstat(filepath.Join(root, path))
		switch {
		case err != nil:
			t.Errorf("%s: %v", path, err)
		case fi.Mode().Type() != mode.Type() || fi.Mode().Perm() != mode.Perm():
			t.Errorf("%s has mode %v, want %v", path, fi.Mode(), mode)
		}
	}
}

// TestSystemdUnitInstallSteps runs the install lines of the unit's header
// comment, each destination moved under a scratch root, and checks that
// the files land with their modes (an `install` without -D into a missing
// directory fails).
func TestSystemdUnitInstallSteps(t *testing.T) {
	testenv.LookPath(t, "install", "Debian package coreutils")
	data, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	var script []string
	for line := range strings.Lines(string(data)) {
		cmd, ok := strings.CutPrefix(strings.TrimSpace(line), "#   install ")
		if !ok {
			continue
		}
		args := strings.Fields(cmd)
		dest := args[len(args)-1]
		if !strings.HasPrefix(dest, "/") {
			t.Fatalf("install line %q: the destination is not an absolute path", line)
		}
		args[len(args)-1] = filepath.Join(root, dest)
		script = append(script, "install "+strings.Join(args, " "))
	}
	if len(script) != 3 {
		t.Fatalf("%s names %d install steps, want 3 (binary, unit, environment file):\n%s", unitFile, len(script), data)
	}
	runShell(t, hostCheckout(t), strings.Join(script, "\n"))
	checkModes(t, root, map[string]fs.FileMode{
		"usr/local/bin/mcrib":              0o755,
		"etc/systemd/system/mcrib.service": 0o644,
		"etc/mcrib/mcrib.env":              0o600,
		"etc/systemd/system":               fs.ModeDir | 0o755,
		"etc/mcrib":                        fs.ModeDir | 0o755,
		"usr/local/bin":                    fs.ModeDir | 0o755,
	})
}

// TestProductionInstall runs the production page's secrets and install
// steps for the host mcrib-a in a scratch root (DESTDIR), then checks that
// every file lands with its mode, that the unit with its drop-in verifies,
// and that the environment file, with the credentials where systemd would
// put them, is a configuration mcrib serve accepts: listening on the
// host's address, with the token and TLS.
func TestProductionInstall(t *testing.T) {
	testenv.LookPath(t, "bash", "Debian package bash")
	testenv.LookPath(t, "openssl", "Debian package openssl")
	testenv.LookPath(t, "install", "Debian package coreutils")
	work := hostCheckout(t)
	runShell(t, work, pageBlock(t, "secrets"))
	// The Consul tokens come from the page's consul-acl step, which e2e
	// runs against a real Consul; a stand-in here.
	if err := os.WriteFile(filepath.Join(work, "secrets", "consul-token-mcrib-a"), []byte("7e0d1c5e-1a3b-4c5d-8e9f-0a1b2c3d4e5f\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	runShell(t, work, pageBlock(t, "install"), "DESTDIR="+root)

	checkModes(t, root, map[string]fs.FileMode{
		"usr/local/bin/mcrib":                                 0o755,
		"etc/systemd/system/mcrib.service":                    0o644,
		"etc/systemd/system/mcrib.service.d/credentials.conf": 0o644,
		"etc/mcrib":              fs.ModeDir | 0o700,
		"etc/mcrib/mcrib.env":    0o600,
		"etc/mcrib/token":        0o600,
		"etc/mcrib/tls.crt":      0o644,
		"etc/mcrib/tls.key":      0o600,
		"etc/mcrib/consul-token": 0o600,
	})

	unit := filepath.Join(root, "etc/systemd/system/mcrib.service")
	dropIn := filepath.Join(root, "etc/systemd/system/mcrib.service.d/credentials.conf")
	checkUnitFile(t, unit)
	creds := checkUnitFile(t, dropIn)["Service.LoadCredential"]
	if len(creds) != 4 {
		t.Errorf("%s loads %d credentials, want 4 (token, tls.crt, tls.key, consul-token)", dropIn, len(creds))
	}
	verifyUnit(t, unit, dropIn, filepath.Join(root, "etc/mcrib/mcrib.env"))

	// systemd's LoadCredential=ID:PATH, done by hand: PATH (which must
	// exist) copied to /run/credentials/mcrib.service/ID.
	credDir := filepath.Join(root, "run/credentials/mcrib.service")
	if err := os.MkdirAll(credDir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, c := range creds {
		id, path, ok := strings.Cut(c, ":")
		if !ok || !strings.HasPrefix(path, "/") {
			t.Fatalf("LoadCredential=%s is not ID:/absolute/path", c)
		}
		b, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatalf("LoadCredential=%s: %v (the unit would not start)", c, err)
		}
		if err := os.WriteFile(filepath.Join(credDir, id), b, 0o400); err != nil {
			t.Fatal(err)
		}
	}

	env := parseEnvFile(t, filepath.Join(root, "etc/mcrib/mcrib.env"))
	for k, v := range env {
		if strings.HasPrefix(v, "/run/credentials/") {
			if _, err := os.Stat(filepath.Join(root, v)); err != nil {
				t.Errorf("%s=%s names no credential of the drop-in: %v", k, v, err)
			}
			env[k] = filepath.Join(root, v)
		}
	}
	cfg, err := parseServeConfig(nil, func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("the installed environment file is no valid configuration: %v", err)
	}
	if cfg.Listen != "10.0.0.11:7070" || cfg.Token == "" || cfg.TLSCert == "" || cfg.TLSKey == "" {
		t.Errorf("configuration listens on %q with token %v, TLS cert %q key %q; want 10.0.0.11:7070, a token and TLS",
			cfg.Listen, cfg.Token != "", cfg.TLSCert, cfg.TLSKey)
	}
	if env["CONSUL_HTTP_TOKEN_FILE"] == "" {
		t.Errorf("the environment file gives Consul no token file")
	}

	// One certificate for the three replicas: each one's address verifies.
	certPEM, err := os.ReadFile(filepath.Join(root, "etc/mcrib/tls.crt"))
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(certPEM)
	if blk == nil {
		t.Fatal("tls.crt holds no PEM block")
	}
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	for _, ip := range []string{"10.0.0.11", "10.0.0.12", "10.0.0.13"} {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: ip, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("the certificate does not verify for %s: %v", ip, err)
		}
	}
}

// unitKey is a line "Key=value" of a systemd unit file.
var unitKey = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*=`)

// checkUnitFile parses a systemd unit file or drop-in structurally
// (sections, then Key=value lines, comments and blank lines) and returns
// its values by "Section.Key", in order.
func checkUnitFile(t *testing.T, path string) map[string][]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	values := map[string][]string{}
	section := ""
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
		case section == "":
			t.Errorf("%s:%d: %q comes before any section", path, i+1, line)
		case !unitKey.MatchString(line):
			t.Errorf("%s:%d: %q is no Key=value line", path, i+1, line)
		default:
			k, v, _ := strings.Cut(line, "=")
			values[section+"."+k] = append(values[section+"."+k], v)
		}
	}
	return values
}

// verifyUnit has systemd-analyze verify the unit with its drop-in, when
// systemd-analyze is installed (the structural check of checkUnitFile
// stands alone otherwise): on a copy whose binary is /bin/true and whose
// environment file is env, since verify checks that both exist.
func verifyUnit(t *testing.T, unit, dropIn, env string) {
	t.Helper()
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Logf("systemd-analyze is not installed; the unit had the structural check only")
		return
	}
	data, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(data), "/usr/local/bin/mcrib serve", "/bin/true serve", 1)
	text = strings.Replace(text, "/etc/mcrib/mcrib.env", env, 1)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "mcrib.service.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	drop, err := os.ReadFile(dropIn)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mcrib.service.d", filepath.Base(dropIn)), drop, 0o644); err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(dir, "mcrib.service")
	if err := os.WriteFile(copyPath, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, analyze, "verify", copyPath).CombinedOutput(); err != nil || len(out) != 0 {
		t.Errorf("systemd-analyze verify of the unit with its drop-in: %v\n%s", err, out)
	}
}

// envLine is a line NAME=value of an environment file.
var envLine = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// parseEnvFile reads a systemd environment file strictly: every line is
// blank, a comment or NAME=value (unquoted, as mcrib.env writes them), and
// a later line wins over an earlier one, as systemd reads it.
func parseEnvFile(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case !envLine.MatchString(line):
			t.Errorf("%s:%d: %q is no NAME=value line", path, n, line)
		case strings.ContainsAny(line, `"'\`):
			t.Errorf("%s:%d: %q has quotes or backslashes, which systemd would read differently from a shell", path, n, line)
		default:
			k, v, _ := strings.Cut(line, "=")
			env[k] = v
		}
	}
	return env
}
