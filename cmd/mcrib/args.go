package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// clientOptions are the flags every client command takes, after its name
// or before it ("mcrib --addr URL status").
type clientOptions struct {
	addr      string // --addr: the API's base URL or host:port ("" = env MCRIB_ADDR, else defaultAddr)
	tokenFile string // --token-file: file holding the operator token ("" = env MCRIB_TOKEN_FILE, else env MCRIB_TOKEN)
	who       string // --who: the operator's name sent with changes ("" = env MCRIB_WHO, else $USER@host)
	json      bool   // --json: print the server's JSON answer as it came
}

// clientFlags returns the flag set of a client command with the flags of
// clientOptions defined. It prints nothing: run reports errors and help.
func clientFlags(cmd string) (*flag.FlagSet, *clientOptions) {
	fs := flag.NewFlagSet("mcrib "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	o := &clientOptions{}
	fs.StringVar(&o.addr, "addr", "", "the mcrib API at `URL`, a base URL or host:port (default "+defaultAddr+", env MCRIB_ADDR)")
	fs.StringVar(&o.tokenFile, "token-file", "", "read the operator token, which changes need, from `FILE` (env MCRIB_TOKEN_FILE; or the token itself in env MCRIB_TOKEN)")
	fs.StringVar(&o.who, "who", "", "record your changes as made by `NAME` (default $USER@host, env MCRIB_WHO)")
	fs.BoolVar(&o.json, "json", false, "print the server's JSON answer as it came")
	return fs, o
}

// isClientFlag reports whether name is a flag of clientOptions, and
// whether it takes a value.
func isClientFlag(name string) (known, takesValue bool) {
	fs, _ := clientFlags("")
	f := fs.Lookup(name)
	if f == nil {
		return false, false
	}
	return true, !isBoolFlag(f)
}

// parseClientArgs parses args, flags and positional arguments in any order,
// and returns the positional ones. After -h or --help it returns a
// *helpRequest; any other problem is a usage error, with a suggestion for
// a flag that looks like a typo of one fs has.
func parseClientArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil, &helpRequest{fs: fs}
	}
	if err != nil {
		return nil, usageError("%s", flagProblem(fs, err))
	}
	return pos, nil
}

// flagProblem words an error of fs.Parse for an operator: an unknown flag
// with the flag it most likely meant, anything else in the "--name"
// spelling mcrib documents.
func flagProblem(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	name, ok := strings.CutPrefix(msg, "flag provided but not defined: ")
	if !ok {
		return dashDash(msg)
	}
	name = strings.TrimLeft(name, "-")
	return "unknown flag --" + name + didYouMean(name, flagNames(fs), "--")
}

// flagNames returns the names of the flags of fs.
func flagNames(fs *flag.FlagSet) []string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return names
}

// didYouMean returns "; did you mean <prefix>X?" for the candidate X
// closest to word, or "" when none is near.
func didYouMean(word string, candidates []string, prefix string) string {
	best, ok := closest(word, candidates)
	if !ok {
		return ""
	}
	if prefix == "" {
		return fmt.Sprintf("; did you mean %q?", best)
	}
	return "; did you mean " + prefix + best + "?"
}

// leadingFlags splits the client flags given before the command name
// ("mcrib --addr URL status --json") from the rest of the command line,
// which starts with the command name (or is empty). A flag there that is
// no client flag is a usage error, with the flag it most likely meant.
func leadingFlags(args []string) (lead, rest []string, err error) {
	for len(args) > 0 {
		a := args[0]
		if a == "--" {
			return lead, args[1:], nil
		}
		if len(a) < 2 || a[0] != '-' || isHelpWord(a) {
			break
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		known, takesValue := isClientFlag(name)
		if !known {
			fs, _ := clientFlags("")
			names := flagNames(fs)
			sort.Strings(names)
			return nil, nil, fmt.Errorf("unknown flag --%s before the command%s (only the client flags --%s may come before it)",
				name, didYouMean(name, names, "--"), strings.Join(names, ", --"))
		}
		lead = append(lead, a)
		args = args[1:]
		if takesValue && !hasValue {
			if len(args) == 0 {
				return nil, nil, fmt.Errorf("--%s needs a value", name)
			}
			lead = append(lead, args[0])
			args = args[1:]
		}
	}
	return lead, args, nil
}

// isHelpWord reports whether a is one of the spellings of help that stand
// for the help command at the start of a command line.
func isHelpWord(a string) bool { return a == "-h" || a == "-help" || a == "--help" }

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
