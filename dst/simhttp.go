package dst

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/internal/apiserver"
	"github.com/mcrib/mcrib/internal/consulwatch"
	"github.com/mcrib/mcrib/internal/revert"
	"github.com/mcrib/mcrib/internal/simseam"
	"github.com/mcrib/mcrib/mcclient"
	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/ratelimit"
)

// The replicas' HTTP API over the simulated network. Each replica process
// serves the real internal/apiserver.Server (built as mcrib serve builds
// it, over the process's loop, leadership and boot limiter), and the
// simulation reaches it through an http.RoundTripper of its own: a boot
// (POST /v1/boot, and the gate's forward to the leader) and a read of the
// slot map (GET /v1/slotmap, blocking with ?index= and ?wait=) are served
// by that handler on the simulation's goroutine, or lost, refused or
// delayed as the network decides.
//
// Some application clients follow the map with the real
// mcclient.HTTPFollower over that network. The follower runs its own loop
// (internal/consulwatch) on a goroutine of its own; the simulation runs it
// in lockstep, one side at a time: the follower runs until it waits (on a
// timer of its clock, or in a request of its transport) and tells the
// simulation so, and then runs again only when the simulation fires that
// timer or answers that request, at a simulated time. Its jitter comes
// from the seed (internal/simseam), so a run replays.

// web is the HTTP side of the world: each process's API server and the
// blocking reads the servers hold.
type web struct {
	w       *world
	servers map[*replicaProc]*apiServer
	// held are the blocking reads of GET /v1/slotmap waiting for the map
	// to change or their wait to pass.
	held      []*heldRead
	followers []*follower
}

func (w *world) webOf() *web {
	if w.web == nil {
		w.web = &web{w: w, servers: map[*replicaProc]*apiServer{}}
	}
	return w.web
}

// apiServer is one process's API server. fire makes the timers its clock
// arms fire at once: the wait of a blocked read has passed.
type apiServer struct {
	srv  *apiserver.Server
	h    http.Handler
	fire bool
}

// serverClock is a replica's clock as its API server has it: the host's
// time; the timer of a blocked read fires only when the simulation says
// its wait has passed (apiServer.fire).
type serverClock struct {
	hostClock
	s *apiServer
}

func (c serverClock) NewTimer(time.Duration) clock.Timer {
	t := &stubTimer{ch: make(chan time.Time, 1)}
	if c.s.fire {
		t.ch <- c.Now()
	}
	return t
}

// stubTimer is a timer the simulation fires by hand (or never).
type stubTimer struct{ ch chan time.Time }

func (t *stubTimer) C() <-chan time.Time      { return t.ch }
func (t *stubTimer) Stop() bool               { return len(t.ch) == 0 }
func (t *stubTimer) Reset(time.Duration) bool { return len(t.ch) == 0 }

// api returns p's API server, building it on first use, as mcrib serve
// builds it: over p's loop, its leadership (a follower forwards boots to
// the leader, over the simulated network) and, when the run drives boots
// through mcrib serve's own limiter, that limiter.
func (w *world) api(p *replicaProc) *apiServer {
	wb := w.webOf()
	if s := wb.servers[p]; s != nil {
		return s
	}
	s := &apiServer{}
	opts := apiserver.Options{
		Loop:             p.loop,
		Leader:           func() (bool, string) { _, ok := p.lead.Lease(); return ok, p.lead.LeaderID() },
		Assured:          p.lead.Assured,
		ID:               p.r.id,
		Listen:           p.r.id,
		Bound:            p.r.id,
		Replicas:         replicaSet{p: p},
		Clock:            serverClock{hostClock: p.clock(), s: s},
		ForwardTransport: replicaTransport{w: w, from: p.r.host.name},
		Logger:           w.logger(p.name()),
	}
	if p.limiter != nil {
		opts.Boot = pathAdmitter{svc: p.limiter.svc, w: w, p: p}
	}
	srv, err := apiserver.New(opts)
	if err != nil {
		panic(fmt.Sprintf("dst: building the API server: %v", err))
	}
	revert.Apply(srv, w.cfg.Reverted) // the self-test's switch (its boot gate's)
	s.srv, s.h = srv, srv.Handler()
	wb.servers[p] = s
	return s
}

// replicaSet is a process's replicas as mcrib serve gives them to its API
// server: the loop's view of them and the campaign's session.
type replicaSet struct{ p *replicaProc }

