package testenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// stopTimeout is how long a process may take to exit after a polite signal
// before it is killed.
const stopTimeout = 15 * time.Second

// defaultTailLines is how many of the last lines of a process's output are
// logged when the test fails, unless its kind says otherwise.
const defaultTailLines = 40

// Process is the handle of one program this package runs, the same for
// every kind: Consul, its client agents, memcached, nutcracker, mcrib and
// any program (StartProgram). Through it a test stops the program politely
// (Stop: SIGTERM, the kill of a service manager) or not (Kill: kill -9),
// pauses (SIGSTOP) and resumes (SIGCONT) it, starts it again with the same
// command line (Start, Restart), finds its pid and reads its output. The
// kinds embed it, and add what is theirs (an address, a client, a restart
// that waits for more).
//
// The program runs in a process group of its own, and every signal goes to
// the group. Its output (stdout and stderr) goes to a log file; when the
// test fails, the last lines are logged. The kernel kills the program when
// the test binary dies (see start), and a cleanup kills it when the test
// ends.
//
// The zero value is not usable; the Start functions of this package make
// processes. Methods are safe for concurrent use, but Start, Restart, Stop
// and Kill must not race with each other.
type Process struct {
	name    string // for messages, e.g. "consul server"
	logPath string

	// Set before the first start, then read-only:
	bin       string   // the program
	prefix    []string // runs the program through prefix when set, e.g. ip netns exec
	env       []string // added to the test binary's environment
	tailLines int      // lines of output logged when the test failed
	// ready reports whether the started program can be used (it answers);
	// nil means as soon as it started. It is polled every readyInterval
	// for up to readyTimeout.
	ready         func() bool
	readyTimeout  time.Duration
	readyInterval time.Duration
	// startAgain, when set, is what Start does instead of starting the
	// program and waiting until it is ready (Consul brings its client
	// agents back too).
	startAgain func(t testing.TB)
	// afterStop, when set, runs when Stop has seen the program exit (a
	// Consul client agent makes sure its node left the catalog).
	afterStop func(t testing.TB)

	mu     sync.Mutex
	args   []string      // the program's arguments for the next start
	cmd    *exec.Cmd     // current or last command; nil before the first start
	done   chan struct{} // closed when the current command has exited and been reaped
	starts int
}

// newProcess returns a process that runs bin, with its output going to a
// log file in a fresh temporary directory of t, and registers a cleanup
// that kills it (after a SIGCONT, in case it is stopped) and, when the test
// failed, logs the tail of its output. Every process this package starts
// comes from here, so it skips the test under -short (see SkipShort).
func newProcess(t testing.TB, name, bin string) *Process {
	t.Helper()
	SkipShort(t, name)
	// TempDir first: cleanups run last-in first-out, so the kill below runs
	// before the directory is removed.
	dir := t.TempDir()
	p := &Process{
		name:          name,
		logPath:       dir + "/" + strings.ReplaceAll(name, " ", "-") + ".log",
		bin:           bin,
		tailLines:     defaultTailLines,
		readyInterval: pollInterval,
	}
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("testenv: last lines of %s output (%s):\n%s", p.name, p.logPath, p.tail(p.tailLines))
		}
	})
	return p
}

// setArgs sets the program's arguments for the next start.
func (p *Process) setArgs(args ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.args = args
}

// launch starts the program with its arguments and waits until it is
// ready.
func (p *Process) launch() error {
	if err := p.start(); err != nil {
		return err
	}
	if p.ready == nil {
		return nil
	}
	return p.waitReady(p.readyTimeout, p.readyInterval, p.ready)
}

