package cli

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzParseAddr checks the CLI's --addr parsing: an accepted address is an
// http or https base URL with a host and no trailing slash, query,
// fragment or user, and parsing it again changes nothing.
func FuzzParseAddr(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:7070", "127.0.0.1:7070", "https://mcrib.example/", "https://[::1]:7443/base/", "ftp://x", "http://u@h", " http://h:1/?q ", "http://%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		base, err := ParseAddr(s)
		if err != nil {
			return
		}
		u, err := url.Parse(base)
		switch {
		case err != nil:
			t.Fatalf("ParseAddr(%q) = %q, which does not parse: %v", s, base, err)
		case u.Scheme != "http" && u.Scheme != "https":
			t.Fatalf("ParseAddr(%q) = %q: scheme %q", s, base, u.Scheme)
		case u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "":
			t.Fatalf("ParseAddr(%q) = %q: not a plain base URL", s, base)
		case strings.HasSuffix(base, "/"):
			t.Fatalf("ParseAddr(%q) = %q ends in a slash", s, base)
		}
		if again, err := ParseAddr(base); err != nil || again != base {
			t.Fatalf("ParseAddr(%q) = %q, then %q, %v", s, base, again, err)
		}
	})
}