func (r replicaSet) Count() int              { return r.p.loop.Replicas() }
func (r replicaSet) Has(session string) bool { return r.p.loop.ReplicaSession(session) }
func (r replicaSet) Session() string {
	m, _ := r.p.lead.Member()
	return m.Session()
}

// Document and Set make pathAdmitter the server's boot limiter
// (apiserver.BootLimiter).
func (a pathAdmitter) Document() ratelimit.Document { return a.svc.Document() }

func (a pathAdmitter) Set(ctx context.Context, st ratelimit.Setting, by string) (ratelimit.Document, error) {
	return a.svc.Set(ctx, st, by)
}

// recorder is an httptest.ResponseRecorder that tells whether the handler
// answered at all (a blocked read returns without a word when its caller
// is gone).
type recorder struct {
	*httptest.ResponseRecorder
	wrote bool
}

func (r *recorder) WriteHeader(code int) { r.wrote = true; r.ResponseRecorder.WriteHeader(code) }
func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseRecorder.Write(b)
}

// heldRead is a blocking GET /v1/slotmap a server holds: it answers when
// the loop's map changes (changed), when its wait passes (until), or
// breaks off when the process ends.
type heldRead struct {
	fl      *follower
	pr      *flCall
	p       *replicaProc
	changed <-chan struct{}
	until   time.Duration
}

// serveRead serves fl's request pr, a GET of the slot map, now: lost,
// refused, answered, or held by the server. It returns the answer when
// there is one to hand the follower now.
func (wb *web) serveRead(fl *follower, pr *flCall) *answer {
	w := wb.w
	r := w.replicaAt(pr.req.URL.Host)
	if r == nil {
		return &answer{err: &netError{msg: "dial tcp " + pr.req.URL.Host + ": no such host"}}
	}
	out := w.net.send(fl.c.host.name, r.host.name, "http", pr.req.Method+" "+pr.req.URL.Path)
	p := r.proc
	switch {
	case out == lostRequest || out == refused:
		fl.timeout(pr)
		return nil
	case p == nil:
		return &answer{err: &netError{msg: "dial tcp " + pr.req.URL.Host + ": connection refused"}}
	}
	q, err := mcribapi.ParseSlotMapQuery(pr.req.URL.Query())
	if err != nil {
		q = mcribapi.SlotMapQuery{}
	}
	h := &heldRead{fl: fl, pr: pr, p: p, until: w.now + q.Wait}
	a := wb.serve(h, false)
	switch {
	case out == lostAnswer:
		fl.timeout(pr) // carried out or held; the caller hears nothing
		return nil
	case a != nil:
		return a
	}
	wb.held = append(wb.held, h)
	w.at(h.until, fl.c.name+" read wait", func() { wb.expire(h) })
	return nil
}

// answer is what a follower's request gets: a response (from the
// process by, whose last read of the map from Consul was at truth) or an
// error.
type answer struct {
	resp  *http.Response
	err   error
	by    *replicaProc
	truth time.Duration
}

// serve runs h's request through its server's handler: with expired set,
// as its wait has passed (the server's timer fires), else as if its caller
// were gone, so that a read that would block returns at once without a
// word. It returns the answer, or nil when the handler held the read.
func (wb *web) serve(h *heldRead, expired bool) *answer {
	w := wb.w
	s := w.api(h.p)
	h.changed = h.p.loop.Changed()
	ctx := context.Background()
	if !expired {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		ctx = cctx
	}
	rec := &recorder{ResponseRecorder: httptest.NewRecorder()}
	s.fire = expired
	s.h.ServeHTTP(rec, h.pr.req.Clone(ctx))
	s.fire = false
	if !rec.wrote {
		return nil
	}
	a := &answer{resp: rec.Result(), by: h.p, truth: w.now - cachenodes.FreshFor}
	if a.resp.Header.Get(mcribapi.MapAgeHeader) != "" {
		if t, ok := w.consul.mapReads[h.p.r.host.name]; ok {
			a.truth = t
		}
		if w.plant.freshLie {
			a.resp.Header.Set(mcribapi.MapAgeHeader, "0") // a replica that answers every map as just read
		}
	}
	return a
}

