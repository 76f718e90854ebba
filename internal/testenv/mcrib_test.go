package testenv

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeMcribEnv makes this test binary a stand-in for `mcrib serve`
// (TestFakeMcrib) in TestMcribProcess.
const fakeMcribEnv = "MCRIB_TESTENV_FAKE_MCRIB"

// TestMcribProcess runs a stand-in for `mcrib serve` (this test binary:
// /healthz answers on --listen, its command line goes to its output, and
// SIGTERM ends it with exit 0) through StartMcrib, and drives it through
// the handle every kind of process shares: healthy when StartMcrib
// returns; Pause stops it and Resume lets it go on; Restart, after
// AddFlags, runs it again on the same address with the new flags; Stop
// ends it with exit 0 and Kill with -1; Start brings it back.
func TestMcribProcess(t *testing.T) {
	SkipShort(t, "a stand-in for mcrib serve")
	path := filepath.Join(t.TempDir(), "mcrib")
	script := fmt.Sprintf("#!/bin/sh\nexec %q -test.run='^TestFakeMcrib$' -- \"$@\"\n", os.Args[0])
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	m := StartMcrib(t, McribOptions{ProgramOptions: ProgramOptions{Path: path, Args: []string{"--consul", "127.0.0.1:1"}, Env: []string{fakeMcribEnv + "=1"}}})
	if !m.Healthy() || m.PID() == 0 || m.Exited() {
		t.Fatalf("after StartMcrib: healthy %v, pid %d, exited %v; want a healthy running process", m.Healthy(), m.PID(), m.Exited())
	}
	if want := "serve --listen " + m.Addr + " --consul 127.0.0.1:1"; !strings.Contains(m.Output(), want) {
		t.Errorf("output %q: want the command line %q", m.Output(), want)
	}

	m.Pause(t)
	Eventually(t, 5*time.Second, "the stand-in stopped", m.Paused)
	if got := procState(m.PID()); got != "T" {
		t.Errorf("process state %q while paused, want T", got)
	}
	m.Resume(t)
	Eventually(t, 5*time.Second, "the stand-in running again", func() bool { return !m.Paused() && m.Healthy() })

	addr, pid := m.Addr, m.PID()
	m.AddFlags("--slots", "8")
	if code := m.Restart(t); code != 0 {
		t.Errorf("Restart: the SIGTERM ended the stand-in with %d, want 0", code)
	}
	if !m.Healthy() || m.PID() == pid || m.Addr != addr {
		t.Errorf("after Restart: healthy %v, pid %d (was %d), addr %s (was %s); want a new healthy process on the same address", m.Healthy(), m.PID(), pid, m.Addr, addr)
	}
	if out := m.Output(); strings.Count(out, "=== testenv start") != 2 || !strings.Contains(out, "--consul 127.0.0.1:1 --slots 8") {
		t.Errorf("output after Restart with --slots 8:\n%s", out)
	}

	if code := m.Stop(t); code != 0 || !m.Exited() || m.PID() != 0 {
		t.Errorf("Stop: exit %d, exited %v, pid %d; want 0, true, 0", code, m.Exited(), m.PID())
	}
	m.Start(t)
	m.Kill(t)
	if m.ExitCode() != -1 || m.Healthy() {
		t.Errorf("Kill: exit code %d, healthy %v; want -1 (a signal), not healthy", m.ExitCode(), m.Healthy())
	}
}

// TestFakeMcrib is the stand-in for `mcrib serve` of TestMcribProcess when
// its environment variable is set: it answers GET /healthz on --listen
// until SIGTERM, which ends it with exit 0.
func TestFakeMcrib(t *testing.T) {
	if os.Getenv(fakeMcribEnv) != "1" {
		t.Skip("the stand-in for mcrib serve of TestMcribProcess")
	}
	args := flag.Args() // serve --listen <addr> …
	if len(args) < 3 || args[0] != "serve" || args[1] != "--listen" {
		fmt.Fprintf(os.Stderr, "stand-in mcrib: want serve --listen <addr> …, not %q\n", args)
		os.Exit(2)
	}
	fmt.Println(strings.Join(args, " "))
	ln, err := net.Listen("tcp", args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
		}
	}))
	<-term
	os.Exit(0)
}
