package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcrib/mcrib/internal/testenv"
)

// The local stack of `make run` (scripts/run-local.sh) is what a newcomer
// meets first, so the ways its terminal can end it are tested here as a
// person meets them: Ctrl-C on a real terminal (a pseudo-terminal, so that
// the kernel sends SIGINT to the terminal's foreground process group, make
// and tee included), `make run 2>&1 | tee run.log`, the terminal closed
// (SIGHUP), and SIGINT without any terminal. Each run must leave no process
// it started behind, by process ID, and exit as documented.

// runLocalReady is the line run-local.sh prints once everything answers.
const runLocalReady = "Press Ctrl-C to stop everything."

// runLocal is one run of the local stack in a shell of its own, as a
// terminal's shell would start it.
type runLocal struct {
	t      *testing.T
	dir    string // scratch directory: the log, the exit status
	mark   string // value of the environment variable every process of the run inherits
	cmd    *exec.Cmd
	pty    *os.File            // the terminal's master side; nil without a terminal
	out    *testenv.SyncBuffer // what the terminal (or the shell's stdout) showed
	done   chan struct{}       // closed when the shell has exited
	outEOF chan struct{}       // closed when the terminal's output is drained
}

// runLocalOptions says how a run is started.
type runLocalOptions struct {
	make     bool // through `make run` (else scripts/run-local.sh itself)
	tee      bool // piped into `tee run.log`, stderr included
	terminal bool // on a pseudo-terminal whose foreground group is the pipeline
	env      []string
}

// startRunLocal starts the local stack and waits until it is ready.
func startRunLocal(t *testing.T, o runLocalOptions) *runLocal {
	t.Helper()
	root := testenv.RepoRoot(t)
	consul := testenv.ConsulBinary(t)
	testenv.MemcachedBinary(t)
	for _, tool := range [][2]string{{"bash", "bash"}, {"curl", "curl"}, {"tee", "coreutils"}} {
		testenv.LookPath(t, tool[0], "Debian package "+tool[1])
	}
	if o.make {
		testenv.LookPath(t, "make", "Debian package make")
	}
	mcrib := mcribBinary(t)
	var b [8]byte
	rand.Read(b[:])
	r := &runLocal{t: t, dir: t.TempDir(), mark: hex.EncodeToString(b[:]), out: &testenv.SyncBuffer{},
		done: make(chan struct{}), outEOF: make(chan struct{})}

	what := "scripts/run-local.sh"
	if o.make {
		// deps and build are made already (the test built mcrib); make
		// runs only the run target's recipe.
		what = "make -s -o deps -o build run MCRIB=" + shellQuote(mcrib)
	}
	// The shell writes the exit status of make (or the script) itself,
	// not the pipeline's, to a file.
	line := "{ " + what + "; echo $? >" + shellQuote(filepath.Join(r.dir, "status")) + "; }"
	if o.tee {
		line += " 2>&1 | tee " + shellQuote(filepath.Join(r.dir, "run.log"))
	}
	r.cmd = exec.Command("bash", "-c", line)
	r.cmd.Dir = root
	r.cmd.Env = append(append(os.Environ(),
		"MCRIB_BIN="+mcrib, "CONSUL_BIN="+consul,
		"MCRIB_RUNLOCAL_TEST="+r.mark), o.env...)
	if o.terminal {
		master, slave := openPTY(t)
		r.pty = master
		r.cmd.Stdin, r.cmd.Stdout, r.cmd.Stderr = slave, slave, slave
		// A session of its own with the terminal as its controlling
		// terminal: the shell's process group is the foreground group, as
		// an interactive shell makes a job it starts.
		r.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		slave.Close()
		go func() {
			defer close(r.outEOF)
			buf := make([]byte, 4096)
			for {
				n, err := master.Read(buf)
				r.out.Write(buf[:n])
				if err != nil {
					return
				}
			}
		}()
	} else {
		r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
		r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		close(r.outEOF)
	}
	go func() {
		r.cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(r.kill)

	start := time.Now()
	deadline := start.Add(90 * time.Second)
	for !strings.Contains(r.output(), runLocalReady) {
		select {
		case <-r.done:
			t.Fatalf("the local stack exited before it was ready:\n%s", r.output())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the local stack was not ready within 90 s:\n%s", r.output())
		}
	}
	t.Logf("ready in %.1f s", time.Since(start).Seconds())
	return r
}

// output returns what the terminal showed, or the log when the run is
// piped into tee.
func (r *runLocal) output() string {
	if b, err := os.ReadFile(filepath.Join(r.dir, "run.log")); err == nil {
		return string(b)
	}
	return r.out.String()
}

// pgid returns the process group of the run's shell.
func (r *runLocal) pgid() int { return r.cmd.Process.Pid }

// processes returns the live processes of this run (those that inherited
// its mark), by process ID, with their command lines.
func (r *runLocal) processes() map[int]string {
	found := map[int]string{}
	entries, _ := os.ReadDir("/proc")
	needle := []byte("MCRIB_RUNLOCAL_TEST=" + r.mark + "\x00")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, needle) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && isZombie(stat) {
			continue
		}
		found[pid] = strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	return found
}