// deliver hands a held read's answer to its follower when the network
// carries it back; otherwise the follower times out.
func (wb *web) deliver(h *heldRead, a *answer) {
	if wb.w.net.send(h.fl.c.host.name, h.p.r.host.name, "http", "answer "+h.pr.req.URL.Path) != delivered {
		h.fl.timeout(h.pr)
		return
	}
	h.fl.resume(h.pr, a)
}

// expire answers h when its wait passed and it is still held.
func (wb *web) expire(h *heldRead) {
	if !wb.release(h) {
		return
	}
	if h.p != h.p.r.proc {
		h.fl.resume(h.pr, &answer{err: errReset})
		return
	}
	wb.deliver(h, wb.serve(h, true))
}

// release drops h from the held reads and reports whether it was held.
func (wb *web) release(h *heldRead) bool {
	i := slices.Index(wb.held, h)
	if i < 0 {
		return false
	}
	wb.held = slices.Delete(wb.held, i, i+1)
	return true
}

var errReset = &netError{msg: "read tcp: connection reset by peer"}

// afterStep answers the held reads whose server's map changed, and breaks
// off those whose process ended, after every step of the run.
func (wb *web) afterStep() {
	if wb == nil {
		return
	}
	for i := 0; i < len(wb.held); i++ {
		h := wb.held[i]
		if h.p != h.p.r.proc {
			wb.release(h)
			h.fl.resume(h.pr, &answer{err: errReset})
			i = -1 // the follower's next read may be held meanwhile
			continue
		}
		select {
		case <-h.changed:
		default:
			continue
		}
		a := wb.serve(h, false)
		if a == nil {
			continue // the same document: still held
		}
		wb.release(h)
		wb.deliver(h, a)
		i = -1
	}
}

// replicaAt returns the replica whose API listens at addr ("r1:7070").
func (w *world) replicaAt(addr string) *replica {
	for _, r := range w.replicas {
		if r.id == addr {
			return r
		}
	}
	return nil
}

// follower is an application client's real mcclient.HTTPFollower,
// following the map over the simulated network, in lockstep with the
// simulation.
type follower struct {
	wb     *web
	c      *appClient
	park   chan parked
	cancel context.CancelFunc
	done   chan struct{}
	// limit is the timeout of the follower's request under way: that of
	// the call (consulwatch) that makes it.
	limit time.Duration
	// by and truth are the process whose answer the follower takes now
	// and its last read of the map from Consul (ground truth).
	by    *replicaProc
	truth time.Duration
}

// parked is what the follower's goroutine waits on: a timer of its clock
// (a sleep) or a request.
type parked struct {
	sleep *simTimer
	req   *flCall
}

// flCall is one request of the follower, waiting for its answer.
type flCall struct {
	req   *http.Request
	reply chan *answer
	at    time.Duration
	limit time.Duration
	done  bool
}

// startFollower starts c's HTTPFollower at first: it follows every
// replica, beginning with the one of its own index.
func (w *world) startFollower(c *appClient, idx int, first time.Duration) {
	wb := w.webOf()
	var urls []string
	for i := range w.replicas {
		urls = append(urls, "http://"+w.replicas[(idx+i)%len(w.replicas)].id)
	}
	fl := &follower{wb: wb, c: c, park: make(chan parked), done: make(chan struct{})}
	f, err := mcclient.NewHTTPFollower(mcclient.HTTPFollowerOptions{
		URLs:       urls,
		HTTPClient: &http.Client{Transport: followerTransport{fl: fl}},
		Clock:      followerClock{hostClock: hostClock{w: w, host: c.host}, fl: fl},
	})
	if err != nil {
		panic(fmt.Sprintf("dst: building a follower: %v", err))
	}
	revert.Apply(f, w.cfg.Reverted) // the self-test's switch
	simseam.SetJitter(f, func() float64 { return w.chance("jitter", c.name) })
	wb.followers = append(wb.followers, fl)
	w.at(first, c.name+" follows", func() {
		ctx, cancel := context.WithCancel(context.Background())
		fl.cancel = cancel
		go func() {
			defer close(fl.done)
			f.Run(ctx, fl.onRead, fl.onError)
		}()
		fl.run()
	})
}

// resume answers pr (once) and lets the follower run on.
func (fl *follower) resume(pr *flCall, a *answer) {
	if pr.done {
		return
	}
	pr.done = true
	fl.by, fl.truth = a.by, a.truth
	pr.reply <- a
	fl.run()
}