// start runs the program with its arguments (through p.prefix when set).
// The child gets its own process group, and the kernel sends it SIGKILL
// when the thread that started it exits; that thread is locked to a
// goroutine that lives exactly as long as the child, so in practice the
// child dies with the test binary. This is the one place in the tests that
// starts a long-lived process.
func (p *Process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running() {
		return fmt.Errorf("testenv: %s is already running", p.name)
	}
	p.starts++
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening log of %s: %w", p.name, err)
	}
	bin, args := p.bin, append([]string(nil), p.args...)
	if len(p.prefix) > 0 {
		args = append(append(p.prefix[1:len(p.prefix):len(p.prefix)], bin), args...)
		bin = p.prefix[0]
	}
	fmt.Fprintf(f, "=== testenv start #%d: %s %s\n", p.starts, bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	if p.env != nil {
		cmd.Env = append(os.Environ(), p.env...)
	}
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	done := make(chan struct{})
	started := make(chan error, 1)
	go func() {
		// Pdeathsig fires when the OS thread that forked the child ends,
		// not the process: other goroutines lock threads and let them end
		// (a test bed's namespace switches), and one of them could be this
		// thread. So the child is forked on a thread kept for it, never
		// unlocked: the thread ends with this goroutine, after the child
		// has been reaped, so Pdeathsig never hits a live child early.
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			f.Close()
			close(done)
			started <- err
			return
		}
		started <- nil
		cmd.Wait()
		f.Close()
		close(done)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("starting %s: %w", p.name, err)
	}
	p.cmd, p.done = cmd, done
	return nil
}

// running reports whether the current command is alive. p.mu must be held.
func (p *Process) running() bool {
	if p.done == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Exited reports whether the program is not running (never started, or
// exited).
func (p *Process) Exited() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.running()
}

// signal sends sig to the process group of the current command. It fails
// when no command is running.
func (p *Process) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.running() {
		return fmt.Errorf("testenv: %s is not running", p.name)
	}
	if err := syscall.Kill(-p.cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("sending %v to %s: %w", sig, p.name, err)
	}
	return nil
}

// stop sends sig to the process group, waits up to stopTimeout for the
// process to exit, then kills the group. It reports an error when the
// process was not running or had to be killed.
func (p *Process) stop(sig syscall.Signal) error {
	p.mu.Lock()
	cmd, done, wasRunning := p.cmd, p.done, p.running()
	p.mu.Unlock()
	if !wasRunning {
		return fmt.Errorf("testenv: %s is not running", p.name)
	}
	pgid := cmd.Process.Pid
	syscall.Kill(-pgid, sig)
	if sig != syscall.SIGKILL {
		syscall.Kill(-pgid, syscall.SIGCONT) // a stopped process cannot act on sig
	}
	select {
	case <-done:
		// No group kill once the leader is reaped: its ID may already
		// belong to another test's process group (pid_max is small).
		return nil
	case <-time.After(stopTimeout):
	}
	syscall.Kill(-pgid, syscall.SIGKILL)
	<-done
	return fmt.Errorf("testenv: %s did not exit within %v of %v and was killed", p.name, stopTimeout, sig)
}

// kill sends SIGCONT and SIGKILL to the process group and waits for the
// process to exit. It does nothing when the process is not running.
func (p *Process) kill() {
	p.mu.Lock()
	cmd, done, wasRunning := p.cmd, p.done, p.running()
	p.mu.Unlock()
	if !wasRunning {
		return
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGCONT)
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-done
}

// Stop sends SIGTERM to the program and waits for it to exit, and returns
// its exit code, -1 when a signal ended it. A program still running 15s
// later is killed, and the test fails.
func (p *Process) Stop(t testing.TB) int {
	t.Helper()
	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("testenv: stopping %s: %v", p.name, err)
	}
	if p.afterStop != nil {
		p.afterStop(t)
	}
	return p.ExitCode()
}

// Kill sends SIGKILL to the program (kill -9) and waits for it to exit.
func (p *Process) Kill(t testing.TB) {
	t.Helper()
	if err := p.stop(syscall.SIGKILL); err != nil {
		t.Fatalf("testenv: killing %s: %v", p.name, err)
	}
}

