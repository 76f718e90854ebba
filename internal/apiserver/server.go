package apiserver

import (
	"bytes"
	"context"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/internal/apibody"
	"github.com/mcrib/mcrib/internal/bootgate"
	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/ratelimit"
	"github.com/mcrib/mcrib/sim"
)

// maxBody is the largest request body the API reads.
const maxBody = apibody.MaxBytes

// ControlPlane is the part of the control loop the server serves;
// *controlloop.Loop implements it. A plane that also implements ZoneOps
// drains zones and replaces nodes.
type ControlPlane interface {
	SlotMap() *cachenodes.SlotMap
	// SlotMapReadAt is when the process last read the map SlotMap serves
	// from Consul (or wrote it); zero before the first. GET /v1/slotmap
	// answers the map's age from it.
	SlotMapReadAt() time.Time
	Changed() <-chan struct{}
	Status() mcribapi.Status
	Ready() error
	Freeze(ctx context.Context, reason, by string) (mcribapi.FreezeDoc, error)
	Unfreeze(ctx context.Context) error
}

// BootLimiter is the part of the boot limiter the server serves;
// *ratelimit.Service implements it.
type BootLimiter interface {
	Document() ratelimit.Document
	Set(ctx context.Context, st ratelimit.Setting, by string) (ratelimit.Document, error)
	Admit() (ok bool, retryAfter time.Duration)
	AdmitShare(replicas int) (ok bool, retryAfter time.Duration)
}

// BootRecorder counts boot admissions; *metrics.Recorder implements it.
type BootRecorder interface{ BootAdmission(admitted bool) }

// handler is an API handler that returns its error instead of writing it.
type handler func(w http.ResponseWriter, r *http.Request) error

// Options configures New. Every field is optional: the zero Options
// serves a server that knows no pool, for tests.
type Options struct {
	// Loop is the control loop served; nil answers the routes that read
	// it with a panic, so only tests leave it out.
	Loop ControlPlane
	// Boot is the boot limiter; nil refuses every boot.
	Boot BootLimiter
	// Recorder counts boot admissions (with Ops' history); nil counts
	// them in Ops only.
	Recorder BootRecorder
	// Metrics serves GET /metrics; nil answers 503.
	Metrics http.Handler
	// Token is the operator token every change needs; "" needs none and
	// puts the server behind the Host check (DNS rebinding).
	Token string
	// Logger logs the operator changes and the server's errors; nil
	// discards them.
	Logger *slog.Logger
	// Leader tells whether this process leads and who does; a follower
	// forwards boots and replaces to the leader. nil: it leads.
	Leader func() (leading bool, leaderID string)
	// Assured reports whether this process, while it leads, is sure no
	// other process leads (leader.Elector.IsAssured); nil: always.
	Assured func() bool
	// ID is this replica's leader_id (--advertise-addr): a boot is never
	// forwarded to it, and the Host check accepts it.
	ID string
	// Replicas are the pool's live replicas; nil: this process alone.
	Replicas Replicas
	// Ops records the decisions and the history that GET /v1/events and
	// GET /v1/history serve; nil serves both empty.
	Ops *Ops
	// ConsulAddr and KVPrefix (--consul, --kv-prefix), when either is set,
	// are taken out of the texts served to readers (status last_error,
	// /readyz, error bodies); both empty serve them as they are.
	ConsulAddr, KVPrefix string
	// TLSCert is the --tls-cert file when the server serves TLS: calls
	// forwarded to the leader go over TLS, trusting the CAs in it. ""
	// serves and forwards plain HTTP.
	TLSCert string
	// Listen is --listen as given, and Bound the address its listener got
	// (the port of a :0 resolved): the browser rule and the Host check
	// read them.
	Listen, Bound string
	// WriteTimeout is the write timeout of the http.Server that serves
	// the handler, which a forwarded replace must fit in; 0 is the one
	// HTTPServer sets.
	WriteTimeout time.Duration
	// Clock times the waits of blocking reads and the boot gate's
	// leader-down window; nil is the real clock.
	Clock clock.Clock
	// ForwardTransport carries the calls forwarded to the leader (boots
	// and replaces); nil dials the leader over TCP (TLS with TLSCert).
	// The deterministic simulation sets it to its network.
	ForwardTransport http.RoundTripper
	// Tracer, when set, wraps every request in a server span.
	Tracer trace.Tracer
}