// run waits until the follower's goroutine waits again, and arranges what
// it waits on: a timer fires at its time; a request is served now, and
// when it is answered at once the follower runs on.
func (fl *follower) run() {
	w := fl.wb.w
	for {
		var m parked
		select {
		case m = <-fl.park:
		case <-fl.done:
			return
		case <-time.After(time.Minute):
			panic("dst: a follower neither slept nor sent a request within a minute of real time")
		}
		if t := m.sleep; t != nil {
			w.at(t.due, fl.c.name+" follower wakes", func() {
				if !t.stopped {
					t.ch <- hostClock{w: w, host: fl.c.host}.Now()
					fl.run()
				}
			})
			return
		}
		a := fl.wb.serveRead(fl, m.req)
		if a == nil {
			return
		}
		m.req.done = true
		fl.by, fl.truth = a.by, a.truth
		m.req.reply <- a
	}
}

// timeout fails pr when its call's timeout passes.
func (fl *follower) timeout(pr *flCall) {
	fl.wb.w.at(pr.at+pr.limit, fl.c.name+" read timeout", func() {
		fl.resume(pr, &answer{err: &netError{msg: "read tcp " + pr.req.URL.Host + ": i/o timeout", timeout: true}})
	})
}

// stop ends the follower's goroutine at the end of the run: its context
// ends, so that it returns from its sleep or its request.
func (fl *follower) stop() {
	if fl.cancel == nil {
		return
	}
	fl.cancel()
	for {
		select {
		case <-fl.done:
			return
		case <-fl.park:
		case <-time.After(time.Minute):
			panic("dst: a follower did not stop within a minute of real time")
		}
	}
}

// stop ends every follower.
func (wb *web) stop() {
	if wb == nil {
		return
	}
	for _, fl := range wb.followers {
		fl.stop()
	}
}

// onRead takes a reading the follower delivers, on its goroutine while
// the simulation waits.
func (fl *follower) onRead(reading cachenodes.SlotMapReading) {
	fl.c.takeReading(reading, fl.by, fl.truth)
}

// onError traces a failed read.
func (fl *follower) onError(err error) {
	w := fl.wb.w
	if errors.Is(err, mcclient.ErrStaleReplica) || w.cfg.TraceOps {
		w.tr.add(w.now, "%s follower: %v", fl.c.name, err)
	}
}

// followerTransport is the follower's http.RoundTripper: it hands each
// request to the simulation and waits for its answer.
type followerTransport struct{ fl *follower }

func (t followerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	fl := t.fl
	pr := &flCall{req: req, reply: make(chan *answer, 1), at: fl.wb.w.now, limit: fl.limit}
	fl.park <- parked{req: pr}
	select {
	case a := <-pr.reply:
		return a.resp, a.err
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
}

// followerClock is the follower's clock: its host's time, and timers that
// fire when the simulation says. consulwatch arms two kinds: the sleep
// between reads (at most the backoff's cap), on which its goroutine waits,
// and the timeout of each call (at least its margin), on which a helper
// goroutine waits while the call's request is under way. A sleep tells
// the simulation when the goroutine waits on it (C); a call's timeout
// sets the request's.
type followerClock struct {
	hostClock
	fl *follower
}

func (c followerClock) NewTimer(d time.Duration) clock.Timer {
	t := &simTimer{ch: make(chan time.Time, 1), due: c.w.now + max(d, 0), fl: c.fl, sleep: d < consulwatch.DefaultMargin}
	if !t.sleep {
		c.fl.limit = d
	}
	return t
}

func (c followerClock) NewTicker(time.Duration) clock.Ticker {
	panic("dst: a follower armed a ticker; the simulation does not drive one")
}

// simTimer is a timer of a follower's clock.
type simTimer struct {
	ch      chan time.Time
	due     time.Duration
	fl      *follower
	sleep   bool
	parked  bool
	stopped bool
}

func (t *simTimer) C() <-chan time.Time {
	if t.sleep && !t.parked {
		t.parked = true
		t.fl.park <- parked{sleep: t}
	}
	return t.ch
}

func (t *simTimer) Stop() bool {
	was := !t.stopped && len(t.ch) == 0
	t.stopped = true
	return was
}

func (t *simTimer) Reset(time.Duration) bool {
	panic("dst: a follower reset a timer; the simulation does not drive one")
}
