package bootgate

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/mcrib/mcrib/internal/apibody"
)

// forward sends a boot to the leader at leaderID and answers with the
// leader's answer. When this replica's own connection to the leader
// fails, the leader counts as unreachable for LeaderRetryAfter and the
// boot is admitted from the share. When the caller hung up first, nothing
// is admitted and the leader keeps counting as reachable: the failure is
// the caller's. body is the boot's body, already read; streamed (the
// reverted path) sends r.Body unread instead, so that a failure to read it
// is a failed forward.
func (g *Gate) forward(w http.ResponseWriter, r *http.Request, leaderID string, body []byte, streamed bool) {
	ctx, cancel := context.WithTimeout(r.Context(), g.timeout)
	defer cancel()
	var rd io.Reader = bytes.NewReader(body)
	size := int64(len(body))
	if streamed {
		rd, size = r.Body, r.ContentLength
	}
	out, err := http.NewRequestWithContext(ctx, http.MethodPost, g.scheme+"://"+leaderID+r.URL.RequestURI(), rd)
	if err != nil { // a leader ID that makes no URL cannot be reached
		g.leaderFailed(g.clock.Now(), err)
		g.admitShare(w, 2) // another replica leads: the pool has two at least
		return
	}
	out.ContentLength = size
	if size == 0 && !streamed {
		out.Body = http.NoBody
	}
	out.Header = forwardHeaders(r.Header)
	mark := g.id
	if mark == "" {
		mark = "forwarded"
	}
	out.Header.Set(ForwardedHeader, mark)
	resp, err := g.transport.RoundTrip(out)
	if err != nil {
		if !streamed && r.Context().Err() != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "the caller went away before the leader answered its boot; nothing was admitted here"})
			return
		}
		g.leaderFailed(g.clock.Now(), err)
		g.admitShare(w, 2) // another replica leads: the pool has two at least
		return
	}
	defer resp.Body.Close()
	g.leaderReached()
	relay(w, resp)
}

// relay writes the leader's answer to a forwarded boot. An answer whose
// body breaks off is still the leader's decision, told by its status.
func relay(w http.ResponseWriter, resp *http.Response) {
	answer, err := io.ReadAll(io.LimitReader(resp.Body, apibody.MaxBytes))
	if err != nil {
		switch resp.StatusCode {
		case http.StatusOK:
			answer = []byte(`{"admitted":true}` + "\n")
		case http.StatusTooManyRequests:
			answer = []byte(`{"admitted":false}` + "\n")
		default:
			writeJSON(w, http.StatusBadGateway, map[string]string{"error": "the leader's answer to the forwarded boot broke off"})
			return
		}
	}
	for _, h := range []string{"Content-Type", "Cache-Control", "Retry-After"} {
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(answer)
}

// hopHeaders are the hop-by-hop headers of RFC 9110, section 7.6.1, which
// a forward does not pass on.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// forwardHeaders returns the headers a forwarded boot carries: the
// caller's, less the hop-by-hop ones (and those Connection names), Host
// and Content-Length (the request sets its own), and a browser's Origin
// and Sec-Fetch-* (the browser rule: a forwarding replica strips them).
func forwardHeaders(in http.Header) http.Header {
	out := in.Clone()
	if out == nil {
		out = http.Header{}
	}
	for _, v := range in.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			out.Del(strings.TrimSpace(name))
		}
	}
	for _, h := range hopHeaders {
		out.Del(h)
	}
	out.Del("Host")
	out.Del("Content-Length")
	out.Del("Origin")
	for name := range out {
		if strings.HasPrefix(http.CanonicalHeaderKey(name), "Sec-Fetch-") {
			delete(out, name)
		}
	}
	return out
}

// defaultTransport is the transport of a Gate without one: dial within
// DialTimeout, the leader's headers within timeout, TLS verified with tc.
func defaultTransport(tc *tls.Config, timeout time.Duration) *http.Transport {
	dialer := &net.Dialer{Timeout: DialTimeout}
	return &http.Transport{
		DialContext:           dialer.DialContext,
		MaxIdleConnsPerHost:   64,
		ResponseHeaderTimeout: timeout,
		TLSClientConfig:       tc,
	}
}