// Server is the operator HTTP API: the routes of docs/api.md, each a
// handler that returns its error, turned into the JSON error body in one
// place (writeError). Build it with New; it is safe for concurrent use.
// ServeHTTP is the API alone; Handler puts the browser rule and the Host
// check in front, and HTTPServer serves that with every timeout set.
type Server struct {
	opts    Options
	loop    ControlPlane
	boot    BootLimiter
	rec     BootRecorder
	token   string
	logger  *slog.Logger
	metrics http.Handler
	leader  func() (leading bool, leaderID string)
	assured func() bool
	id      string
	// gate answers POST /v1/boot (newBootGate).
	gate         *bootgate.Gate
	writeTimeout time.Duration
	// forwardTLS, when set, makes forwarded calls go over TLS verified
	// with it (Options.TLSCert); nil forwards over plain HTTP.
	forwardTLS *tls.Config
	// scrub takes Consul's addresses and KV paths out of served texts;
	// nil serves them as they are.
	scrub    *scrubber
	replicas Replicas
	// mux routes a request whose path is canonical (mountRoutes); byRoute
	// holds each route's handler by "METHOD pattern" and allow each
	// pattern's methods, for the paths the mux does not take (unrouted).
	mux     *http.ServeMux
	byRoute map[string]handler
	allow   map[string][]string
	clock   clock.Clock
	// stopping is closed by stopWaiting when the server shuts down, so
	// that blocked reads answer at once.
	stopping chan struct{}
	stopOnce sync.Once
	ops      *Ops
	// zones drains zones and replaces nodes: the loop when it can (nil:
	// those routes answer 503).
	zones ZoneOps
	// resizes grows the pool: the loop when it can (nil: those routes
	// answer 503).
	resizes ResizeOps
	// rolls rolls the pool's nodes: the loop when it can (nil: those
	// routes answer 503).
	rolls RollOps
	// whatifs checks a what-if's action, predict simulates it
	// (whatif.go).
	whatifs WhatIfOps
	predict predictor
}

// New returns the server opts describes. Its error is one of reading
// Options.TLSCert.
func New(opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Replicas == nil {
		opts.Replicas = alone{}
	}
	a := &Server{opts: opts, loop: opts.Loop, boot: opts.Boot, token: opts.Token, logger: opts.Logger, metrics: opts.Metrics,
		leader: opts.Leader, assured: opts.Assured, id: opts.ID, replicas: opts.Replicas, ops: opts.Ops,
		writeTimeout: opts.WriteTimeout, clock: opts.Clock, stopping: make(chan struct{})}
	var recs teeBoot
	for _, r := range []BootRecorder{opts.Recorder, opts.Ops} {
		if r != nil && r != (*Ops)(nil) {
			recs = append(recs, r)
		}
	}
	if len(recs) > 0 {
		a.rec = recs
	}
	if opts.ConsulAddr != "" || opts.KVPrefix != "" {
		a.scrub = newScrubber(opts.ConsulAddr, opts.KVPrefix)
	}
	if opts.TLSCert != "" {
		roots, err := forwardRoots(opts.TLSCert)
		if err != nil {
			return nil, err
		}
		a.forwardTLS = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	}
	a.gate = a.newBootGate()
	if z, ok := a.loop.(ZoneOps); ok {
		a.zones = z
	}
	if z, ok := a.loop.(ResizeOps); ok {
		a.resizes = z
	}
	if z, ok := a.loop.(RollOps); ok {
		a.rolls = z
	}
	if z, ok := a.loop.(WhatIfOps); ok {
		a.whatifs, a.predict = z, oneAtATime(sim.Predict)
	}
	a.mountRoutes()
	return a, nil
}

// Scheme returns the URL scheme the server serves: "https" with
// Options.TLSCert, else "http".
func (a *Server) Scheme() string {
	if a.opts.TLSCert != "" {
		return "https"
	}
	return "http"
}

// Handler returns the server as the network sees it: the browser rule
// first (browserGuard), then, without a token, the Host check
// (hostGuard), then the API; with Options.Tracer, each request in a
// server span.
func (a *Server) Handler() http.Handler {
	var h http.Handler = a
	if a.token == "" {
		h = newHostGuard(a, a.opts.Bound, []string{a.opts.Listen, a.id}, a.opts.TLSCert != "")
	}
	return tracedHandler(a.opts.Tracer, a, newBrowserGuard(h, a.Scheme(), IsLoopbackListen(a.opts.Listen)))
}

// stopWaiting makes every blocked read answer now; the server calls it when
// it shuts down (http.Server.RegisterOnShutdown). It may be called more
// than once.
func (a *Server) stopWaiting() {
	a.stopOnce.Do(func() { close(a.stopping) })
}

