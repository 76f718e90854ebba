package testenv

import (
	"path/filepath"
	"testing"
)

// defaultProgramLogLines is the default ProgramOptions.LogLines.
const defaultProgramLogLines = 100

// ProgramOptions describes a program for StartProgram. Path is required.
type ProgramOptions struct {
	// Name names the program in messages and its log file; "" means the
	// base name of Path.
	Name string
	// Path is the program to run.
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

// Program is an arbitrary program started by StartProgram: its Process
// handle and its name. It is killed when the test ends. The zero value is
// not usable.
type Program struct {
	*Process
	// Name is ProgramOptions.Name, or the base name of its Path.
	Name string
}

// StartProgram starts the program opts describes and returns at once; wait
// for it to be ready with WaitReady. Its output goes to a log file whose
// last lines are logged when the test fails; Output returns all of it.
// Start (after it exited) runs it again at once.
func StartProgram(t testing.TB, opts ProgramOptions) *Program {
	t.Helper()
	name := opts.Name
	if name == "" {
		name = filepath.Base(opts.Path)
	}
	p := &Program{Name: name, Process: opts.process(t, name, defaultProgramLogLines)}
	if err := p.start(); err != nil {
		t.Fatalf("testenv: starting %s: %v", p.Name, err)
	}
	return p
}

// process returns the process of the program o describes, named name,
// logging defaultLines of its output when the test fails unless o says.
func (o ProgramOptions) process(t testing.TB, name string, defaultLines int) *Process {
	t.Helper()
	p := newProcess(t, name, o.Path)
	p.args = o.Args
	if o.Host != nil {
		p.prefix = o.Host.execPrefix()
	}
	p.env = o.Env
	p.tailLines = o.LogLines
	if p.tailLines <= 0 {
		p.tailLines = defaultLines
	}
	return p
}