// isZombie reports whether a /proc/PID/stat line is a zombie's (exited,
// not yet reaped: nothing is left of it but its exit status).
func isZombie(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// waitExit waits until the shell has exited and every process of the run
// is gone, and fails the test naming those left behind.
func (r *runLocal) waitExit(started map[int]string) {
	r.t.Helper()
	select {
	case <-r.done:
	case <-time.After(60 * time.Second):
		r.t.Errorf("the shell did not exit within 60 s of the signal:\n%s", r.output())
	}
	// The cleanup goes on after the shell is gone (a hung-up terminal),
	// stopping one process group after another, each given up to 10 s:
	// on a loaded machine that takes a while.
	deadline := time.Now().Add(60 * time.Second)
	left := r.processes()
	for len(left) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		left = r.processes()
	}
	for pid, cmdline := range left {
		_, first := started[pid]
		r.t.Errorf("process %d (%s) is left running (started before the signal: %v)", pid, cmdline, first)
	}
	if len(left) > 0 {
		r.t.Logf("output:\n%s", r.output())
		r.kill()
	}
	select {
	case <-r.outEOF:
	case <-time.After(5 * time.Second):
		r.t.Errorf("the terminal is still open 5 s after everything exited")
	}
}

// status returns the exit status the shell recorded for make (or the
// script), or -1 when it recorded none.
func (r *runLocal) status() int {
	b, err := os.ReadFile(filepath.Join(r.dir, "status"))
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return -1
	}
	return n
}

// kill ends whatever the run left behind (by process ID: only the
// processes of this run) and closes the terminal.
func (r *runLocal) kill() {
	for pid := range r.processes() {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	if r.pty != nil {
		r.pty.Close()
	}
}

// openPTY opens a pseudo-terminal pair: the master side, which the test
// reads and types into, and the slave side, the shell's terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening a pseudo-terminal: %v", err)
	}
	var n int
	var ioctlErr error
	raw, err := master.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	err = raw.Control(func(fd uintptr) {
		if ioctlErr = unix.IoctlSetPointerInt(int(fd), unix.TIOCSPTLCK, 0); ioctlErr != nil {
			return
		}
		n, ioctlErr = unix.IoctlGetInt(int(fd), unix.TIOCGPTN)
	})
	if err != nil || ioctlErr != nil {
		t.Fatalf("setting up the pseudo-terminal: %v %v", err, ioctlErr)
	}
	slave, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening the pseudo-terminal's slave side: %v", err)
	}
	return master, slave
}

