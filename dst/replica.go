package dst

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/controlloop"
	"github.com/mcrib/mcrib/internal/revert"
	"github.com/mcrib/mcrib/mcribapi"
)

// Pool settings of the simulated mcrib serve.
const (
	poolName = "default"
	kvPrefix = "mcrib"
)

// replica is one mcrib serve of the pool on its host; proc is its running
// process, nil while it is down. A restart is a new process: a new Loop,
// memory lost, the map loaded from KV.
type replica struct {
	w    *world
	idx  int
	id   string // its --advertise-addr, its leader ID
	host *host
	proc *replicaProc
	incs int
}

// replicaProc is one process of a replica.
type replicaProc struct {
	r       *replica
	inc     int
	alive   bool
	consul  *api.Client
	loop    *controlloop.Loop
	lead    *campaign
	source  *cachenodes.ConsulSource
	caller  *caller
	members []cachenodes.Instance
	// seenHealth is the health index of the last answer taken, lastFetch
	// when it was read.
	seenHealth uint64
	lastFetch  time.Duration
	haveHealth bool
	// phase is the offset of the process's pass tick in the probe interval.
	phase time.Duration
	// seen is what its last probe of each node read; learned is set when a
	// probe read something new.
	seen    map[string]probeSeen
	learned bool
	// limiter is its boot limiter and gate (limiter.go), when the run
	// drives boots through the real gate.
	limiter *limiter
}

func (p *replicaProc) wl() *world       { return p.r.w }
func (p *replicaProc) name() string     { return fmt.Sprintf("%s#%d", p.r.host.name, p.inc) }
func (p *replicaProc) clock() hostClock { return hostClock{w: p.r.w, host: p.r.host} }

// start runs a new process of r.
func (r *replica) start() {
	w := r.w
	r.incs++
	p := &replicaProc{r: r, inc: r.incs, alive: true, seen: map[string]probeSeen{}}
	p.consul = w.newConsulClient(r.host.name)
	p.caller = &caller{w: w, host: r.host, name: r.host.name, replica: p}
	src, err := cachenodes.NewConsulSource(cachenodes.ConsulSourceOptions{Client: p.consul, Service: memcachedService, Clock: p.clock()})
	if err != nil {
		panic(err)
	}
	p.source = src
	p.lead = &campaign{p: p, key: poolKeys.Leader(), id: r.id}
	cfg := w.cfg
	// mcrib serve's Options; the self-test's switch after them.
	loop, err := controlloop.New(controlloop.Options{
		Consul:                   p.consul,
		Pool:                     poolName,
		KVPrefix:                 kvPrefix,
		NumSlots:                 w.slotsFlag(),
		Service:                  memcachedService,
		Hold:                     w.hold,
		ProbeInterval:            probeInterval,
		FlushAfterUnreachable:    w.flushAfter,
		MaxAbsentFraction:        cmp.Or(w.plant.absentFraction, maxAbsentFraction),
		MaxReplacementsPerMinute: cmp.Or(w.plant.ceiling, maxReplacementsPerMinute),
		WarmFor:                  warmFor,
		WarmTTL:                  warmTTL,
		ReplicaID:                r.id,
		Discovery:                src,
		Leadership:               p.lead,
		Prober:                   prober{c: p.caller},
		Clock:                    p.clock(),
		Logger:                   w.logger(p.name()),
	})
	if err != nil {
		panic(fmt.Sprintf("dst: building the loop: %v", err))
	}
	revert.Apply(loop, cfg.Reverted) // the self-test's switch
	p.loop = loop
	r.proc = p
	w.truth++
	err = loop.Load(context.Background())
	w.tr.add(w.now, "%s starts (load: %v)", p.name(), errText(err))
	w.chk.onStart(p)
	if w.boots != nil && w.boots.cfg.Handler == nil {
		w.startLimiter(p)
	}

	p.phase = w.msUpTo(int(probeInterval / time.Millisecond))
	alive := func() bool { return p.alive }
	w.every(w.now+w.msUpTo(int(campaignEvery/time.Millisecond)), campaignEvery, p.name()+" campaign", alive, func() {
		p.lead.tick()
	})
	w.every(w.now+p.phase, probeInterval, p.name()+" pass", alive, func() { p.pass("tick") })
	// The watch on the service's health: a blocking query answers when the
	// index moves (and a failed one is retried).
	w.every(w.now+50*time.Millisecond, 500*time.Millisecond, p.name()+" watch", alive, func() {
		if p.haveHealth && w.consul.healthIndex == p.seenHealth {
			return
		}
		if p.fetchHealth() {
			p.pass("health")
		}
	})
	for _, n := range w.nodes {
		for _, id := range n.ids() {
			p.scheduleProbes(n, id)
		}
	}
}

