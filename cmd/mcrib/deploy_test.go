package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The systemd files of deploy/systemd, relative to this package.
const (
	unitFile = "../../deploy/systemd/mcrib.service"
	envFile  = "../../deploy/systemd/mcrib.env"
)

// readEnvFile returns the variables of an environment file, set and
// commented out ("#NAME=value") alike, in order.
func readEnvFile(t *testing.T, path string) (set, commented map[string]string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	set, commented = map[string]string{}, map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		target := set
		if rest, ok := strings.CutPrefix(line, "#"); ok {
			line, target = rest, commented
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			continue
		}
		target[k] = v
	}
	return set, commented
}

// TestSystemdEnvFileNamesRealFlags checks that every MCRIB_ variable of the
// environment file is a `mcrib serve` flag (or the token), and that the
// file as shipped makes a valid configuration.
func TestSystemdEnvFileNamesRealFlags(t *testing.T) {
	set, commented := readEnvFile(t, envFile)
	flags := map[string]bool{"MCRIB_TOKEN": true}
	for _, f := range serveFlags() {
		flags["MCRIB_"+strings.ToUpper(strings.ReplaceAll(f.name, "-", "_"))] = true
	}
	for _, vars := range []map[string]string{set, commented} {
		for k := range vars {
			if strings.HasPrefix(k, "MCRIB_") && !flags[k] {
				t.Errorf("%s sets %s, which is no flag of mcrib serve", envFile, k)
			}
		}
	}
	if _, err := parseServeConfig(nil, func(k string) string { return set[k] }); err != nil {
		t.Errorf("the shipped %s is not a valid configuration: %v", envFile, err)
	}
}

// TestSystemdUnit checks the unit's command and sandboxing, and has
// systemd-analyze verify it when it is installed (no skip: the checks of
// the text stand alone without it).
func TestSystemdUnit(t *testing.T) {
	data, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	unit := string(data)
	for _, want := range []string{
		"ExecStart=/usr/local/bin/mcrib serve\n", "EnvironmentFile=/etc/mcrib/mcrib.env\n",
		"RestartPreventExitStatus=2\n", "DynamicUser=yes\n", "NoNewPrivileges=yes\n", "ProtectSystem=strict\n",
		"ProtectHome=yes\n", "PrivateTmp=yes\n", "PrivateDevices=yes\n", "CapabilityBoundingSet=\n",
		"RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX\n", "SystemCallFilter=@system-service\n",
		"MemoryDenyWriteExecute=yes\n", "StateDirectory=mcrib\n",
	} {
		if !strings.Contains(unit, want) {
			t.Errorf("%s lacks %q", unitFile, strings.TrimSpace(want))
		}
	}
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze is not installed; the unit had the checks above only")
		return
	}
	// Verify a copy whose binary and environment file exist here.
	env, err := filepath.Abs(envFile)
	if err != nil {
		t.Fatal(err)
	}
	unit = strings.Replace(unit, "/usr/local/bin/mcrib serve", "/bin/true serve", 1)
	unit = strings.Replace(unit, "/etc/mcrib/mcrib.env", env, 1)
	copyPath := filepath.Join(t.TempDir(), "mcrib.service")
	if err := os.WriteFile(copyPath, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, analyze, "verify", copyPath).CombinedOutput(); err != nil || len(out) != 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
