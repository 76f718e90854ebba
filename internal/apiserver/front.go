package apiserver

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"

	"github.com/mcrib/mcrib/mcribapi"
)

// IsLoopbackListen reports whether a listen address is reachable only from
// this host: "localhost" or a loopback IP. A wildcard or empty host, or any
// other name, is not.
func IsLoopbackListen(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// hostGuard refuses requests whose Host header names neither this
// process's listen address nor its advertise address, so that a page whose
// name was rebound to this host's address (DNS rebinding) cannot drive a
// token-less mcrib from an operator's browser. A loopback or wildcard
// listen address also accepts the loopback names (localhost, 127.0.0.1,
// [::1]) with its port. The zero value refuses everything; it is safe for
// concurrent use once built.
type hostGuard struct {
	next    http.Handler
	allowed map[string]bool // lower-case host:port
	port    string          // the default port of a Host without one: 80, or 443 over TLS
}

// newHostGuard returns h behind a Host check for a server bound to listen
// (its port resolved) and also known as names (the --listen text, the
// advertise address).
func newHostGuard(h http.Handler, listen string, names []string, overTLS bool) *hostGuard {
	g := &hostGuard{next: h, allowed: map[string]bool{}, port: "80"}
	if overTLS {
		g.port = "443"
	}
	for _, a := range append([]string{listen}, names...) {
		if a != "" {
			g.allowed[strings.ToLower(a)] = true
		}
	}
	if host, port, err := net.SplitHostPort(listen); err == nil {
		ip, ipErr := netip.ParseAddr(host)
		if host == "" || strings.EqualFold(host, "localhost") || (ipErr == nil && (ip.IsLoopback() || ip.IsUnspecified())) {
			for _, name := range []string{"localhost", "127.0.0.1", "::1"} {
				g.allowed[net.JoinHostPort(name, port)] = true
			}
		}
	}
	return g
}

// ServeHTTP answers 421 Misdirected Request to a request for another host.
func (g *hostGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !g.allows(r.Host) {
		writeError(w, mcribapi.Errorf(http.StatusMisdirectedRequest, "this mcrib answers only requests addressed to its listen or advertise address, not to host %q (set a token to serve other names)", r.Host))
		return
	}
	g.next.ServeHTTP(w, r)
}

// allows reports whether host (a Host header) names this server.
func (g *hostGuard) allows(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if _, _, err := net.SplitHostPort(host); err != nil {
		host = net.JoinHostPort(strings.Trim(host, "[]"), g.port)
	}
	return g.allowed[host]
}

// forwardRoots returns the certificates a replica trusts when it forwards
// a boot to the leader over TLS: the system pool (which honours
// SSL_CERT_FILE and SSL_CERT_DIR) plus every CA or self-signed certificate
// in the --tls-cert file, so replicas that share one self-signed
// certificate, or carry their CA in the chain file, verify each other.
func forwardRoots(certFile string) (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	data, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("reading --tls-cert: %w", err)
	}
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parsing --tls-cert: %w", err)
		}
		selfSigned := bytes.Equal(c.RawIssuer, c.RawSubject) && c.CheckSignature(c.SignatureAlgorithm, c.RawTBSCertificate, c.Signature) == nil
		if c.IsCA || selfSigned {
			pool.AddCert(c)
		}
	}
	return pool, nil
}
