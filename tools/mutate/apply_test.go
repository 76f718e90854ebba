package main

import (
	"errors"
	"strings"
	"testing"
)

const sample = `package p

const limit = 2 * 3

func f(a, b int, ok bool) int {
	if a <= b && ok && a > 0 {
		a++
	}
	switch {
	case a-b > limit:
		return -a
	}
	return a
}
`

// pos returns the line and column of the n-th (0-based) occurrence of
// needle in sample.
func pos(t *testing.T, needle string, n int) (int, int) {
	t.Helper()
	off := -1
	for range n + 1 {
		i := strings.Index(sample[off+1:], needle)
		if i < 0 {
			t.Fatalf("%q not found %d times", needle, n+1)
		}
		off += 1 + i
	}
	return lineCol([]byte(sample), off)
}

// TestLocate: the token at a gremlins position is read whole and turned
// into what gremlins' table says, and the mutant source differs from the
// original only there.
func TestLocate(t *testing.T) {
	tests := []struct {
		needle   string
		n        int
		typ      string
		from, to string
	}{
		{"<=", 0, "CONDITIONALS_BOUNDARY", "<=", "<"},
		{"<=", 0, "CONDITIONALS_NEGATION", "<=", ">"},
		{"&&", 0, "INVERT_LOGICAL", "&&", "||"},
		{"++", 0, "INCREMENT_DECREMENT", "++", "--"},
		{"-", 0, "ARITHMETIC_BASE", "-", "+"},
		{"-a", 0, "INVERT_NEGATIVES", "-", "+"},
		{"*", 0, "ARITHMETIC_BASE", "*", "/"},
	}
	for _, tt := range tests {
		line, col := pos(t, tt.needle, tt.n)
		m, err := locate([]byte(sample), line, col, tt.typ)
		if err != nil {
			t.Fatalf("%s at %d:%d: %v", tt.typ, line, col, err)
		}
		if m.From != tt.from || m.To != tt.to {
			t.Errorf("%s at %d:%d: %q→%q, want %q→%q", tt.typ, line, col, m.From, m.To, tt.from, tt.to)
		}
		got := string(apply([]byte(sample), m))
		if want := sample[:m.Offset] + tt.to + sample[m.Offset+len(tt.from):]; tt.typ != "INVERT_LOGICAL" && got != want {
			t.Errorf("%s at %d:%d: the mutant source differs elsewhere", tt.typ, line, col)
		}
	}
	// The first && of a && b && c turned into || is (a || b) && c, the
	// tree gremlins mutates, not a || (b && c).
	line, col := pos(t, "&&", 0)
	m, err := locate([]byte(sample), line, col, "INVERT_LOGICAL")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(apply([]byte(sample), m)), strings.Replace(sample, "a <= b && ok", "(a <= b || ok)", 1); got != want {
		t.Errorf("INVERT_LOGICAL of the first &&:\n%s\nwant\n%s", got, want)
	}
	line, col = pos(t, "ok &&", 0)
	if _, err := locate([]byte(sample), line, col, "INVERT_LOGICAL"); !errors.Is(err, errNoToken) {
		t.Errorf("no operator at %d:%d: err %v, want errNoToken", line, col, err)
	}
}

// TestWhere: a package-level declaration is outside every function, and a
// case clause's expression stands for its switch statement's coverage.
func TestWhere(t *testing.T) {
	src := []byte(sample)
	off := func(needle string) int { return strings.Index(sample, needle) }
	if in, anchor, err := where(src, off("* 3")); err != nil || in || anchor != off("* 3") {
		t.Errorf("the const's *: inFunc %v, anchor %d, err %v; want false, itself", in, anchor, err)
	}
	if in, anchor, err := where(src, off("<=")); err != nil || !in || anchor != off("<=") {
		t.Errorf("the if's <=: inFunc %v, anchor %d, err %v; want true, itself", in, anchor, err)
	}
	if in, anchor, err := where(src, off("> limit")); err != nil || !in || anchor != off("switch") {
		t.Errorf("the case's >: inFunc %v, anchor %d, err %v; want true, the switch at %d", in, anchor, err, off("switch"))
	}
	if in, anchor, err := where(src, off("-a")); err != nil || !in || anchor != off("-a") {
		t.Errorf("the return's -: inFunc %v, anchor %d, err %v; want true, itself", in, anchor, err)
	}
}

// TestBlockHolds: a coverage block holds the positions from its start to
// just before its end.
func TestBlockHolds(t *testing.T) {
	b := block{startLine: 3, startCol: 10, endLine: 5, endCol: 2}
	for _, tt := range []struct {
		line, col int
		want      bool
	}{{3, 9, false}, {3, 10, true}, {4, 1, true}, {5, 1, true}, {5, 2, false}, {2, 50, false}, {6, 1, false}} {
		if got := b.holds(tt.line, tt.col); got != tt.want {
			t.Errorf("holds(%d, %d) = %v, want %v", tt.line, tt.col, got, tt.want)
		}
	}
}