// shellQuote quotes s for bash.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestRunLocalStops starts the local stack and ends it the ways a terminal
// can, checking each time that nothing it started is left and the exit
// status.
func TestRunLocalStops(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts runLocalOptions
		stop func(r *runLocal)
		// status is the exit status make (or the script) must report; -1
		// when nobody is left to see it (the terminal is gone).
		status int
		// shown must appear in the output after the stop (the cleanup
		// reached the terminal or the log).
		shown string
	}{
		{
			name:   "Ctrl-C on a terminal, make run",
			opts:   runLocalOptions{make: true, terminal: true},
			stop:   func(r *runLocal) { r.pty.Write([]byte{3}) },
			status: 0, shown: "run-local: stopped",
		},
		{
			name:   "Ctrl-C on a terminal, make run 2>&1 | tee run.log",
			opts:   runLocalOptions{make: true, terminal: true, tee: true},
			stop:   func(r *runLocal) { r.pty.Write([]byte{3}) },
			status: 0, shown: "run-local: stopped",
		},
		{
			name: "terminal closed, make run 2>&1 | tee run.log",
			opts: runLocalOptions{make: true, terminal: true, tee: true},
			stop: func(r *runLocal) {
				// What closing a terminal window does: the terminal hangs
				// up, and the shell that ran the job sends it SIGHUP.
				r.pty.Close()
				syscall.Kill(-r.pgid(), syscall.SIGHUP)
			},
			status: -1,
		},
		{
			name: "SIGINT without a terminal, run-local.sh 2>&1 | tee run.log",
			opts: runLocalOptions{tee: true},
			// The whole pipeline gets it, as from a terminal: tee dies
			// first and the cleanup writes into a closed pipe.
			stop:   func(r *runLocal) { syscall.Kill(-r.pgid(), syscall.SIGINT) },
			status: 0,
		},
		{
			name:   "SIGTERM to the script alone",
			opts:   runLocalOptions{},
			stop:   func(r *runLocal) { signalScript(r, syscall.SIGTERM) },
			status: 0, shown: "run-local: stopped",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startRunLocal(t, tc.opts)
			started := r.processes()
			t.Logf("%d processes running before the stop", len(started))
			tc.stop(r)
			r.waitExit(started)
			if tc.status >= 0 {
				if got := r.status(); got != tc.status {
					t.Errorf("exit status %d, want %d\n%s", got, tc.status, r.output())
				}
			}
			out := r.output()
			if strings.Contains(out, "Error 130") || strings.Contains(out, "Interrupt") {
				t.Errorf("make reported the Ctrl-C as a failure:\n%s", out)
			}
			if tc.shown != "" && !strings.Contains(out, tc.shown) {
				t.Errorf("the output lacks %q:\n%s", tc.shown, out)
			}
			if i := strings.LastIndex(out, runLocalReady); i >= 0 {
				t.Logf("after the stop:%s", strings.ReplaceAll("\n"+strings.TrimSpace(out[i+len(runLocalReady):]), "\n", "\n\t"))
			}
		})
	}
}

// signalScript sends sig to the run-local.sh process of r only.
func signalScript(r *runLocal, sig syscall.Signal) {
	r.t.Helper()
	for pid, cmdline := range r.processes() {
		if strings.HasPrefix(cmdline, "bash scripts/run-local.sh") {
			syscall.Kill(pid, sig)
			return
		}
	}
	r.t.Fatalf("no run-local.sh process found")
}