// ServeHTTP serves the API: the routes of mountRoutes, each request's
// body bounded to the API's body limit.
func (a *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	}
	if !canonicalPath(r) {
		// ServeMux would redirect to the cleaned path; the API answers a
		// path as it was sent.
		a.serve(a.unrouted).ServeHTTP(w, r)
		return
	}
	a.mux.ServeHTTP(w, r)
}

// writeError turns err into the JSON error body and its status
// (mcribapi.StatusCode: an error that is not an *mcribapi.Error is a
// 500).
func writeError(w http.ResponseWriter, err error) {
	writeJSON(w, mcribapi.StatusCode(err), mcribapi.ErrorBody{Error: err.Error()})
}

// writeJSON writes v as the JSON answer with status (apibody.WriteJSON).
func writeJSON(w http.ResponseWriter, status int, v any) { apibody.WriteJSON(w, status, v) }

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
func (a *Server) auth(h handler) handler {
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
func (a *Server) who(r *http.Request) string {
	if name := mcribapi.OperatorName(r.Header.Get(mcribapi.OperatorHeader)); name != "" {
		return name
	}
	if a.token != "" {
		return "operator@" + r.RemoteAddr
	}
	return r.RemoteAddr
}

func (a *Server) getStatus(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, a.status())
	return nil
}

func (a *Server) status() mcribapi.Status {
	st := a.loop.Status()
	st.LastError = a.scrub.text(st.LastError)
	st.AutoFreezeReason = a.scrub.text(st.AutoFreezeReason)
	st.DiscoveryFaultReason = a.scrub.text(st.DiscoveryFaultReason)
	return withKnownHitRate(statusDocument(st, a.boot.Document()), a.boot)
}

func (a *Server) putFreeze(w http.ResponseWriter, r *http.Request) error {
	return changeCall[string]{
		parse: mcribapi.ParseFreezeRequest,
		who:   a.who,
		apply: func(ctx context.Context, reason, by string) (change, error) {
			doc, err := a.loop.Freeze(ctx, reason, by)
			return change{doc, "freeze: " + reason, []any{"what", "freeze", "why", reason}}, err
		},
		failed: unavailableAs("the freeze could not be stored in Consul"),
	}.serve(a, w, r)
}

func (a *Server) deleteFreeze(w http.ResponseWriter, r *http.Request) error {
	return changeCall[struct{}]{
		who: a.who,
		apply: func(ctx context.Context, _ struct{}, _ string) (change, error) {
			return change{map[string]bool{"frozen": false}, "unfreeze", []any{"what", "unfreeze", "why", ""}}, a.loop.Unfreeze(ctx)
		},
		failed: unavailableAs("the freeze could not be lifted in Consul"),
	}.serve(a, w, r)
}

func (a *Server) getRateLimit(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, a.boot.Document())
	return nil
}

func (a *Server) putRateLimit(w http.ResponseWriter, r *http.Request) error {
	return changeCall[ratelimit.Setting]{
		parse: ratelimit.ParseSetting,
		who:   a.who,
		apply: func(ctx context.Context, st ratelimit.Setting, by string) (change, error) {
			doc, err := a.boot.Set(ctx, st, by)
			return change{doc, fmt.Sprintf("boot limit %s %s boots/s, burst %d", doc.Mode, limitText(doc.Limit), doc.Burst),
				[]any{"what", "ratelimit", "why", doc.Reason, "mode", doc.Mode, "limit", doc.Limit, "burst", doc.Burst}}, err
		},
		failed: func(err error) error {
			switch {
			case errors.Is(err, ratelimit.ErrInvalidSetting):
				return mcribapi.Errorf(http.StatusBadRequest, "%s", err.Error())
			case errors.Is(err, ratelimit.ErrConflict):
				return mcribapi.Errorf(http.StatusConflict, "the boot limit kept changing under this call; try again")
			}
			return mcribapi.Errorf(http.StatusServiceUnavailable, "the boot limit could not be stored in Consul: %v", err)
		},
	}.serve(a, w, r)
}

func (a *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

func (a *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	if err := a.loop.Ready(); err != nil {
		return mcribapi.Errorf(http.StatusServiceUnavailable, "not ready: %v", err)
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	return nil
}

func (a *Server) serveMetrics(w http.ResponseWriter, r *http.Request) error {
	if a.metrics == nil {
		return mcribapi.Errorf(http.StatusServiceUnavailable, "metrics are not set up")
	}
	a.metrics.ServeHTTP(w, r)
	return nil
}