// Start starts the program again, with the same command line, after it
// exited, was stopped or was killed, and waits until it is ready as its
// kind defines it (memcached answers, Consul has a leader, mcrib answers
// /healthz; a program started by StartProgram at once). Ports and data
// directories stay the same.
func (p *Process) Start(t testing.TB) {
	t.Helper()
	if p.startAgain != nil {
		p.startAgain(t)
		return
	}
	if err := p.launch(); err != nil {
		t.Fatalf("testenv: starting %s again: %v\n%s", p.name, err, p.tail(p.tailLines))
	}
}

// Restart stops the program (Stop), starts it again (Start) and returns
// the exit code of the stop.
func (p *Process) Restart(t testing.TB) int {
	t.Helper()
	code := p.Stop(t)
	p.Start(t)
	return code
}

// Pause sends SIGSTOP to the program: it keeps its sockets, which the
// kernel goes on filling, but does nothing until Resume. The signal is
// delivered asynchronously; Paused tells when it took effect.
func (p *Process) Pause(t testing.TB) {
	t.Helper()
	if err := p.signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("testenv: pausing %s: %v", p.name, err)
	}
}

// Resume sends SIGCONT to the program after Pause.
func (p *Process) Resume(t testing.TB) {
	t.Helper()
	if err := p.signal(syscall.SIGCONT); err != nil {
		t.Fatalf("testenv: resuming %s: %v", p.name, err)
	}
}

// Paused reports whether the program is stopped by a signal (state T in
// /proc/<pid>/stat), as Pause leaves it.
func (p *Process) Paused() bool {
	pid := p.PID()
	if pid == 0 {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+3 <= len(s) && s[i+2] == 'T'
}

// PID returns the program's process ID, or 0 when it is not running.
func (p *Process) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.running() {
		return 0
	}
	return p.cmd.Process.Pid
}

// ExitCode returns the exit code of the program's last run: -1 while it
// runs, before it ran, or when a signal ended it.
func (p *Process) ExitCode() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.running() || p.cmd.ProcessState == nil {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

// Output returns everything the program wrote to stdout and stderr so far,
// over all its runs, each run preceded by a "=== testenv start" line.
func (p *Process) Output() string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return ""
	}
	return string(b)
}

// tail returns the last n lines of the log file.
func (p *Process) tail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", p.logPath, err)
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// WaitReady calls ready every 20ms until it returns true, and fails the
// test, with the program's last lines of output, when the program exits
// first or timeout passes.
func (p *Process) WaitReady(t testing.TB, timeout time.Duration, ready func() bool) {
	t.Helper()
	if err := p.waitReady(timeout, pollInterval, ready); err != nil {
		t.Fatalf("testenv: waiting for %s: %v\n%s", p.name, err, p.tail(p.tailLines))
	}
}

// Wait waits up to timeout for the program to exit on its own, and returns
// its exit code (-1 when a signal ended it). It fails the test, with the
// program's last lines of output, when the program still runs then.
func (p *Process) Wait(t testing.TB, timeout time.Duration) int {
	t.Helper()
	if !Poll(timeout, pollInterval, p.Exited) {
		t.Fatalf("testenv: %s still runs after %v\n%s", p.name, timeout, p.tail(p.tailLines))
	}
	return p.ExitCode()
}

// waitReady polls ready every interval until it returns true, the process
// exits (errExited), or timeout passes.
func (p *Process) waitReady(timeout, interval time.Duration, ready func() bool) error {
	var exited bool
	ok := Poll(timeout, interval, func() bool {
		if p.Exited() {
			exited = true
			return true
		}
		return ready()
	})
	switch {
	case exited:
		return fmt.Errorf("%s: %w before becoming ready", p.name, errExited)
	case !ok:
		return fmt.Errorf("testenv: %s not ready within %v", p.name, timeout)
	}
	return nil
}
