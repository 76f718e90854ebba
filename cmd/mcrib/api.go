package main

import (
	"bytes"
	"context"
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/internal/apibody"
	"github.com/mcrib/mcrib/internal/bootgate"
	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/ratelimit"
)

// maxBody is the largest request body the API reads.
const maxBody = apibody.MaxBytes

// controlPlane is the part of the control loop the API serves;
// *controlloop.Loop implements it.
type controlPlane interface {
	SlotMap() *cachenodes.SlotMap
	Changed() <-chan struct{}
	Status() mcribapi.Status
	Ready() error
	Freeze(ctx context.Context, reason, by string) (mcribapi.FreezeDoc, error)
	Unfreeze(ctx context.Context) error
}

// bootLimiter is the part of the boot limiter the API serves;
// *ratelimit.Service implements it.
type bootLimiter interface {
	Document() ratelimit.Document
	Set(ctx context.Context, st ratelimit.Setting, by string) (ratelimit.Document, error)
	Admit() (ok bool, retryAfter time.Duration)
	AdmitShare(replicas int) (ok bool, retryAfter time.Duration)
}

// bootRecorder counts admissions; *metrics.Recorder implements it.
type bootRecorder interface{ BootAdmission(admitted bool) }

// handler is an API handler that returns its error instead of writing it.
type handler func(w http.ResponseWriter, r *http.Request) error

// apiServer is the operator HTTP API of CONTRACT.md section 3.
type apiServer struct {
	loop    controlPlane
	boot    bootLimiter
	rec     bootRecorder
	token   string
	logger  *slog.Logger
	metrics http.Handler
	// leader tells whether this process leads and who does; a follower
	// forwards boots and replaces to the leader.
	leader func() (leading bool, leaderID string)
	// assured reports whether this process, while it leads, is sure no
	// other process leads (leader.Elector.IsAssured); nil: always.
	assured func() bool
	// id is this replica's leader_id (--advertise-addr): a boot is never
	// forwarded to it.
	id string
	// gate answers POST /v1/boot (newBootGate).
	gate *bootgate.Gate
	// writeTimeout is the server's write timeout, which a forwarded
	// replace must fit in (forwardBudget); 0 is the default.
	writeTimeout time.Duration
	// forwardTLS, when set, makes forwarded calls go over TLS verified
	// with it (--tls-cert); nil forwards over plain HTTP.
	forwardTLS *tls.Config
	// scrub takes Consul's addresses and KV paths out of served texts;
	// nil serves them as they are.
	scrub *scrubber
	// replicas are the pool's live replicas.
	replicas replicas
	// routes maps a path to its handlers by method.
	routes map[string]map[string]handler
	// clock times the waits of blocking reads; nil is the real clock.
	clock clock.Clock
	// stopping is closed by stopWaiting when the server shuts down, so
	// that blocked reads answer at once.
	stopping chan struct{}
	stopOnce sync.Once
	// ops records the decisions and the history (nil: both empty).
	ops *opsRecord
	// zones drains zones and replaces nodes: the loop when it can (nil:
	// those routes answer 503).
	zones zoneOps
}

func newAPIServer(loop controlPlane, boot bootLimiter, rec bootRecorder, metrics http.Handler, token string, logger *slog.Logger, leader func() (bool, string)) *apiServer {
	a := &apiServer{loop: loop, boot: boot, rec: rec, token: token, logger: logger, metrics: metrics, leader: leader, replicas: alone{}, stopping: make(chan struct{})}
	a.gate = a.newBootGate()
	a.routes = map[string]map[string]handler{
		"/v1/slotmap":   {http.MethodGet: a.getSlotMap},
		"/v1/status":    {http.MethodGet: a.getStatus},
		"/v1/freeze":    {http.MethodPut: a.auth(a.putFreeze), http.MethodDelete: a.auth(a.deleteFreeze)},
		"/v1/ratelimit": {http.MethodGet: a.getRateLimit, http.MethodPut: a.auth(a.putRateLimit)},
		"/v1/boot":      {http.MethodPost: a.postBoot},
		"/healthz":      {http.MethodGet: a.healthz},
		"/readyz":       {http.MethodGet: a.readyz},
		"/metrics":      {http.MethodGet: a.serveMetrics},
		"/v1/events":    {http.MethodGet: a.getEvents},
		"/v1/history":   {http.MethodGet: a.getHistory},
	}
	a.addZoneRoutes()
	dash := dashboardHandler()
	for _, p := range dashboardPaths {
		a.routes[p] = map[string]handler{http.MethodGet: func(w http.ResponseWriter, r *http.Request) error {
			dash.ServeHTTP(w, r)
			return nil
		}}
	}
	return a
}

