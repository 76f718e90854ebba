package testenv

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// defaultProgramLogLines is the default ProgramOptions.LogLines.
const defaultProgramLogLines = 100

// ProgramOptions describes a program for StartProgram. Path is required.
type ProgramOptions struct {
	// Name names the program in messages and its log file; "" means the
	// base name of Path.
	Name string
	// Path is the program to run, e.g. a freshly built bin/mcrib.
	Path string
	// Args are the program's arguments.
	Args []string
	// Env is added to the test binary's environment.
	Env []string
	// Host is where the program runs; nil means the test binary's own
	// network namespace.
	Host *Host
	// LogLines is how many of the last lines of the program's output
	// (stdout and stderr) are logged when the test fails; 0 means 100.
	LogLines int
}

// Program is an arbitrary program started by StartProgram, with its output
// in a log file. It is killed when the test ends. The zero value is not
// usable. Methods are safe for concurrent use, but Start, Stop and Kill
// must not race with each other.
type Program struct {
	// Name is ProgramOptions.Name, or the base name of its Path.
	Name string

	path string
	args []string
	proc *process
}

// StartProgram starts the program opts describes and returns at once; wait
// for it to be ready with WaitReady. Its output goes to a log file whose
// last lines are logged when the test fails; Output returns all of it.
func StartProgram(t testing.TB, opts ProgramOptions) *Program {
	t.Helper()
	name := opts.Name
	if name == "" {
		name = filepath.Base(opts.Path)
	}
	p := &Program{Name: name, path: opts.Path, args: opts.Args}
	p.proc = newProcess(t, name)
	if opts.Host != nil {
		p.proc.prefix = opts.Host.execPrefix()
	}
	p.proc.env = opts.Env
	p.proc.tailLines = opts.LogLines
	if p.proc.tailLines <= 0 {
		p.proc.tailLines = defaultProgramLogLines
	}
	p.Start(t)
	return p
}

// Start starts the program again, with the same arguments, after it
// exited, was stopped or was killed.
func (p *Program) Start(t testing.TB) {
	t.Helper()
	if err := p.proc.start(p.path, p.args...); err != nil {
		t.Fatalf("testenv: starting %s: %v", p.Name, err)
	}
}

// WaitReady calls ready every 20ms until it returns true, and fails the
// test, with the program's last lines of output, when the program exits
// first or timeout passes.
func (p *Program) WaitReady(t testing.TB, timeout time.Duration, ready func() bool) {
	t.Helper()
	if err := p.proc.waitReady(timeout, pollInterval, ready); err != nil {
		t.Fatalf("testenv: waiting for %s: %v\n%s", p.Name, err, p.proc.tail(p.proc.tailLines))
	}
}

// Wait waits up to timeout for the program to exit on its own, and returns
// its exit code (-1 when a signal ended it). It fails the test, with the
// program's last lines of output, when the program still runs then.
func (p *Program) Wait(t testing.TB, timeout time.Duration) int {
	t.Helper()
	if !poll(timeout, pollInterval, p.proc.exited) {
		t.Fatalf("testenv: %s still runs after %v\n%s", p.Name, timeout, p.proc.tail(p.proc.tailLines))
	}
	return p.proc.exitCode()
}

// Stop sends sig to the program's process group and waits for it to exit
// (SIGKILL after 15s, which fails the test), and returns its exit code,
// -1 when a signal ended it.
func (p *Program) Stop(t testing.TB, sig syscall.Signal) int {
	t.Helper()
	if err := p.proc.stop(sig); err != nil {
		t.Fatalf("testenv: stopping %s: %v", p.Name, err)
	}
	return p.proc.exitCode()
}

// Kill sends SIGKILL to the program's process group and waits for it to
// exit.
func (p *Program) Kill(t testing.TB) {
	t.Helper()
	p.Stop(t, syscall.SIGKILL)
}

// Pause sends SIGSTOP to the program's process group: it keeps its sockets
// but does nothing until Resume.
func (p *Program) Pause(t testing.TB) {
	t.Helper()
	if err := p.proc.signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("testenv: pausing %s: %v", p.Name, err)
	}
}

// Resume sends SIGCONT to the program's process group after Pause.
func (p *Program) Resume(t testing.TB) {
	t.Helper()
	if err := p.proc.signal(syscall.SIGCONT); err != nil {
		t.Fatalf("testenv: resuming %s: %v", p.Name, err)
	}
}

// Exited reports whether the program is not running.
func (p *Program) Exited() bool { return p.proc.exited() }

// ExitCode returns the exit code of the program's last run: -1 while it
// runs, or when a signal ended it.
func (p *Program) ExitCode() int { return p.proc.exitCode() }

// PID returns the program's process ID, or 0 when it is not running.
func (p *Program) PID() int { return p.proc.pid() }

// Output returns everything the program wrote to stdout and stderr so far,
// over all its runs, each run preceded by a "=== testenv start" line.
func (p *Program) Output() string {
	b, err := os.ReadFile(p.proc.logPath)
	if err != nil {
		return ""
	}
	return string(b)
}
