package main

import (
	"errors"
	"flag"
	"strings"
)

// errNotDuration and its siblings say why a value does not parse; they end
// the one-line error, after the flag and the value.
var (
	errNotDuration = errors.New("not a duration (like 45s, 2m or 1m30s)")
	errNotInteger  = errors.New("not a whole number")
	errNotNumber   = errors.New("not a number")
	errNotBool     = errors.New("not true or false")
)

// flagValue wraps the flag package's typed value of one flag (as defined by
// fs.DurationVar, fs.IntVar, fs.Float64Var or fs.StringVar). A number or
// duration is read with the white space around it trimmed, and one that
// does not parse is explained (errNotDuration…) where the flag package says
// only "parse error". The wrapper remembers the text it was last set from
// and the environment variable that text came from, so that a validation
// error can quote the value as the operator wrote it and say where. It is
// not safe for concurrent use.
type flagValue struct {
	flag.Value
	notA error  // why a value does not parse; nil for a text flag, taken as given
	text string // the text the value was last set from
	env  string // the environment variable text came from; "" for the command line or the default
}

// explainFlag wraps the flag called name of fs in a flagValue whose values
// that do not parse are notA (nil for a text flag), and returns it.
func explainFlag(fs *flag.FlagSet, name string, notA error) *flagValue {
	f := fs.Lookup(name)
	v := &flagValue{Value: f.Value, notA: notA}
	f.Value = v
	return v
}

// Set parses text into the wrapped value.
func (v *flagValue) Set(text string) error {
	s := text
	if v.notA != nil {
		s = strings.TrimSpace(s)
	}
	if err := v.Value.Set(s); err != nil {
		if v.notA != nil {
			return v.notA
		}
		return err
	}
	v.text = text
	return nil
}

// from names the environment variable the value came from, as the end of
// an error message; "" when it came from the command line or the default.
func (v *flagValue) from() string {
	if v.env == "" {
		return ""
	}
	return " (from " + v.env + ")"
}

// IsBoolFlag tells the flag package that a switch (a wrapped bool flag)
// may be given without a value.
func (v *flagValue) IsBoolFlag() bool {
	b, ok := v.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}