// scheduleProbes probes n, registered as id, every probe interval from a
// phase of its own, as the loop's probe loop spreads its probes.
func (p *replicaProc) scheduleProbes(n *mcNode, id string) {
	w := p.wl()
	first := w.now + w.msUpTo(int(probeInterval/time.Millisecond))
	w.every(first, probeInterval, p.name()+" probe "+id, func() bool { return p.alive && !n.gone }, func() {
		p.learned = false
		p.loop.ProbeNode(context.Background(), cachenodes.Node{ID: id, Addr: n.addr, AZ: n.host.zone})
		if p.learned {
			w.touch(p)
		}
	})
}

// crash kills the process at once: nothing is cleaned up.
func (r *replica) crash(why string) {
	p := r.proc
	if p == nil {
		return
	}
	p.alive = false
	r.proc = nil
	r.w.truth++
	r.w.tr.add(r.w.now, "%s crashes (%s)", p.name(), why)
	r.w.chk.onStop(p)
}

// fetchHealth reads the service's health (the real ConsulSource.Fetch) and
// hands the answer to the loop when its instances changed, as the
// source's watch delivers it. It reports whether it delivered one.
func (p *replicaProc) fetchHealth() bool {
	w := p.wl()
	idx := w.consul.healthIndex
	m, err := p.source.Fetch(context.Background())
	if err != nil {
		return false
	}
	p.seenHealth, p.lastFetch = idx, w.now
	if p.haveHealth && slices.Equal(m.Instances, p.members) {
		return false
	}
	p.members, p.haveHealth = m.Instances, true
	p.loop.Observe(m)
	w.touch(p)
	return true
}

// pass runs one reconcile pass.
func (p *replicaProc) pass(why string) {
	w := p.wl()
	res, err := p.loop.Reconcile(context.Background())
	w.touch(p)
	if err != nil || (res.Outcome != mcribapi.OutcomeFollower && res.Outcome != mcribapi.OutcomeOK) {
		w.tr.add(w.now, "%s pass (%s): %s %s", p.name(), why, res.Outcome, errText(err))
	}
}

// kick asks for a pass soon, as Loop.Kick does when the term begins.
func (p *replicaProc) kick() {
	p.wl().after(time.Millisecond, p.name()+" kick", func() {
		if p.alive {
			p.pass("kick")
		}
	})
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// logger returns the logger of a process: the simulation's own, or
// nothing.
func (w *world) logger(name string) *slog.Logger {
	if w.cfg.Logs == nil {
		return nil
	}
	return slog.New(slog.NewTextHandler(logWriter{w: w, name: name}, &slog.HandlerOptions{Level: slog.LevelInfo,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{} // the line carries the simulated time
			}
			return a
		}}))
}

// logWriter prefixes each log line with the simulated time and the
// process.
type logWriter struct {
	w    *world
	name string
}

func (l logWriter) Write(b []byte) (int, error) {
	fmt.Fprintf(l.w.cfg.Logs, "%10.3fs %s log: %s", l.w.now.Seconds(), l.name, b)
	return len(b), nil
}

// slotsFlag is the --slots a replica starts with: the pool's first count,
// or, once the pool was resized more than once, the count it was last
// resized from (which serve takes with a warning), as operators update
// the flag.
func (w *world) slotsFlag() int {
	if m := w.chk.kvMap; m != nil && m.ResizedFrom() > w.cfg.Slots {
		return m.ResizedFrom()
	}
	return w.cfg.Slots
}
