package main

import (
	"context"
	"math"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"sync"
	"time"

	"github.com/mcrib/mcrib/controlloop"
	"github.com/mcrib/mcrib/leader"
)

// Timeouts of a boot forwarded to the leader: a black-holed leader must not
// stall each boot for the kernel's connect timeout. After a failure the
// follower stops trying for leaderRetryAfter and admits its share.
const (
	forwardDialTimeout = 250 * time.Millisecond
	forwardTimeout     = time.Second
	leaderRetryAfter   = 2 * time.Second
)

// forwardedHeader marks a boot a replica forwarded; its value is the
// forwarding replica's session, which the receiver checks against the live
// replicas' sessions, so an application cannot send it to skip forwarding.
const forwardedHeader = "X-Mcrib-Forwarded"

// replicas tells the API about the pool's live replicas;
// replicaSet implements it over the loop and the elector.
type replicas interface {
	// Count returns the live replicas, this one included (at least 1).
	Count() int
	// Has reports whether session is a live replica's session.
	Has(session string) bool
	// Session returns this replica's session, "" when it has none.
	Session() string
}

// replicaSet is the replicas of a running mcrib serve.
type replicaSet struct {
	loop    *controlloop.Loop
	elector *leader.Elector
}

func (r replicaSet) Count() int              { return r.loop.Replicas() }
func (r replicaSet) Has(session string) bool { return r.loop.ReplicaSession(session) }
func (r replicaSet) Session() string {
	m, _ := r.elector.Member()
	return m.Session()
}

// alone is the replicas of a process that runs by itself.
type alone struct{}

func (alone) Count() int      { return 1 }
func (alone) Has(string) bool { return false }
func (alone) Session() string { return "" }

// postBoot answers POST /v1/boot. One limit holds for the whole pool
// whichever replica is called (CONTRACT.md invariant 8): the leader admits
// from the pool's limit; a follower forwards the boot to the leader's
// leader_id, and admits only its share (the limit divided by the live
// replicas) when the leader cannot be reached, or when another replica
// forwarded the boot here taking this process for the leader.
func (a *apiServer) postBoot(w http.ResponseWriter, r *http.Request) error {
	if a.leader == nil {
		return a.admitLocally(w, false)
	}
	leading, id := a.leader()
	switch {
	case leading:
		return a.admitLocally(w, false)
	case r.Header.Get(forwardedHeader) != "" && a.replicas.Has(r.Header.Get(forwardedHeader)):
		return a.admitLocally(w, true) // never forwarded twice
	case id == "" || a.fwd.leaderDown(time.Now()):
		return a.admitLocally(w, true)
	}
	a.forward.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), leaderKey{}, id)))
	return nil
}

type leaderKey struct{}

// forwardState remembers a leader that could not be reached, so that boots
// do not each wait for it, and logs each change once rather than every
// failed forward. It is safe for concurrent use.
type forwardState struct {
	mu        sync.Mutex
	downUntil time.Time
	down      bool
}

func (f *forwardState) leaderDown(now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return now.Before(f.downUntil)
}

// failed records a failed forward; it reports whether the leader was
// reachable before (a change worth a log line).
func (f *forwardState) failed(now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.downUntil = now.Add(leaderRetryAfter)
	changed := !f.down
	f.down = true
	return changed
}

// reached records a forward that got an answer; it reports whether the
// leader was unreachable before.
func (f *forwardState) reached() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	changed := f.down
	f.down, f.downUntil = false, time.Time{}
	return changed
}

// newBootForwarder returns the proxy a follower sends boots through.
func (a *apiServer) newBootForwarder() *httputil.ReverseProxy {
	dialer := &net.Dialer{Timeout: forwardDialTimeout}
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			id, _ := pr.In.Context().Value(leaderKey{}).(string)
			pr.Out.URL.Scheme = "http"
			if a.forwardTLS != nil {
				pr.Out.URL.Scheme = "https"
			}
			pr.Out.URL.Host = id
			pr.Out.Host = id
			pr.Out.Header.Set(forwardedHeader, a.replicas.Session())
			ctx, cancel := context.WithTimeout(pr.Out.Context(), forwardTimeout)
			context.AfterFunc(pr.In.Context(), cancel)
			pr.Out = pr.Out.WithContext(ctx)
		},
		Transport: &http.Transport{
			DialContext:           dialer.DialContext,
			MaxIdleConnsPerHost:   64,
			ResponseHeaderTimeout: forwardTimeout,
			TLSClientConfig:       a.forwardTLS,
		},
		ModifyResponse: func(*http.Response) error {
			if a.fwd.reached() {
				a.logger.Info("the leader answers forwarded boots again")
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if a.fwd.failed(time.Now()) {
				a.logger.Warn("forwarding boots to the leader failed; admitting this replica's share of the limit until it answers",
					"err", err, "replicas", a.replicas.Count())
			}
			if err := a.admitLocally(w, true); err != nil {
				writeError(w, err)
			}
		},
	}
}

// admitLocally answers a boot from this process's limiter: the pool's
// limit, or this replica's share of it.
func (a *apiServer) admitLocally(w http.ResponseWriter, share bool) error {
	var (
		ok    bool
		retry time.Duration
	)
	if share {
		ok, retry = a.boot.AdmitShare(a.replicas.Count())
	} else {
		ok, retry = a.boot.Admit()
	}
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
