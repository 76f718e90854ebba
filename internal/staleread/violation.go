package staleread

import "fmt"

// Rule is the rule a violation broke.
type Rule uint8

// The rules.
const (
	// Replaced: the read returned a value that another write of its key
	// (Violation.By) replaced before the read began.
	Replaced Rule = iota + 1
	// Unwritten: the read returned a value that no client's set of its
	// key wrote before the read ended: no set wrote it (a tombstone, a
	// garbage value; By is nil), or By, the set that wrote it, was of
	// another key or began only after the read had ended.
	Unwritten
)

// String returns "replaced" or "unwritten".
func (r Rule) String() string {
	switch r {
	case Replaced:
		return "replaced"
	case Unwritten:
		return "unwritten"
	}
	return "unknown"
}

// Violation is a read that broke a rule.
type Violation struct {
	Read *Op
	// By is the write that replaced the value (Replaced), or the set that
	// wrote the value for another key or too late (Unwritten, else nil).
	By   *Op
	Rule Rule
}

// String describes the violation in one line, positions as recorded.
func (v Violation) String() string {
	r := v.Read
	read := fmt.Sprintf("%s's get of %q (generation %d, fresh %v, %d–%d) returned %q",
		r.Client, r.Key, r.Gen, r.Fresh, r.Start, r.End, r.Value)
	switch {
	case v.Rule == Replaced:
		return fmt.Sprintf("stale read: %s, which %s replaced before the get began", read, describe(v.By))
	case v.By == nil:
		return fmt.Sprintf("%s, a value no set wrote", read)
	case v.By.Key != r.Key:
		return fmt.Sprintf("%s, a value %s wrote for another key", read, describe(v.By))
	default:
		return fmt.Sprintf("%s, a value %s began writing only after the get ended", read, describe(v.By))
	}
}

// describe says what o did, for messages.
func describe(o *Op) string {
	what := fmt.Sprintf("%s of %q", o.Kind, o.Key)
	if o.Kind == Set {
		what += fmt.Sprintf(" to %q", o.Value)
	}
	return fmt.Sprintf("%s's %s (generation %d, fresh %v, %d–%d)", o.Client, what, o.Gen, o.Fresh, o.Start, o.End)
}
