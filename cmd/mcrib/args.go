package main

import (
	"errors"
	"flag"
	"io"
	"strconv"
	"strings"
)

// clientFlags returns the flag set of a client command with the --addr flag
// every client command takes. It prints nothing: run reports errors and
// help.
func clientFlags(cmd string) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("mcrib "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	addr := fs.String("addr", "", "base URL or host:port of the mcrib operator API")
	return fs, addr
}

// parseClientArgs parses args, flags and positional arguments in any order,
// and returns the positional ones. After -h it returns flag.ErrHelp; any
// other problem is a usage error.
func parseClientArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil, err
	}
	if err != nil {
		return nil, usageError("%s", dashDash(err.Error()))
	}
	return pos, nil
}

// connectNoArgs parses args into fs, refuses positional arguments (a
// usage error), and returns a client of the operator API at addr, as read
// once parsing has filled it (addr is read after the parse).
func (c cli) connectNoArgs(fs *flag.FlagSet, addr *string, args []string) (*apiClient, error) {
	pos, err := parseClientArgs(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) > 0 {
		return nil, usageError("unexpected argument %q", pos[0])
	}
	return newClient(*addr, c.getenv)
}

// parseInterspersed parses fs from args where flags and positional arguments
// may be mixed ("set 5 --burst 3", "--addr x set 5"). An argument that reads
// as a negative number is positional, not a flag; "--" ends the flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(pos, args[i+1:]...), nil
		}
		if len(a) < 2 || a[0] != '-' || isNumber(a) {
			pos = append(pos, a)
			continue
		}
		chunk := []string{a}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if f := fs.Lookup(name); f != nil && !hasValue && !isBoolFlag(f) && i+1 < len(args) {
			i++
			chunk = append(chunk, args[i])
		}
		if err := fs.Parse(chunk); err != nil {
			return nil, err
		}
	}
	return pos, nil
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// given reports whether the flag called name was set on the command line.
func given(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// dashDash rewrites the flag package's "-name" spelling in its error
// messages to the "--name" spelling mcrib documents, and its "for flag
// -name" to "for --name".
func dashDash(msg string) string {
	if i := strings.Index(msg, "for flag -"); i >= 0 {
		msg = msg[:i] + "for " + msg[i+len("for flag "):]
	}
	for _, p := range []string{"not defined: -", "needs an argument: -", "for -"} {
		if i := strings.Index(msg, p); i >= 0 && !strings.HasPrefix(msg[i+len(p):], "-") {
			return msg[:i+len(p)-1] + "-" + msg[i+len(p)-1:]
		}
	}
	return msg
}
