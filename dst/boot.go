package dst

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/controlloop"
	"github.com/mcrib/mcrib/internal/bootgate"
	"github.com/mcrib/mcrib/internal/revert"
)

// BootConfig drives boot admissions: callers hitting random replicas'
// POST /v1/boot handlers, some of them misbehaving, while the checker
// holds the pool's admissions to limit × time + burst (invariant 8).
//
// By default every replica process runs mcrib serve's own gate and
// limiter (limiter.go); a Handler replaces them, for the checker's
// self-test: it builds the handler of one replica process from what the
// simulation gives it (BootEnv). The handler
// is called on the simulation's goroutine; a forward to another replica
// goes through BootEnv.HTTP, over the simulated network, into that
// replica's handler, synchronously.
type BootConfig struct {
	// Handler returns the POST /v1/boot handler of one replica process;
	// nil runs mcrib serve's own, the real bootgate.Gate in front of a
	// real ratelimit.Service (limiter.go).
	Handler func(env BootEnv) http.Handler
	// Every is the mean time between two boots over the pool; default
	// 20ms.
	Every time.Duration
	// Limit and Burst are what the rule allows when the pool's boot-limit
	// document is not stored yet (mcrib's defaults: the --boot-limit-max
	// of a new pool, and its burst).
	Limit float64
	Burst int
}

// BootEnv is what a replica's boot handler gets of the simulated world.
type BootEnv struct {
	// ReplicaID is the process's leader ID, its --advertise-addr.
	ReplicaID string
	Loop      *controlloop.Loop
	// Consul is the process's real *api.Client over the simulated network.
	Consul *api.Client
	// Clock is its host's clock.
	Clock clock.Clock
	// HTTP reaches the other replicas' handlers ("http://r2:7070/v1/boot")
	// over the simulated network; an unreachable one is a timeout.
	HTTP *http.Client
	// IsLeader and LeaderID are the process's leadership.
	IsLeader func() bool
	LeaderID func() string
	// Reverted is the run's revert.Set, for the handler's Options.
	Reverted revert.Set
}

// Kinds of boot callers.
const (
	bootPlain     = "plain"
	bootTruncated = "truncated"
	bootOversize  = "oversize"
	bootHangsUp   = "hangs-up"
	bootForged    = "forged" // marks its boot forwarded, as a replica does
)

// boots is the state of the boot admissions: each process's handler and
// the admissions so far.
type boots struct {
	cfg      BootConfig
	handlers map[*replicaProc]http.Handler
	admitted []time.Duration
	// by is which replica admitted the boot under way, and how (the real
	// gate's path, limiter.go); full and shares are the admissions from
	// the pool's limit and from each replica's share.
	by     admission
	full   []pathAdmission
	shares map[*replica][]pathAdmission
	// forwardFailed is when each replica's connection to another replica
	// last failed (replicaTransport), ground truth of the network.
	forwardFailed map[*replica]time.Duration
}

// pathAdmission is one boot admitted on one path (the pool's limit, or
// a replica's share), at at, with the pool counted as replicas (1 for
// the limit) and the limit and burst the admitting process had in force.
type pathAdmission struct {
	at       time.Duration
	replicas int
	limit    float64
	burst    int
	// unheld is set for an admission from the pool's limit by a process
	// whose session did not hold the leader lock (the ground truth): a
	// leader cut off from Consul that another process may have replaced.
	unheld bool
}

// admission is who admitted one boot: a replica process, from the pool's
// limit or from its share of replicas.
type admission struct {
	proc     *replicaProc
	share    bool
	replicas int
	// limit and burst are those the admitting process had in force: a
	// replica cut off from Consul goes on with the last it read.
	limit float64
	burst int
}

