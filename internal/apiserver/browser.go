package apiserver

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/mcrib/mcrib/mcribapi"
)

// The browser rule: a web page an operator visits must not be able to
// drive mcrib, token or not. A page's script can send a "simple" request
// (a text/plain POST, say) to the operator's loopback mcrib without a
// preflight, so the server itself refuses what a browser marks as coming
// from elsewhere. The checks run in the order 403 (here), 401, 413, 415,
// 400 (Server.auth and the handlers), and a refused call changes
// nothing and spends nothing. mcrib sends no Access-Control-Allow-*
// header, so no page of another origin reads an answer either.

// browserGuard refuses, with 403, a mutating call (any method but GET,
// HEAD and OPTIONS: PUT, POST, DELETE) that a browser marks as coming from
// another site, that carries an Origin other than this server's own (an
// empty Origin header counts as none), or,
// when --listen is a loopback address, whose Host is neither a loopback
// address nor localhost (DNS rebinding). Reads pass. It is safe for
// concurrent use once built.
type browserGuard struct {
	next     http.Handler
	scheme   string // the scheme this server serves: "http" or "https"
	loopback bool   // --listen is a loopback address
}

// newBrowserGuard returns next behind the browser rule, for a server that
// serves scheme and listens on a loopback address when loopback is true.
func newBrowserGuard(next http.Handler, scheme string, loopback bool) *browserGuard {
	return &browserGuard{next: next, scheme: scheme, loopback: loopback}
}

// ServeHTTP answers 403 with a JSON error to a call the rule refuses and
// passes every other to the next handler.
func (g *browserGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if why := browserRefusal(r, g.scheme, g.loopback); why != "" {
		writeError(w, mcribapi.Errorf(http.StatusForbidden, "%s", why))
		return
	}
	g.next.ServeHTTP(w, r)
}

// browserRefusal returns why the browser rule refuses r, a request to a
// server serving scheme (listening on a loopback address when loopback is
// true), as one sentence; "" when it does not.
func browserRefusal(r *http.Request, scheme string, loopback bool) string {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return ""
	}
	const use = "use the mcrib CLI, curl or another program, which send no such header"
	switch site := strings.ToLower(strings.TrimSpace(r.Header.Get("Sec-Fetch-Site"))); site {
	case "cross-site", "same-site":
		return "a web page of another site cannot change mcrib (the browser sent Sec-Fetch-Site: " + site + "); " + use
	}
	for _, origin := range r.Header.Values("Origin") {
		if strings.TrimSpace(origin) != "" && !sameOrigin(origin, scheme, r.Host) {
			return "a web page of origin " + strconv.Quote(origin) + " cannot change mcrib, which serves " + scheme + "://" + r.Host + "; " + use
		}
	}
	if loopback && !loopbackHost(r.Host) {
		return "this mcrib listens on a loopback address and takes changes only for a Host that is a loopback address or localhost, not " +
			strconv.Quote(r.Host) + " (a web page whose name was rebound to this host)"
	}
	return ""
}

// sameOrigin reports whether origin (an Origin header) has the scheme
// this server serves and the host and port of host (the request's Host
// header), a missing port being the scheme's default. "null" and anything
// that is not a bare scheme://host[:port] differ.
func sameOrigin(origin, scheme, host string) bool {
	u, err := url.Parse(strings.TrimSpace(origin))
	if err != nil || u.Host == "" || u.Opaque != "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/") {
		return false
	}
	if !strings.EqualFold(u.Scheme, scheme) {
		return false
	}
	oh, op := hostAndPort(u.Host, scheme)
	rh, rp := hostAndPort(host, scheme)
	return oh != "" && strings.EqualFold(oh, rh) && op == rp
}

// hostAndPort splits a host[:port] (an IPv6 address in brackets) into the
// host, without brackets, and the port, the scheme's default when there
// is none.
func hostAndPort(hp, scheme string) (host, port string) {
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		host, port = strings.TrimSuffix(strings.TrimPrefix(hp, "["), "]"), ""
	}
	if port == "" {
		port = "80"
		if scheme == "https" {
			port = "443"
		}
	}
	return host, port
}

// loopbackHost reports whether a Host header names this host only:
// localhost or a loopback address, with or without a port.
func loopbackHost(hostHeader string) bool {
	host, _ := hostAndPort(hostHeader, "http")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
