package apiserver

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/mcrib/mcrib/mcribapi"
)

// A replace that reaches a follower, whose loop answers
// mcribapi.ErrNotLeader, is forwarded to the leader, as boots are
// (bootapi.go). Drains and undrains need no forwarding: any replica stores
// them in KV.

// forwardedForHeader carries, on a call one replica forwards to the
// leader, who made the call; the leader believes it only from a live
// replica (forwardedHeader).
const forwardedForHeader = "X-Mcrib-Forwarded-For"

// zoneForwardDial bounds the connection to the leader of a forwarded
// replace. The whole call gets forwardBudget of the server's write timeout
// (a replace flushes the new holder before it answers, so it gets longer
// than a boot), so that its answer is written before the write deadline.
const zoneForwardDial = time.Second

// maxLeaderAnswer bounds how much of the leader's answer to a forwarded
// call is read.
const maxLeaderAnswer = 16 << 20

// caller names who made a zone call: who(r), or, on a call a live
// replica forwarded here, the original caller as that replica saw it.
func (a *Server) caller(r *http.Request) string {
	if orig := r.Header.Get(forwardedForHeader); orig != "" && a.replicas.Has(r.Header.Get(forwardedHeader)) {
		return orig + " via " + r.RemoteAddr
	}
	return a.who(r)
}

// forwardToLeader sends a zone call (what: "the replace") that reached a
// follower whose loop answered ErrNotLeader to the leader's leader_id, as
// boots are forwarded (over TLS with --tls-cert), with the same method,
// path and body and the caller's Authorization header, and answers with
// the leader's answer. A call that another replica forwarded here is not
// sent on again.
func (a *Server) forwardToLeader(w http.ResponseWriter, r *http.Request, what string, body []byte) error {
	var leaderID string
	if a.leader != nil {
		_, leaderID = a.leader()
	}
	switch {
	case r.Header.Get(forwardedHeader) != "":
		return mcribapi.Errorf(http.StatusServiceUnavailable, "%s was forwarded to this replica, which does not lead the pool; the leadership is changing, try again in a few seconds", what)
	case leaderID == "":
		return mcribapi.Errorf(http.StatusServiceUnavailable, "this replica does not lead the pool and no leader is known to carry out %s; try again in a few seconds", what)
	}
	scheme := "http"
	if a.forwardTLS != nil {
		scheme = "https"
	}
	target := scheme + "://" + leaderID + r.URL.EscapedPath()
	budget := forwardBudget(a.writeTimeout)
	ctx, cancel := context.WithTimeout(r.Context(), budget)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, r.Method, target, bytes.NewReader(body))
	if err != nil {
		return mcribapi.Errorf(http.StatusServiceUnavailable, "the leader's address %q does not make a URL: %v", leaderID, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if auth := r.Header.Get("Authorization"); auth != "" {
		req.Header.Set("Authorization", auth)
	}
	req.Header.Set(forwardedHeader, a.replicas.Session())
	req.Header.Set(forwardedForHeader, a.who(r))
	rt := a.opts.ForwardTransport
	if rt == nil {
		dialer := &net.Dialer{Timeout: zoneForwardDial}
		tr := &http.Transport{DialContext: dialer.DialContext, TLSClientConfig: a.forwardTLS}
		defer tr.CloseIdleConnections()
		rt = tr
	}
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil && errors.Is(err, context.DeadlineExceeded) && r.Context().Err() == nil {
		return mcribapi.Errorf(http.StatusServiceUnavailable, "the leader at %s did not answer %s within %s; it may still carry it out, so check mcrib status before trying again", leaderID, what, budget)
	}
	if err != nil {
		return mcribapi.Errorf(http.StatusServiceUnavailable, "the leader at %s could not be reached to carry out %s: %v", leaderID, what, unwrapURL(err))
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxLeaderAnswer))
	if err != nil {
		return mcribapi.Errorf(http.StatusServiceUnavailable, "the leader at %s answered %s, but its answer could not be read: %v", leaderID, what, err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(resp.StatusCode)
	w.Write(answer)
	return nil
}

// unwrapURL drops the "Post URL:" wrapping of a client error.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