// stopWaiting makes every blocked read answer now; the server calls it when
// it shuts down (http.Server.RegisterOnShutdown). It may be called more
// than once.
func (a *apiServer) stopWaiting() {
	a.stopOnce.Do(func() { close(a.stopping) })
}

// ServeHTTP routes by path, then method: an unknown path is 404, a known
// path with another method 405 with an Allow header, both as JSON errors.
func (a *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	methods, ok := a.routes[r.URL.Path]
	if !ok {
		methods, ok = a.paramRoute(r)
	}
	if !ok {
		writeError(w, mcribapi.Errorf(http.StatusNotFound, "there is no %s in the mcrib API", r.URL.Path))
		return
	}
	h, ok := methods[r.Method]
	if !ok && r.Method == http.MethodHead {
		h, ok = methods[http.MethodGet]
	}
	if !ok {
		allow := make([]string, 0, len(methods))
		for m := range methods {
			allow = append(allow, m)
		}
		slices.Sort(allow)
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, mcribapi.Errorf(http.StatusMethodNotAllowed, "%s does not take %s; it takes %s", r.URL.Path, r.Method, strings.Join(allow, ", ")))
		return
	}
	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	}
	if err := h(w, r); err != nil {
		writeError(w, a.scrub.err(err))
	}
}

// writeError turns err into the JSON error body and its status
// (mcribapi.StatusCode: an error that is not an *mcribapi.Error is a
// 500).
func writeError(w http.ResponseWriter, err error) {
	writeJSON(w, mcribapi.StatusCode(err), mcribapi.ErrorBody{Error: err.Error()})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body = []byte(`{"error":"encoding the answer failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

// readBody reads the request body under the API's body rules
// (internal/apibody): one over 64 KiB is a 413, one not sent as
// application/json a 415, one that cannot be read to its end a 400. An
// empty body is never a 415.
func readBody(r *http.Request) ([]byte, error) {
	body, err := apibody.Read(nil, r)
	if err != nil {
		return nil, mcribapi.Errorf(apibody.Status(err), "%s", apibody.Sentence(err))
	}
	return body, nil
}

// auth wraps a mutating handler with the checks that come before its own,
// in the order of the browser rule (the 403s come first, from
// browserGuard): when a token is configured the request needs
// "Authorization: Bearer <token>", compared in constant time (401); then
// the body rules (413, then 415; readBody). The handler reads the body,
// already checked, as it comes; its own refusals are the 400s.
func (a *apiServer) auth(h handler) handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		if a.token != "" {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(a.token)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="mcrib"`)
				if !ok {
					return mcribapi.Errorf(http.StatusUnauthorized, "this call changes state and needs the operator token as \"Authorization: Bearer <token>\"")
				}
				return mcribapi.Errorf(http.StatusUnauthorized, "the operator token is wrong")
			}
		}
		body, err := readBody(r)
		if err != nil {
			return err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		return h(w, r)
	}
}

