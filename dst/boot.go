package dst

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/controlloop"
	"github.com/mcrib/mcrib/internal/revert"
)

// BootConfig drives boot admissions: callers hitting random replicas'
// POST /v1/boot handlers, some of them misbehaving, while the checker
// holds the pool's admissions to limit × time + burst (invariant 8).
//
// It is the seam for cmd/mcrib's boot gate once that lives in an
// importable package: Handler builds the handler of one replica process
// from what the simulation gives it (BootEnv), as mcrib serve builds its
// own from the loop, the elector and the ratelimit.Service. The handler
// is called on the simulation's goroutine; a forward to another replica
// goes through BootEnv.HTTP, over the simulated network, into that
// replica's handler, synchronously.
type BootConfig struct {
	// Handler returns the POST /v1/boot handler of one replica process.
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
)

// boots is the state of the boot admissions: each process's handler and
// the admissions so far.
type boots struct {
	cfg      BootConfig
	handlers map[*replicaProc]http.Handler
	admitted []time.Duration
}

// startBoots schedules the boot callers.
func (w *world) startBoots() {
	cfg := *w.cfg.Boots
	if cfg.Every == 0 {
		cfg.Every = 20 * time.Millisecond
	}
	w.boots = &boots{cfg: cfg, handlers: map[*replicaProc]http.Handler{}}
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
	rec := httptest.NewRecorder()
	w.bootHandler(p).ServeHTTP(rec, req)
	if rec.Code == http.StatusOK {
		w.boots.admitted = append(w.boots.admitted, w.now)
		w.chk.onAdmission(kind)
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

func (t replicaTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	w := t.w
	host := strings.Split(req.URL.Host, ":")[0]
	var target *replicaProc
	for _, r := range w.replicas {
		if r.host.name == host {
			target = r.proc
		}
	}
	out := w.net.send(t.from, host, "http", req.Method+" "+req.URL.Path)
	if target == nil || out == lostRequest || out == refused {
		return nil, &netError{msg: "dial tcp " + req.URL.Host + ": i/o timeout", timeout: true}
	}
	rec := httptest.NewRecorder()
	w.bootHandler(target).ServeHTTP(rec, req)
	if out == lostAnswer {
		return nil, &netError{msg: "read tcp " + req.URL.Host + ": i/o timeout", timeout: true}
	}
	return rec.Result(), nil
}

// onAdmission checks the pool's admissions against limit × time + burst
// over windows ending now (invariant 8), allowing the clocks' skew.
func (c *checker) onAdmission(kind string) {
	w := c.w
	limit, burst := c.bootLimit()
	adm := w.boots.admitted
	n := len(adm)
	for _, back := range []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second} {
		from := w.now - back
		k := 0
		for i := n - 1; i >= 0 && adm[i] > from; i-- {
			k++
		}
		allowed := limit*(back+2*maxSkew).Seconds() + float64(burst)
		if float64(k) > allowed {
			c.fail(ruleAdmissions, 0, "%d boots admitted in %v (the last a %s caller's), above limit × time + burst = %.0f (limit %.1f/s, burst %d)",
				k, back, kind, allowed, limit, burst)
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