// TestRunLocalMovedPort takes 127.0.0.1:7070 before `make run` starts and
// checks that it says so loudly and names the address the CLI must use,
// and that mcrib answers there.
func TestRunLocalMovedPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:7070")
	if err == nil {
		defer ln.Close()
		go http.Serve(ln, http.NotFoundHandler())
	} else {
		t.Logf("127.0.0.1:7070 is taken already (%v); the test goes on with it taken", err)
	}
	r := startRunLocal(t, runLocalOptions{})
	out := r.output()
	m := regexp.MustCompile(`export MCRIB_ADDR=(http://127\.0\.0\.1:(\d+))`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the output names no MCRIB_ADDR to export:\n%s", out)
	}
	if m[2] == "7070" {
		t.Fatalf("it says to use port 7070, which is taken:\n%s", out)
	}
	for _, want := range []string{"127.0.0.1:7070 is taken", "--addr " + m[1]} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	// The warning comes again after mcrib's first log lines, next to the
	// dashboard's address, where it is seen.
	if i := strings.LastIndex(out, "export MCRIB_ADDR="); i < strings.Index(out, "mcrib dashboard and API") {
		t.Errorf("the address to use is not repeated with the dashboard's:\n%s", out)
	}
	resp, err := http.Get(m[1] + "/healthz")
	if err != nil {
		t.Fatalf("mcrib does not answer at the address given: %v", err)
	}
	resp.Body.Close()
	code, stdout, stderr := runCLI(t, strings.TrimPrefix(m[1], "http://"), nil, "status")
	if code != 0 || !strings.Contains(stdout, "mc-1") {
		t.Errorf("mcrib status at the address given: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	started := r.processes()
	syscall.Kill(-r.pgid(), syscall.SIGINT)
	r.waitExit(started)
	if got := r.status(); got != 0 {
		t.Errorf("exit status %d after SIGINT, want 0", got)
	}
}

// TestRunLocalKeepsItsPortAfterConnections: the calls made to an earlier
// run's mcrib (the CLI's, a browser's) stay in TIME_WAIT for a minute
// after that run stopped, on either side; they hold no port, so the next
// run takes the port asked for (MCRIB_RUN_PORT, 7070 by default) again,
// instead of moving to a random one that bin/mcrib does not know.
func TestRunLocalKeepsItsPortAfterConnections(t *testing.T) {
	port := testenv.FreePort(t)
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	// One connection closed by the server first (TIME_WAIT on the
	// listening side), one by the client first (on the calling side).
	for _, serverFirst := range []bool{true, false} {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		a, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		first, second := c, a
		if serverFirst {
			first, second = a, c
		}
		first.Close()
		second.Read(make([]byte, 1)) // the FIN: EOF
		second.Close()
	}
	ln.Close()
	if n := timeWaits(t, port); n < 2 {
		t.Fatalf("%d connections of port %d in TIME_WAIT, want 2: the test sets up nothing", n, port)
	}

	r := startRunLocal(t, runLocalOptions{env: []string{fmt.Sprintf("MCRIB_RUN_PORT=%d", port)}})
	out := r.output()
	want := fmt.Sprintf("mcrib dashboard and API: http://127.0.0.1:%d/", port)
	if !strings.Contains(out, want) || strings.Contains(out, "is taken") {
		t.Errorf("the run moved off port %d, which only old connections used; want %q:\n%s", port, want, out)
	}
	// Not 7070, so it says what the CLI needs, and why.
	for _, w := range []string{fmt.Sprintf("MCRIB_RUN_PORT=%d asks for it", port), fmt.Sprintf("export MCRIB_ADDR=http://127.0.0.1:%d", port)} {
		if !strings.Contains(out, w) {
			t.Errorf("the output lacks %q:\n%s", w, out)
		}
	}
	started := r.processes()
	syscall.Kill(-r.pgid(), syscall.SIGINT)
	r.waitExit(started)
	if got := r.status(); got != 0 {
		t.Errorf("exit status %d after SIGINT, want 0", got)
	}
}

// timeWaits counts the TCP connections in TIME_WAIT whose local or remote
// port is port, from /proc/net/tcp.
func timeWaits(t *testing.T, port int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	suffix := fmt.Sprintf(":%04X", port)
	n := 0
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 3 && f[3] == "06" && (strings.HasSuffix(f[1], suffix) || strings.HasSuffix(f[2], suffix)) {
			n++
		}
	}
	return n
}
