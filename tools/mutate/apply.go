package main

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
)

// errNoToken is returned when the source at a mutant's position holds no
// token the mutant's type can change.
var errNoToken = errors.New("no mutable token at the position")

// replacements is gremlins' table (internal/engine/mappings.go of v0.6.0)
// of what each mutant type turns a token into, as source text.
var replacements = map[string]map[string]string{
	"ARITHMETIC_BASE":         {"+": "-", "*": "/", "/": "*", "%": "*", "-": "+"},
	"CONDITIONALS_BOUNDARY":   {">=": ">", ">": ">=", "<=": "<", "<": "<="},
	"CONDITIONALS_NEGATION":   {"==": "!=", ">=": "<", ">": "<=", "<=": ">", "<": ">=", "!=": "=="},
	"INCREMENT_DECREMENT":     {"--": "++", "++": "--"},
	"INVERT_ASSIGNMENTS":      {"+=": "-=", "*=": "/=", "/=": "*=", "%=": "%=", "-=": "+="},
	"INVERT_BITWISE":          {"&": "|", "|": "&", "^": "&", "&^": "&", "<<": ">>", ">>": "<<"},
	"INVERT_BWASSIGN":         {"&=": "|=", "|=": "&=", "^=": "&=", "&^=": "&=", "<<=": ">>=", ">>=": "<<="},
	"INVERT_LOGICAL":          {"&&": "||", "||": "&&"},
	"INVERT_LOOPCTRL":         {"break": "continue", "continue": "break"},
	"INVERT_NEGATIVES":        {"-": "+"},
	"REMOVE_SELF_ASSIGNMENTS": {"+=": "=", "&=": "=", "&^=": "=", "*=": "=", "|=": "=", "/=": "=", "%=": "=", "<<=": "=", ">>=": "=", "-=": "=", "^=": "="},
}

// operators are Go's operator tokens and the two loop-control keywords,
// longest first, so that the token at an offset is read whole.
var operators = []string{
	"continue", "break",
	"<<=", ">>=", "&^=",
	"&&", "||", "<-", "++", "--", "==", "!=", "<=", ">=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<", ">>", "&^",
	"+", "-", "*", "/", "%", "&", "|", "^", "<", ">", "!",
}

// mutation is one token changed at one place of a file.
type mutation struct {
	Offset int    // byte offset of the token in the file
	From   string // the token in the source
	To     string // what the mutant puts there
	// Open and Close, when Close > 0, are the offsets where the mutated
	// binary expression starts and ends: it is parenthesized, since the
	// new operator binds differently (a && b && c with its first && turned
	// into || is (a || b) && c, the expression tree gremlins mutates and
	// prints, not a || b && c).
	Open, Close int
}

// tokens maps each token's text to the token.
var tokens = func() map[string]token.Token {
	m := map[string]token.Token{}
	for t := token.ILLEGAL; t <= token.TILDE; t++ {
		m[t.String()] = t
	}
	return m
}()

// locate finds the token at line:col (1-based, col in bytes, as go/token
// reports a position) of src and what a mutant of type typ turns it into.
func locate(src []byte, line, col int, typ string) (mutation, error) {
	table, ok := replacements[typ]
	if !ok {
		return mutation{}, fmt.Errorf("unknown mutant type %q", typ)
	}
	off := 0
	for l := 1; l < line; l++ {
		i := bytes.IndexByte(src[off:], '\n')
		if i < 0 {
			return mutation{}, fmt.Errorf("line %d: %w", line, errNoToken)
		}
		off += i + 1
	}
	off += col - 1
	if off < 0 || off >= len(src) {
		return mutation{}, fmt.Errorf("%d:%d: %w", line, col, errNoToken)
	}
	for _, op := range operators {
		if bytes.HasPrefix(src[off:], []byte(op)) {
			to, ok := table[op]
			if !ok {
				break
			}
			m := mutation{Offset: off, From: op, To: to}
			if tokens[op].Precedence() != tokens[to].Precedence() {
				if m.Open, m.Close, ok = binaryAt(src, off); !ok {
					return mutation{}, fmt.Errorf("%d:%d (%s): no binary expression: %w", line, col, typ, errNoToken)
				}
			}
			return m, nil
		}
	}
	return mutation{}, fmt.Errorf("%d:%d (%s): %w", line, col, typ, errNoToken)
}

// binaryAt returns the offsets where the binary expression whose operator
// is at off starts and ends.
func binaryAt(src []byte, off int) (start, end int, ok bool) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.SkipObjectResolution)
	if err != nil {
		return 0, 0, false
	}
	tf := fset.File(f.Pos())
	ast.Inspect(f, func(n ast.Node) bool {
		if ok || n == nil {
			return false
		}
		if b, is := n.(*ast.BinaryExpr); is && tf.Offset(b.OpPos) == off {
			start, end, ok = tf.Offset(b.Pos()), tf.Offset(b.End()), true
		}
		return !ok
	})
	return start, end, ok
}

// apply returns src with m applied.
func apply(src []byte, m mutation) []byte {
	out := make([]byte, 0, len(src)+len(m.To)+2)
	if m.Close == 0 {
		out = append(out, src[:m.Offset]...)
		out = append(out, m.To...)
		return append(out, src[m.Offset+len(m.From):]...)
	}
	out = append(out, src[:m.Open]...)
	out = append(out, '(')
	out = append(out, src[m.Open:m.Offset]...)
	out = append(out, m.To...)
	out = append(out, src[m.Offset+len(m.From):m.Close]...)
	out = append(out, ')')
	return append(out, src[m.Close:]...)
}

// where tells where offset off of the Go file src lies: inFunc is false
// when it is outside every function's body, in a package-level
// declaration, which coverage never counts (gremlins reports such a
// mutant as not covered and runs no test). anchor is the offset whose
// coverage stands for off's: off itself, or, for an expression of a case
// clause (which no coverage block holds either), the switch statement's.
func where(src []byte, off int) (inFunc bool, anchor int, err error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.SkipObjectResolution)
	if err != nil {
		return false, 0, err
	}
	tf := fset.File(f.Pos())
	pos := tf.Pos(off)
	anchor = off
	var sw ast.Node // the innermost switch statement around pos
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil || pos < n.Pos() || pos >= n.End() {
			return false
		}
		switch n := n.(type) {
		case *ast.FuncDecl:
			inFunc = inFunc || (n.Body != nil && pos >= n.Body.Pos() && pos < n.Body.End())
		case *ast.FuncLit:
			inFunc = inFunc || (pos >= n.Body.Pos() && pos < n.Body.End())
		case *ast.SwitchStmt, *ast.TypeSwitchStmt:
			sw = n
		case *ast.CaseClause:
			for _, e := range n.List {
				if pos >= e.Pos() && pos < e.End() && sw != nil {
					anchor = tf.Offset(sw.Pos())
				}
			}
		}
		return true
	})
	return inFunc, anchor, nil
}

// lineCol returns the 1-based line and column (in bytes) of offset off of
// src.
func lineCol(src []byte, off int) (line, col int) {
	line = 1 + bytes.Count(src[:off], []byte("\n"))
	return line, off - bytes.LastIndexByte(src[:off], '\n')
}
