package main

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// operatorHeader carries, on a call that changes state, the name of the
// operator who made it, as the CLI's --who gives it ("alice@laptop"). The
// server records it as the "by" of the freeze, drain or replace and of
// their events, in place of the caller's socket address. It is a claim, not
// an identity: anyone with the token can send any name, so it names who
// acted for the audit, and the token stays the guard.
const operatorHeader = "X-Mcrib-Operator"

// maxOperatorName bounds the operator name that is recorded, in runes.
const maxOperatorName = 128

// operatorName returns the operator name that header value v carries, as
// it is recorded: trimmed, control characters and invalid UTF-8 dropped,
// cut to maxOperatorName runes. It returns "" when nothing is left.
func operatorName(v string) string {
	var b strings.Builder
	n := 0
	for _, r := range strings.TrimSpace(v) {
		if n == maxOperatorName {
			break
		}
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			continue
		}
		b.WriteRune(r)
		n++
	}
	return strings.TrimSpace(b.String())
}
