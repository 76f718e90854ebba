package main

import (
	"flag"
	"fmt"
)

// exitError ends a command with an exit code other than 1. run prints
// "mcrib <command>: <err>" on stderr (nothing when err is nil: the failure
// was already reported, in the log or on stderr), then the command's usage
// when usage is set, and exits with code. An error of any other type exits
// 1 after the same line.
type exitError struct {
	code  int   // the process exit code: 1 failure, 2 usage error
	err   error // the one-line reason; nil when already reported
	usage bool  // print the command's usage after the reason
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageError returns the exit-2 error of a client command used wrongly:
// the reason, then the command's usage.
func usageError(format string, a ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, a...), usage: true}
}

// badFlag returns the exit-2 error of `mcrib serve` started with a bad
// flag value: one line, no usage (the flag help is long).
func badFlag(err error) error {
	return &exitError{code: 2, err: err}
}

// reported returns an error that exits with code and prints nothing more:
// the failure was already reported.
func reported(code int) error {
	return &exitError{code: code}
}

// helpRequest is what a client command's parse returns after -h or
// --help: its flag set, so that the help lists the command's flags. It
// matches flag.ErrHelp.
type helpRequest struct {
	fs *flag.FlagSet
}

func (h *helpRequest) Error() string { return flag.ErrHelp.Error() }

func (h *helpRequest) Unwrap() error { return flag.ErrHelp }
