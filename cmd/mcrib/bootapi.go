package main

import (
	"context"
	"math"
	"net/http"
	"net/http/httputil"
	"strconv"
	"time"
)

// postBoot answers POST /v1/boot. One limit holds for the whole pool
// whichever replica is called (CONTRACT.md invariant 8): a follower forwards
// the boot to the leader, and admits from its own copy of the limit only
// when the leader cannot be reached.
func (a *apiServer) postBoot(w http.ResponseWriter, r *http.Request) error {
	if a.leader != nil && r.Header.Get(forwardedHeader) == "" {
		if leading, id := a.leader(); !leading && id != "" {
			a.forward.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), leaderKey{}, id)))
			return nil
		}
	}
	return a.admitLocally(w)
}

// forwardedHeader marks a boot a follower forwarded, so it is never
// forwarded twice.
const forwardedHeader = "X-Mcrib-Forwarded"

type leaderKey struct{}

// newBootForwarder returns the proxy a follower sends boots through; when
// the leader cannot be reached, the follower admits from its own copy of
// the limit.
func (a *apiServer) newBootForwarder() *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			id, _ := pr.In.Context().Value(leaderKey{}).(string)
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = id
			pr.Out.Host = id
			pr.Out.Header.Set(forwardedHeader, "1")
		},
		Transport: &http.Transport{MaxIdleConnsPerHost: 64, ResponseHeaderTimeout: 2 * time.Second},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			a.logger.Warn("forwarding a boot to the leader failed; admitting locally", "err", err)
			if err := a.admitLocally(w); err != nil {
				writeError(w, err)
			}
		},
	}
}

// admitLocally answers a boot from this process's limiter.
func (a *apiServer) admitLocally(w http.ResponseWriter) error {
	ok, retry := a.boot.Admit()
	if a.rec != nil {
		a.rec.BootAdmission(ok)
	}
	if !ok {
		secs := int64(math.Ceil(retry.Seconds()))
		w.Header().Set("Retry-After", strconv.FormatInt(max(secs, 1), 10))
		writeJSON(w, http.StatusTooManyRequests, map[string]bool{"admitted": false})
		return nil
	}
	writeJSON(w, http.StatusOK, map[string]bool{"admitted": true})
	return nil
}
