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

// process runs one external program at a time, restartable, with its output
// appended to a log file. The zero value is not usable; use newProcess.
// Methods are safe for concurrent use.
type process struct {
	name    string // for messages, e.g. "consul server"
	logPath string

	// Set before the first start, then read-only:
	prefix    []string // runs the program through prefix when set, e.g. ip netns exec
	env       []string // added to the test binary's environment
	tailLines int      // lines of output logged when the test failed

	mu     sync.Mutex
	cmd    *exec.Cmd     // current or last command; nil before the first start
	done   chan struct{} // closed when the current command has exited and been reaped
	starts int
}

// newProcess returns a process whose output goes to a log file in a fresh
// temporary directory of t, and registers a cleanup that kills it (after a
// SIGCONT, in case it is stopped) and, when the test failed, logs the tail of
// its output. Every process this package starts comes from here, so it
// skips the test under -short (see SkipShort).
func newProcess(t testing.TB, name string) *process {
	t.Helper()
	SkipShort(t, name)
	// TempDir first: cleanups run last-in first-out, so the kill below runs
	// before the directory is removed.
	dir := t.TempDir()
	p := &process{
		name:      name,
		logPath:   dir + "/" + strings.ReplaceAll(name, " ", "-") + ".log",
		tailLines: 40,
	}
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("testenv: last lines of %s output (%s):\n%s", p.name, p.logPath, p.tail(p.tailLines))
		}
	})
	return p
}

// start runs bin with args (through p.prefix when set). The child gets its own process group, and the
// kernel sends it SIGKILL when the thread that started it exits; that thread
// is locked to a goroutine that lives exactly as long as the child, so in
// practice the child dies with the test binary.
func (p *process) start(bin string, args ...string) error {
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
		// Never unlocked: the thread ends with this goroutine, after the
		// child has been reaped, so Pdeathsig never hits a live child early.
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
func (p *process) running() bool {
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

// exited reports whether the process is not running (never started, or
// exited).
func (p *process) exited() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.running()
}

// signal sends sig to the process group of the current command. It does
// nothing when no command is running.
func (p *process) signal(sig syscall.Signal) error {
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
func (p *process) stop(sig syscall.Signal) error {
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
func (p *process) kill() {
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

// pid returns the process ID of the current command, or 0 when not running.
func (p *process) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.running() {
		return 0
	}
	return p.cmd.Process.Pid
}

// exitCode returns the exit code of the last command, -1 when it was
// killed by a signal, is running or never ran.
func (p *process) exitCode() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.running() || p.cmd.ProcessState == nil {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

// tail returns the last n lines of the log file.
func (p *process) tail(n int) string {
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

// waitReady polls ready every interval until it returns true, the process
// exits (errExited), or timeout passes.
func (p *process) waitReady(timeout, interval time.Duration, ready func() bool) error {
	var exited bool
	ok := poll(timeout, interval, func() bool {
		if p.exited() {
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
