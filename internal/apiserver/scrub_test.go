package apiserver

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/mcrib/mcrib/mcribapi"
)

func TestScrub(t *testing.T) {
	s := newScrubber("consul.internal:8500", "mcrib")
	tests := []struct{ in, want string }{
		{`consul is unreachable: reading mcrib/default/ from consul: Get "http://consul.internal:8500/v1/kv/mcrib/default/?recurse=": dial tcp 10.0.0.2:8500: connect: connection refused`,
			`consul is unreachable: reading the pool's keys from consul: the request to Consul: dial tcp Consul: connect: connection refused`},
		{`reading mcrib/default/slotmap from consul: Unexpected response code: 403 (Permission denied: token lacks permission 'key:read' on "mcrib/default/slotmap")`,
			`reading the pool's slotmap key from consul: Unexpected response code: 403 (Permission denied: token lacks permission 'key:read' on "the pool's slotmap key")`},
		{`Put "https://[fd00::1]:8501/v1/txn": context deadline exceeded`, `the request to Consul: context deadline exceeded`},
		{`dial tcp [fd00::1]:8500: i/o timeout`, `dial tcp Consul: i/o timeout`},
		{`no answer from consul.internal:8500`, `no answer from Consul`},
		{`the freeze document in Consul KV is corrupt: unexpected end of JSON input`, `the freeze document in Consul KV is corrupt: unexpected end of JSON input`},
		{"", ""},
	}
	for _, tt := range tests {
		got := s.text(tt.in)
		if got != tt.want {
			t.Errorf("text(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
		for _, leak := range []string{"http://", "https://", "/v1/", "mcrib/default", "8500", "10.0.0.2"} {
			if strings.Contains(got, leak) {
				t.Errorf("text(%q) = %q still shows %q", tt.in, got, leak)
			}
		}
	}
	var nilScrubber *scrubber
	if got := nilScrubber.text("mcrib/default/slotmap"); got != "mcrib/default/slotmap" {
		t.Errorf("the nil scrubber changed %q", got)
	}
	err := s.err(mcribapi.Errorf(http.StatusServiceUnavailable, "not ready: dial tcp 10.0.0.2:8500: refused"))
	var he *mcribapi.Error
	if !errors.As(err, &he) || he.Status != http.StatusServiceUnavailable || he.Message != "not ready: dial tcp Consul: refused" {
		t.Errorf("err: %#v", err)
	}
}
