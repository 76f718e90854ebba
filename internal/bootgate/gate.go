// Package bootgate is the admission of client boots, POST /v1/boot, on
// one replica of mcrib serve: the pool's one boot limit (invariant 8)
// whichever replica an application calls. The replica that leads admits
// from the pool's limit and counts every boot alike; a follower forwards
// each boot to the leader, marked with the header X-Mcrib-Forwarded, and
// admits at most its share of the limit (the limit divided by the live
// replicas) only while it cannot reach the leader. A boot marked forwarded
// that reaches a replica that does not lead is refused (429, Retry-After:
// 1): a forged mark gains nothing, and no boot is forwarded twice.
//
// A follower counts the leader as unreachable only when its own
// connection to the leader fails (refused, reset, or no answer within its
// timeout), never because of its caller: a body over 64 KiB (413), a body
// that cannot be read (400) or one not sent as JSON (415) admits nothing
// and forwards nothing, and a caller that hangs up while its boot is
// forwarded changes nothing either.
//
// A Gate is an http.Handler with every dependency in its Options, so the
// deterministic simulation drives it on one goroutine: ServeHTTP with an
// httptest.ResponseRecorder, the forward going through a RoundTripper it
// supplies, time from its Clock.
package bootgate

import (
	"crypto/tls"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/internal/apibody"
	"github.com/mcrib/mcrib/internal/peak"
	"github.com/mcrib/mcrib/internal/revert"
)

// ForwardedHeader marks a boot a replica forwarded to the leader; its
// value names the forwarding replica (its ID). Only its presence counts.
const ForwardedHeader = "X-Mcrib-Forwarded"

// The forward's timeouts: a black-holed leader must not stall each boot
// for the kernel's connect timeout. After a failed forward the follower
// stops trying for LeaderRetryAfter and admits its share meanwhile.
const (
	// DefaultForwardTimeout bounds one forwarded boot, from sending it to
	// the leader's answer (Options.ForwardTimeout when zero).
	DefaultForwardTimeout = time.Second
	// DialTimeout bounds the connection to the leader of the default
	// transport.
	DialTimeout = 250 * time.Millisecond
	// LeaderRetryAfter is how long a follower admits its share without
	// trying the leader after its connection to the leader failed.
	LeaderRetryAfter = 2 * time.Second
)

// Admitter answers boots from a limiter; *ratelimit.Service implements
// it.
type Admitter interface {
	// Admit decides one boot from the pool's limit; retryAfter is the wait
	// of a refusal.
	Admit() (ok bool, retryAfter time.Duration)
	// AdmitShare decides one boot from this replica's share of the limit
	// among replicas.
	AdmitShare(replicas int) (ok bool, retryAfter time.Duration)
}

// Recorder counts the boots this replica decided; *metrics.Recorder
// implements it.
type Recorder interface{ BootAdmission(admitted bool) }

// Options configures a Gate. Admitter is required; every other field may
// be left zero.
type Options struct {
	// Admitter admits the boots this replica decides (required).
	Admitter Admitter
	// Leader reports whether this replica leads and the leader's ID (its
	// leader_id, a host:port); "" when no leader is known. nil: this
	// replica always leads (a process that runs alone).
	Leader func() (leading bool, leaderID string)
	// Replicas returns the pool's live replicas, this one included; the
	// share is the limit divided by it, or by a larger count seen within
	// the last 10 minutes (a count that is late, as a restarted replica's
	// before it read the others' votes, never lets the pool admit more),
	// and by at least 2 while another replica is known to lead. nil, or a
	// count below 1, counts 1.
	Replicas func() int
	// ID is this replica's own leader_id: a boot is never forwarded to it
	// (a replica that just stepped down may still name itself the
	// leader), and it is the value of the mark on the boots it forwards.
	ID string
	// Transport carries the forwarded boots. nil: an http.Transport
	// dialing within DialTimeout, verifying TLS with TLS.
	Transport http.RoundTripper
	// TLS, when set, makes the forward go over https (and verifies the
	// leader with it on the default transport); nil forwards over http.
	TLS *tls.Config
	// ForwardTimeout bounds one forwarded boot; it is the deadline of the
	// forwarded request's context (real time, as HTTP deadlines are; a
	// simulated Transport reads it from the request). 0 means
	// DefaultForwardTimeout.
	ForwardTimeout time.Duration
	// Clock times how long the leader counts as unreachable; nil is the
	// real clock.
	Clock clock.Clock
	// Logger receives a line each time the leader becomes unreachable or
	// answers again; nil discards them.
	Logger *slog.Logger
	// Recorder, when set, counts each boot this replica decides (not the
	// ones the leader answered for it).
	Recorder Recorder
}

// Gate answers POST /v1/boot for one replica (see the package comment).
// The caller routes: ServeHTTP takes any request as a boot. The zero value
// is not usable; build one with New. A Gate is safe for concurrent use.
type Gate struct {
	adm       Admitter
	leader    func() (bool, string)
	replicas  func() int
	id        string
	transport http.RoundTripper
	scheme    string
	timeout   time.Duration
	clock     clock.Clock
	log       *slog.Logger
	rec       Recorder
	reverted  revert.Set // turned off by the simulation's self-test (revert.go)

	mu        sync.Mutex // guards the fields below
	downUntil time.Time  // the leader counts as unreachable before it
	down      bool       // the last forward failed (for logging each change once)
	peak      peak.Count // the replica counts of the last 10 minutes
}

