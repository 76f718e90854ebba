package mcribapi

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestOperatorName(t *testing.T) {
	for in, want := range map[string]string{
		"alice@laptop":           "alice@laptop",
		"  bob@host-b  ":         "bob@host-b",
		"":                       "",
		"   ":                    "",
		"eve\r\nX-Injected: 1":   "eveX-Injected: 1",
		"\x00\x01":               "",
		"zoë@hôte":               "zoë@hôte",
		"bad\xffutf8":            "badutf8",
		strings.Repeat("n", 300): strings.Repeat("n", MaxOperatorName),
		"\tcarol@ops\t":          "carol@ops",
	} {
		if got := OperatorName(in); got != want {
			t.Errorf("OperatorName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRequestParts(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string // "" for none
	}{
		{"zone", CheckZone("eu-west-1a"), ""},
		{"zone with a dollar", CheckZone("b$c"), `zone "b$c" has a character other than`},
		{"zone too long", CheckZone(strings.Repeat("z", MaxZoneName+1)), "at most 128 characters"},
		{"node", CheckNodeID("mc-1"), ""},
		{"node with a slash", CheckNodeID("a/b"), `node ID "a/b" has a '/'`},
		{"node too long", CheckNodeID(strings.Repeat("n", MaxNodeID+1)), "at most 256 bytes"},
	} {
		if (tc.want == "") != (tc.err == nil) || tc.err != nil && (!strings.Contains(Sentence(tc.err), tc.want) || StatusCode(tc.err) != 400) {
			t.Errorf("%s: %v, want %q (400)", tc.name, tc.err, tc.want)
		}
	}
	q, err := ParseSlotMapQuery(url.Values{"index": {"7"}, "wait": {"1h"}})
	if err != nil || !q.Blocking || q.Index != 7 || q.Wait != MaxSlotMapWait {
		t.Errorf("?index=7&wait=1h: %+v, %v; want blocking on 7 for %s", q, err, MaxSlotMapWait)
	}
	if _, err := ParseSlotMapQuery(url.Values{"wait": {"0s"}}); !errors.Is(err, ErrBadRequest) {
		t.Errorf("?wait=0s: %v, want ErrBadRequest", err)
	}
	if n, err := ParseEventsSince(url.Values{"since": {"41"}}); n != 41 || err != nil {
		t.Errorf("?since=41: %d, %v", n, err)
	}
	if _, err := ParseEventsSince(url.Values{"since": {"-1"}}); !errors.Is(err, ErrBadRequest) {
		t.Errorf("?since=-1: %v, want ErrBadRequest", err)
	}
}

func TestStatusCode(t *testing.T) {
	for err, want := range map[error]int{
		Errorf(http.StatusTeapot, "tea"):                      http.StatusTeapot,
		fmt.Errorf("%w: no reason", ErrBadRequest):            http.StatusBadRequest,
		fmt.Errorf("%w: zone q", ErrUnknownZone):              http.StatusNotFound,
		ErrNotDrained:                                         http.StatusNotFound,
		ErrUnknownNode:                                        http.StatusNotFound,
		fmt.Errorf("%w: the last undrained zone", ErrRefused): http.StatusConflict,
		ErrNotLeader:                                          http.StatusServiceUnavailable,
		errors.New("consul is away"):                          http.StatusInternalServerError,
	} {
		if got := StatusCode(err); got != want {
			t.Errorf("StatusCode(%v) = %d, want %d", err, got, want)
		}
	}
	if got := Sentence(fmt.Errorf("%w: the last undrained zone", ErrRefused)); got != "the last undrained zone" {
		t.Errorf("Sentence = %q", got)
	}
}
