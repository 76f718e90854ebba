package mcribapi

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// The parts of a request besides its body: the names a path carries, the
// queries of GET /v1/slotmap and GET /v1/events, and the operator's name.

// Bounds of the names a path carries.
const (
	// MaxZoneName is the longest zone name of PUT and DELETE
	// /v1/drain/{zone}, in characters.
	MaxZoneName = 128
	// MaxNodeID is the longest node ID of POST /v1/nodes/{id}/replace, in
	// bytes of UTF-8.
	MaxNodeID = 256
)

// CheckZone checks the zone a path names: at most MaxZoneName characters
// of [A-Za-z0-9._:-] (a zone named otherwise in Consul cannot be drained
// through the API). Its errors wrap ErrBadRequest and are one sentence.
func CheckZone(zone string) error {
	if !utf8.ValidString(zone) || utf8.RuneCountInString(zone) > MaxZoneName {
		return fmt.Errorf("%w: a zone name is at most %d characters long", ErrBadRequest, MaxZoneName)
	}
	for _, c := range zone {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.ContainsRune("-_.:", c)) {
			return fmt.Errorf("%w: zone %q has a character other than the ASCII letters and digits, '-', '_', '.' and ':'", ErrBadRequest, zone)
		}
	}
	return nil
}

// CheckNodeID checks the node ID a path names: at most MaxNodeID bytes of
// UTF-8, no '/' and nothing that does not print. Its errors wrap
// ErrBadRequest and are one sentence.
func CheckNodeID(id string) error {
	switch {
	case !utf8.ValidString(id) || len(id) > MaxNodeID:
		return fmt.Errorf("%w: a node ID is at most %d bytes of UTF-8", ErrBadRequest, MaxNodeID)
	case strings.ContainsFunc(id, func(c rune) bool { return c == '/' || !unicode.IsPrint(c) }):
		return fmt.Errorf("%w: node ID %q has a '/' or a character that does not print", ErrBadRequest, id)
	}
	return nil
}

// IndexHeader carries the index of a slot map answer: the 64-bit FNV-1a
// hash of the document's JSON, in decimal, never 0. Equal documents have
// equal indexes on every replica.
const IndexHeader = "X-Mcrib-Index"

// MapAgeHeader carries the age of a slot map answer, in whole
// milliseconds: how long before the answer the replica last read that
// document from Consul successfully (docs/api.md, "Fresh maps"). A client
// counts its map's age from it.
const MapAgeHeader = "X-Mcrib-Map-Age"

// Bounds of ?wait= on GET /v1/slotmap.
const (
	DefaultSlotMapWait = 60 * time.Second
	MaxSlotMapWait     = 5 * time.Minute
)

// SlotMapQuery is the query of GET /v1/slotmap.
type SlotMapQuery struct {
	// Blocking is true when ?index= was given: the answer waits until the
	// document's index differs from Index, Wait passes or the server shuts
	// down.
	Blocking bool
	Index    uint64
	Wait     time.Duration
}

// ParseSlotMapQuery reads ?index= (a whole number, the IndexHeader of an
// earlier answer) and ?wait= (a duration above zero, default
// DefaultSlotMapWait; a longer one than MaxSlotMapWait is cut to it, as
// Consul's blocking queries do). Its errors wrap ErrBadRequest and are one
// sentence.
func ParseSlotMapQuery(q url.Values) (SlotMapQuery, error) {
	out := SlotMapQuery{Wait: DefaultSlotMapWait}
	if s := q.Get("index"); q.Has("index") {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return out, fmt.Errorf("%w: index must be the X-Mcrib-Index of an earlier answer (a whole number), got %q", ErrBadRequest, s)
		}
		out.Blocking, out.Index = true, n
	}
	if s := q.Get("wait"); q.Has("wait") {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return out, fmt.Errorf("%w: wait must be a duration above 0s (like 30s or 5m; longer than %s waits %s), got %q", ErrBadRequest, MaxSlotMapWait, MaxSlotMapWait, s)
		}
		out.Wait = min(d, MaxSlotMapWait)
	}
	return out, nil
}

// ParseEventsSince reads ?since= of GET /v1/events: the seq of an earlier
// event, a whole number; 0 when not given. Its error wraps ErrBadRequest
// and is one sentence.
func ParseEventsSince(q url.Values) (uint64, error) {
	s := q.Get("since")
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: since must be the seq of an earlier event, a whole number ≥ 0, not %q", ErrBadRequest, s)
	}
	return n, nil
}

// OperatorHeader carries, on a call that changes state, the name of the
// operator who made it, as the CLI's --who gives it ("alice@laptop"). The
// server records it as the "by" of the freeze, drain or replace and of
// their events, in place of the caller's socket address. It is a claim,
// not an identity: anyone with the token can send any name, so it names
// who acted for the audit, and the token stays the guard.
const OperatorHeader = "X-Mcrib-Operator"

// MaxOperatorName bounds the operator name that is recorded, in runes.
const MaxOperatorName = 128

// OperatorName returns the operator name that a header value v carries,
// as it is recorded: trimmed, control characters and invalid UTF-8
// dropped, cut to MaxOperatorName runes. It returns "" when nothing is
// left.
func OperatorName(v string) string {
	var b strings.Builder
	n := 0
	for _, r := range strings.TrimSpace(v) {
		if n == MaxOperatorName {
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