// startBoots schedules the boot callers.
func (w *world) startBoots() {
	cfg := *w.cfg.Boots
	if cfg.Every == 0 {
		cfg.Every = 20 * time.Millisecond
	}
	w.boots = &boots{cfg: cfg, handlers: map[*replicaProc]http.Handler{}, shares: map[*replica][]pathAdmission{}, forwardFailed: map[*replica]time.Duration{}}
	var next func()
	next = func() {
		w.boot()
		w.after(time.Duration(1+w.rng.Int64N(int64(2*cfg.Every/time.Millisecond)))*time.Millisecond, "boot", next)
	}
	w.at(10*time.Second, "boot", next)
}

// bootHandler returns p's handler, building it on first use.
func (w *world) bootHandler(p *replicaProc) http.Handler {
	if h := w.boots.handlers[p]; h != nil {
		return h
	}
	if w.boots.cfg.Handler == nil {
		return w.api(p).h // the real API server and its gate (simhttp.go)
	}
	h := w.boots.cfg.Handler(BootEnv{
		ReplicaID: p.r.id, Loop: p.loop, Consul: p.consul, Clock: p.clock(),
		HTTP:     &http.Client{Transport: replicaTransport{w: w, from: p.r.host.name}},
		IsLeader: func() bool { _, ok := p.lead.Lease(); return ok },
		LeaderID: p.lead.LeaderID, Reverted: w.cfg.Reverted,
	})
	w.boots.handlers[p] = h
	return h
}

// boot makes one caller's POST /v1/boot to a random replica.
func (w *world) boot() {
	r := w.randomReplica()
	p := r.proc
	c := w.randomClient()
	if p == nil || w.net.send(c.host.name, r.host.name, "http", "POST /v1/boot") != delivered {
		return
	}
	kind := bootPlain
	switch x := w.rng.IntN(100); {
	case x < 3:
		kind = bootTruncated
	case x < 6:
		kind = bootOversize
	case x < 10:
		kind = bootHangsUp
	case x < 12:
		kind = bootForged
	}
	body := io.Reader(strings.NewReader(`{}`))
	ctx := context.Background()
	switch kind {
	case bootTruncated:
		body = io.MultiReader(strings.NewReader(`{"inst`), errReader{})
	case bootOversize:
		body = bytes.NewReader(append([]byte(`{"pad":"`), bytes.Repeat([]byte("x"), 70<<10)...))
	case bootHangsUp:
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		ctx = cctx
	}
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "http://"+r.id+"/v1/boot", body)
	req.Header.Set("Content-Type", "application/json")
	if kind == bootForged {
		req.Header.Set(bootgate.ForwardedHeader, "r9:7070")
	}
	rec := httptest.NewRecorder()
	w.boots.by = admission{}
	w.bootHandler(p).ServeHTTP(rec, req)
	if w.cfg.TraceOps {
		how := "limit"
		switch {
		case w.boots.by.proc == nil:
			how = "?"
		case w.boots.by.share:
			how = fmt.Sprintf("share 1/%d", w.boots.by.replicas)
		}
		by := "-"
		if w.boots.by.proc != nil {
			by = w.boots.by.proc.name()
		}
		w.tr.add(w.now, "boot (%s) via %s: %d, admitted by %s (%s)", kind, p.name(), rec.Code, by, how)
	}
	if rec.Code == http.StatusOK {
		w.boots.admitted = append(w.boots.admitted, w.now)
		w.chk.onAdmission(kind, w.boots.by, p)
	}
}

// errReader fails every read: a body cut short.
type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }

// replicaTransport carries a replica's request to another replica's boot
// handler over the simulated network.
type replicaTransport struct {
	w    *world
	from string
}

// failed records that the sending replica's connection failed now.
func (t replicaTransport) failed() {
	w := t.w
	if w.boots == nil {
		return
	}
	for _, r := range w.replicas {
		if r.host.name == t.from {
			w.boots.forwardFailed[r] = w.now
		}
	}
}