// New checks opts and returns a Gate.
func New(opts Options) (*Gate, error) {
	if opts.Admitter == nil {
		return nil, errors.New("bootgate: Options.Admitter is required")
	}
	g := &Gate{
		adm:       opts.Admitter,
		leader:    opts.Leader,
		replicas:  opts.Replicas,
		id:        opts.ID,
		transport: opts.Transport,
		scheme:    "http",
		timeout:   opts.ForwardTimeout,
		clock:     clock.Or(opts.Clock),
		log:       opts.Logger,
		rec:       opts.Recorder,
	}
	if g.leader == nil {
		g.leader = func() (bool, string) { return true, "" }
	}
	if g.replicas == nil {
		g.replicas = func() int { return 1 }
	}
	if g.timeout <= 0 {
		g.timeout = DefaultForwardTimeout
	}
	if opts.TLS != nil {
		g.scheme = "https"
	}
	if g.transport == nil {
		g.transport = defaultTransport(opts.TLS, g.timeout)
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	return g, nil
}

// ServeHTTP answers one boot: 200 {"admitted": true}, or 429
// {"admitted": false} with a Retry-After header (whole seconds, at least
// 1), or a JSON error (413, 415, 400) that admits nothing.
func (g *Gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	streamed := g.reverted.Reverted(revert.CallerErrorNotLeaderDown)
	var body []byte
	if streamed {
		if r.Body != nil { // the old path: the body streams to the leader unread
			r.Body = http.MaxBytesReader(w, r.Body, apibody.MaxBytes)
		}
	} else {
		b, err := apibody.Read(w, r)
		if err != nil {
			writeJSON(w, apibody.Status(err), map[string]string{"error": apibody.Sentence(err)})
			return
		}
		body = b
	}
	leading, leaderID := g.leader()
	switch {
	case leading:
		g.admit(w, false) // every boot alike, marked forwarded or not
	case r.Header.Get(ForwardedHeader) != "":
		if g.reverted.Reverted(revert.ForwardedNeverShared) {
			g.admit(w, true)
			return
		}
		g.refuseForwarded(w)
	case leaderID == "" || leaderID == g.id:
		g.admit(w, true)
	case g.leaderDown(g.clock.Now()):
		g.admitShare(w, 2) // another replica leads: the pool has two at least
	default:
		g.forward(w, r, leaderID, body, streamed)
	}
}

// admit answers a boot from this replica's limiter: the pool's limit, or
// this replica's share of it.
func (g *Gate) admit(w http.ResponseWriter, share bool) {
	if share {
		g.admitShare(w, 1)
		return
	}
	ok, retry := g.adm.Admit()
	g.answer(w, ok, retry)
}

// admitShare answers a boot from this replica's share of the limit: the
// limit divided by the replicas (Options.Replicas), never by fewer than
// the most seen in the last 10 minutes, nor than least.
func (g *Gate) admitShare(w http.ResponseWriter, least int) {
	now := g.clock.Now()
	n := max(g.replicas(), 1)
	g.mu.Lock()
	if n != g.peak.Current() {
		g.peak.Observe(now, n)
	}
	top, _ := g.peak.Peak(now)
	g.mu.Unlock()
	if g.reverted.Reverted(revert.ShareNotAlone) {
		top, least = n, 1 // the old way: the count of this instant alone
	}
	ok, retry := g.adm.AdmitShare(max(n, top, least))
	g.answer(w, ok, retry)
}

// answer writes the answer to one boot this replica decided.
func (g *Gate) answer(w http.ResponseWriter, ok bool, retry time.Duration) {
	if g.rec != nil {
		g.rec.BootAdmission(ok)
	}
	if !ok {
		refuse(w, retry)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"admitted": true})
}

// refuseForwarded answers a boot marked forwarded that reached a replica
// that does not lead: the forwarding replica took this one for the
// leader, which it no longer is (or the mark is forged). It is refused,
// never admitted from the share nor sent on: the application retries in a
// second, when the replicas agree on the leader again.
func (g *Gate) refuseForwarded(w http.ResponseWriter) {
	if g.rec != nil {
		g.rec.BootAdmission(false)
	}
	refuse(w, time.Second)
}

// refuse writes a 429 with Retry-After: retry in whole seconds, at least 1.
func refuse(w http.ResponseWriter, retry time.Duration) {
	secs := int64(math.Ceil(retry.Seconds()))
	w.Header().Set("Retry-After", strconv.FormatInt(max(secs, 1), 10))
	writeJSON(w, http.StatusTooManyRequests, map[string]bool{"admitted": false})
}

// leaderDown reports whether a failed forward made the leader count as
// unreachable at now.
func (g *Gate) leaderDown(now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return now.Before(g.downUntil)
}

// leaderFailed records that this replica's connection to the leader
// failed at now, and logs it when the leader answered before.
func (g *Gate) leaderFailed(now time.Time, err error) {
	g.mu.Lock()
	g.downUntil = now.Add(LeaderRetryAfter)
	changed := !g.down
	g.down = true
	g.mu.Unlock()
	if changed {
		g.log.Warn("forwarding boots to the leader failed; admitting this replica's share of the limit until it answers",
			"err", err, "replicas", max(g.replicas(), 1))
	}
}

// leaderReached records an answer of the leader, and logs it when the
// leader was unreachable before.
func (g *Gate) leaderReached() {
	g.mu.Lock()
	changed := g.down
	g.down, g.downUntil = false, time.Time{}
	g.mu.Unlock()
	if changed {
		g.log.Info("the leader answers forwarded boots again")
	}
}

// writeJSON writes v as the JSON answer with status (apibody.WriteJSON).
func writeJSON(w http.ResponseWriter, status int, v any) { apibody.WriteJSON(w, status, v) }