// who names the caller for the freeze, drain and replace documents, their
// events and the log: the operator name the call carries in
// mcribapi.OperatorHeader (the CLI's --who), else the operator token when one is
// configured (there is one token, named "operator") with the remote
// address, else the remote address.
func (a *apiServer) who(r *http.Request) string {
	if name := mcribapi.OperatorName(r.Header.Get(mcribapi.OperatorHeader)); name != "" {
		return name
	}
	if a.token != "" {
		return "operator@" + r.RemoteAddr
	}
	return r.RemoteAddr
}

func (a *apiServer) getStatus(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, a.status())
	return nil
}

func (a *apiServer) status() mcribapi.Status {
	st := a.loop.Status()
	st.LastError = a.scrub.text(st.LastError)
	st.AutoFreezeReason = a.scrub.text(st.AutoFreezeReason)
	st.DiscoveryFaultReason = a.scrub.text(st.DiscoveryFaultReason)
	return withKnownHitRate(statusDocument(st, a.boot.Document()), a.boot)
}

func (a *apiServer) putFreeze(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	reason, err := mcribapi.ParseFreezeRequest(body)
	if err != nil {
		return mcribapi.Errorf(http.StatusBadRequest, "%s", mcribapi.Sentence(err))
	}
	by := a.who(r)
	doc, err := a.loop.Freeze(r.Context(), reason, by)
	if err != nil {
		return mcribapi.Errorf(http.StatusServiceUnavailable, "the freeze could not be stored in Consul: %v", err)
	}
	a.logger.Info("operator change", "who", by, "what", "freeze", "why", reason)
	a.ops.operator(by, "freeze: "+reason)
	writeJSON(w, http.StatusOK, doc)
	return nil
}

func (a *apiServer) deleteFreeze(w http.ResponseWriter, r *http.Request) error {
	if _, err := readBody(r); err != nil {
		return err
	}
	if err := a.loop.Unfreeze(r.Context()); err != nil {
		return mcribapi.Errorf(http.StatusServiceUnavailable, "the freeze could not be lifted in Consul: %v", err)
	}
	a.logger.Info("operator change", "who", a.who(r), "what", "unfreeze", "why", "")
	a.ops.operator(a.who(r), "unfreeze")
	writeJSON(w, http.StatusOK, map[string]bool{"frozen": false})
	return nil
}

func (a *apiServer) getRateLimit(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, a.boot.Document())
	return nil
}

func (a *apiServer) putRateLimit(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	st, err := ratelimit.ParseSetting(body)
	if err != nil {
		return mcribapi.Errorf(http.StatusBadRequest, "%s", err.Error())
	}
	by := a.who(r)
	doc, err := a.boot.Set(r.Context(), st, by)
	switch {
	case errors.Is(err, ratelimit.ErrInvalidSetting):
		return mcribapi.Errorf(http.StatusBadRequest, "%s", err.Error())
	case errors.Is(err, ratelimit.ErrConflict):
		return mcribapi.Errorf(http.StatusConflict, "the boot limit kept changing under this call; try again")
	case err != nil:
		return mcribapi.Errorf(http.StatusServiceUnavailable, "the boot limit could not be stored in Consul: %v", err)
	}
	a.logger.Info("operator change", "who", by, "what", "ratelimit", "why", doc.Reason, "mode", doc.Mode, "limit", doc.Limit, "burst", doc.Burst)
	a.ops.operator(by, fmt.Sprintf("boot limit %s %s boots/s, burst %d", doc.Mode, formatNumber(doc.Limit), doc.Burst))
	writeJSON(w, http.StatusOK, doc)
	return nil
}

func (a *apiServer) healthz(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

func (a *apiServer) readyz(w http.ResponseWriter, r *http.Request) error {
	if err := a.loop.Ready(); err != nil {
		return mcribapi.Errorf(http.StatusServiceUnavailable, "not ready: %v", err)
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	return nil
}

func (a *apiServer) serveMetrics(w http.ResponseWriter, r *http.Request) error {
	if a.metrics == nil {
		return mcribapi.Errorf(http.StatusServiceUnavailable, "metrics are not set up")
	}
	a.metrics.ServeHTTP(w, r)
	return nil
}
