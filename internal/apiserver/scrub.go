package apiserver

import (
	"errors"
	"net/url"
	"regexp"
	"strings"

	"github.com/mcrib/mcrib/mcribapi"
)

// scrubber takes Consul's addresses and KV paths out of texts the API
// serves to readers who showed no token (status last_error, /readyz, error
// bodies): "Get \"http://10.0.0.2:8500/v1/kv/mcrib/default/?recurse=\":
// dial tcp 10.0.0.2:8500: connect: connection refused" becomes "the
// request to Consul: dial tcp Consul: connect: connection refused". The
// log keeps the full text. The nil scrubber changes nothing; it is safe
// for concurrent use.
type scrubber struct {
	consul []string       // the --consul address as given and as host:port
	kv     *regexp.Regexp // a path under the KV prefix
}

var (
	scrubURL  = regexp.MustCompile(`(?:(?:GET|PUT|POST|DELETE|HEAD|Get|Put|Post|Delete|Head) )?"?[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"]+"?`)
	scrubDial = regexp.MustCompile(`(dial (?:tcp|tcp4|tcp6|unix)) (?:\[[^\]\s]*\]|[^\s\[:]+)(?::\d+)?`)
)

// newScrubber returns the scrubber of a server talking to Consul at
// consulAddr and keeping its state under kvPrefix.
func newScrubber(consulAddr, kvPrefix string) *scrubber {
	s := &scrubber{}
	if consulAddr != "" {
		s.consul = append(s.consul, consulAddr)
		if u, err := url.Parse(consulAddr); err == nil && u.Host != "" {
			s.consul = append(s.consul, u.Host)
		}
	}
	if kvPrefix != "" {
		s.kv = regexp.MustCompile(regexp.QuoteMeta(kvPrefix) + `/[^\s"'/]+/([A-Za-z0-9_.\-/]*)`)
	}
	return s
}

// text returns t without Consul URLs, addresses and KV paths.
func (s *scrubber) text(t string) string {
	if s == nil || t == "" {
		return t
	}
	t = scrubURL.ReplaceAllString(t, "the request to Consul")
	t = scrubDial.ReplaceAllString(t, "$1 Consul")
	for _, a := range s.consul {
		t = strings.ReplaceAll(t, a, "Consul")
	}
	if s.kv != nil {
		t = s.kv.ReplaceAllStringFunc(t, func(m string) string {
			name := s.kv.FindStringSubmatch(m)[1]
			if name == "" {
				return "the pool's keys"
			}
			return "the pool's " + strings.TrimSuffix(name, "/") + " key"
		})
	}
	return t
}

// err returns err with its message scrubbed, keeping its status.
func (s *scrubber) err(err error) error {
	if s == nil || err == nil {
		return err
	}
	var he *mcribapi.Error
	if errors.As(err, &he) {
		return &mcribapi.Error{Status: he.Status, Message: s.text(he.Message)}
	}
	return errors.New(s.text(err.Error()))
}
