package cli

import (
	"strconv"
	"time"
)

// The renderers below write the readable forms of the API's documents. They
// are pure: a document (and now, for "2 s ago") in, text out. A value the
// server did not send, or sent as null, prints as "unknown" (unknownText),
// in a line and in a table alike; "-" stands for none (no slot, no zone,
// not drained), never for unknown. nil sent means all fields were sent.

// unknownText is how every renderer says that a value is not known: not
// sent, sent as null (a hit rate before any traffic), or empty where it
// cannot be.
const unknownText = "unknown"

// known returns s, or unknownText when the field was not sent.
func known(sent bool, s string) string {
	if !sent {
		return unknownText
	}
	return s
}

// orUnknown returns s, or unknownText when it is empty: for a value that
// is never empty when known (a node ID, who froze).
func orUnknown[T ~string](s T) string {
	if s == "" {
		return unknownText
	}
	return string(s)
}

// orDash returns s, or "-" when it is empty: for a value whose absence
// means none (no zone, no address of a vacant slot).
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func formatHitRate(h float64) string { return strconv.FormatFloat(h, 'f', 2, 64) }

func formatNumber(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// timeOr prints a time in RFC 3339 to the second, and none for the zero
// time.
func timeOr(t time.Time, none string) string {
	if t.IsZero() {
		return none
	}
	return t.UTC().Format(time.RFC3339)
}