func (t replicaTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	w := t.w
	host := strings.Split(req.URL.Host, ":")[0]
	var target *replicaProc
	for _, r := range w.replicas {
		if r.host.name == host {
			target = r.proc
		}
	}
	// As a real transport sends it: a request whose context is done is not
	// sent, and one whose body cannot be read whole fails on the way.
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	if req.Body != nil {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("writing the request body: %w", err)
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	out := w.net.send(t.from, host, "http", req.Method+" "+req.URL.Path)
	if target == nil || out == lostRequest || out == refused {
		t.failed()
		return nil, &netError{msg: "dial tcp " + req.URL.Host + ": i/o timeout", timeout: true}
	}
	rec := httptest.NewRecorder()
	w.bootHandler(target).ServeHTTP(rec, req)
	if out == lostAnswer {
		t.failed()
		return nil, &netError{msg: "read tcp " + req.URL.Host + ": i/o timeout", timeout: true}
	}
	return rec.Result(), nil
}

// limitAt is the pool's boot limit and burst as stored from at on.
type limitAt struct {
	at    time.Duration
	limit float64
	burst int
}

// limitGrace is how long a replica may go on admitting at a limit after
// the stored document changed it: until its next read of the document
// (limiter.go reads it every second), with the clocks' skew.
const limitGrace = limiterSync + 2*maxSkew + time.Second

// noteLimit records the stored boot limit when it changed.
func (c *checker) noteLimit() {
	limit, burst := c.bootLimit()
	if n := len(c.limits); n > 0 && c.limits[n-1].limit == limit && c.limits[n-1].burst == burst {
		return
	}
	c.limits = append(c.limits, limitAt{at: c.w.now, limit: limit, burst: burst})
}

// limitSince returns the highest limit and burst in force at any time
// from from to now, a change counting limitGrace longer.
func (c *checker) limitSince(from time.Duration) (float64, int) {
	var limit float64
	var burst int
	for i := len(c.limits) - 1; i >= 0; i-- {
		l := c.limits[i]
		limit, burst = max(limit, l.limit), max(burst, l.burst)
		if l.at <= from {
			break
		}
	}
	return limit, burst
}

// onAdmission checks the pool's admissions (invariant 8), over windows
// ending now and allowing the clocks' skew; where the limit changed within
// a window, or within limitGrace before it, the highest limit and burst
// count for the whole window. With the real gate (by.proc set) it holds
// the admissions from the pool's limit to limit × time + burst, each
// replica's admissions from its share to the share's, and admits a share
// admission only of a boot not marked forwarded (the caller called via,
// the replica that admitted it, and did not forge the mark), by a replica
// whose own connection to the leader failed within
// bootgate.LeaderRetryAfter or that knows no other leader. With a handler
// of a test's (by.proc nil) it holds every admission to the limit.
func (c *checker) onAdmission(kind string, by admission, via *replicaProc) {
	w := c.w
	c.noteLimit()
	if by.proc != nil && by.share {
		r := by.proc.r
		w.boots.shares[r] = append(w.boots.shares[r], pathAdmission{at: w.now, replicas: by.replicas, limit: by.limit, burst: by.burst})
		if kind == bootForged || by.proc != via {
			c.fail(ruleShareUnfailed, revert.ForwardedNeverShared,
				"%s admitted a boot marked forwarded (a %s caller's, through %s) from its share: a replica that does not lead never admits one",
				by.proc.name(), kind, via.name())
			return
		}
		_, leader := by.proc.lead.Lease()
		failed, ever := w.boots.forwardFailed[r]
		id := by.proc.lead.LeaderID()
		if !leader && id != "" && id != r.id && (!ever || w.now-failed > bootgate.LeaderRetryAfter+2*maxSkew) {
			c.fail(ruleShareUnfailed, revert.CallerErrorNotLeaderDown,
				"%s admitted a %s caller's boot from its share while it knew the leader %s and its connection to it had not failed (last failure %s)",
				by.proc.name(), kind, id, failedAt(failed, ever))
			return
		}
		if l := c.leader(); l != nil && l != by.proc && by.replicas < 2 && id != "" && id != r.id {
			// The leader admits from the pool's limit meanwhile: a share
			// of the whole limit lets the pool admit it twice. (Only for
			// a replica that knows another leads: one that knows no
			// leader, just restarted, still counts what it counts; see
			// docs/simulation.md.)
			c.fail(ruleAdmissions, revert.ShareNotAlone,
				"%s admitted a %s caller's boot from its share counting %d replica, while %s led and admitted from the pool's limit: together twice the limit",
				by.proc.name(), kind, by.replicas, l.name())
			return
		}
		c.holdPath(w.boots.shares[r], kind, by.proc.name()+"'s share")
		return
	}
	if by.proc == nil {
		adm := w.boots.admitted
		c.holdPath(slices.Collect(func(yield func(pathAdmission) bool) {
			for _, at := range adm {
				if !yield(pathAdmission{at: at, replicas: 1}) {
					return
				}
			}
		}), kind, "the pool")
		return
	}
	w.boots.full = append(w.boots.full, pathAdmission{at: w.now, replicas: 1, limit: by.limit, burst: by.burst, unheld: c.leader() != by.proc})
	c.holdPath(w.boots.full, kind, "the pool's limit")
}

// failedAt says when a connection last failed.
func failedAt(at time.Duration, ever bool) string {
	if !ever {
		return "never"
	}
	return fmt.Sprintf("at %.3fs", at.Seconds())
}

// holdPath holds adm, the admissions of one path up to now, over each
// window to the limit divided by the replicas they counted (the burst too,
// at least 1). The limit of a window is the highest in force in it: the
// stored one, or within limitGrace before the window, or one an admitting
// process had in force (a replica cut off from Consul goes on with the
// last it read); the replicas are the fewest any of its admissions
// counted.
func (c *checker) holdPath(adm []pathAdmission, kind string, what string) {
	w := c.w
	n := len(adm)
	for _, back := range []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second} {
		from := w.now - back
		limit, burst := c.limitSince(from - limitGrace)
		parts := adm[n-1].replicas
		k, unheld := 0, false
		for i := n - 1; i >= 0 && adm[i].at > from; i-- {
			k++
			limit, burst, parts = max(limit, adm[i].limit), max(burst, adm[i].burst), min(parts, adm[i].replicas)
			unheld = unheld || adm[i].unheld
		}
		p := float64(parts)
		limit, burst = limit/p, max(int(float64(burst)/p), 1)
		allowed := limit*(back+2*maxSkew).Seconds() + float64(burst)
		if float64(k) > allowed {
			// Admissions from the pool's limit by a process that no
			// longer held the lock, beside its successor's, are the bug
			// leader.Assured fixes.
			fix, also := revert.Fix(0), ""
			if unheld {
				fix, also = revert.AssuredLimit, "; some by a process whose session no longer held the leader lock"
			}
			c.fail(ruleAdmissions, fix, "%d boots admitted from %s in %v (the last a %s caller's), above limit × time + burst = %.0f (limit %.1f/s, burst %d, 1/%d of the pool's)%s",
				k, what, back, kind, allowed, limit, burst, parts, also)
			return
		}
	}
}

// bootLimit returns the stored boot limit and burst, or the configured
// defaults.
func (c *checker) bootLimit() (float64, int) {
	cfg := c.w.boots.cfg
	e := c.w.consul.kv[poolKeys.BootLimit()]
	if e == nil {
		return cfg.Limit, cfg.Burst
	}
	var doc struct {
		Limit float64 `json:"limit"`
		Burst int     `json:"burst"`
	}
	if json.Unmarshal(e.value, &doc) != nil {
		return cfg.Limit, cfg.Burst
	}
	return doc.Limit, doc.Burst
}
