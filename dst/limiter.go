package dst

import (
	"context"
	"fmt"
	"time"

	"github.com/mcrib/mcrib/ratelimit"
)

// The pool's boot limiter as mcrib serve runs it, the default boot handler
// of the simulation (BootConfig.Handler nil): each replica process has a
// real ratelimit.Service over the pool's boot-limit document in the
// simulated Consul (the real ratelimit.Store through the process's
// *api.Client), read every second as its watch would deliver it and
// ticked every stats interval with the loop's HitCounters, behind the
// process's real API server (simhttp.go) and its bootgate.Gate, whose
// forwards to the leader go over the simulated network into the leader's
// API server. The limit is low (a ceiling
// of 20 boots/s against some 50 offered), so that the pool's one limit
// binds and the checker sees any replica admitting beyond it.
const (
	bootFloor     = 5
	bootCeiling   = 20
	statsInterval = 5 * time.Second
	limiterSync   = time.Second
)

// limiter is one replica process's boot limiter; its gate is the API
// server's (simhttp.go).
type limiter struct {
	svc *ratelimit.Service
}

// startLimiter builds p's limiter and schedules their reads and
// ticks for as long as p lives.
func (w *world) startLimiter(p *replicaProc) {
	leads := func() bool { _, ok := p.lead.Lease(); return ok }
	svc, err := ratelimit.NewService(ratelimit.ServiceOptions{
		Store: ratelimit.NewStore(p.consul, poolKeys.BootLimit()),
		Config: ratelimit.ControllerConfig{
			Floor: bootFloor, Ceiling: bootCeiling, Low: 0.80, Target: 0.90, Interval: statsInterval,
		},
		Clock:    p.clock(),
		Logger:   w.logger(p.name()),
		IsLeader: leads,
	})
	if err != nil {
		panic(fmt.Sprintf("dst: building the boot limiter: %v", err))
	}
	p.limiter = &limiter{svc: svc}
	alive := func() bool { return p.alive }
	ctx := context.Background()
	w.every(w.now+w.msUpTo(int(limiterSync/time.Millisecond)), limiterSync, p.name()+" limiter sync", alive, func() {
		_ = svc.Sync(ctx) // a failed read is retried on the next
	})
	w.every(w.now+w.msUpTo(int(statsInterval/time.Millisecond)), statsInterval, p.name()+" limiter tick", alive, func() {
		nodes, slots := p.loop.HitCounters(ctx)
		svc.Tick(ctx, p.clock().Now(), nodes, slots)
	})
}

// pathAdmitter is a replica's limiter as its gate sees it, telling the
// checker which path admitted each boot: the pool's limit (Admit) or the
// replica's share (AdmitShare).
type pathAdmitter struct {
	svc *ratelimit.Service
	w   *world
	p   *replicaProc
}

func (a pathAdmitter) Admit() (bool, time.Duration) {
	ok, retry := a.svc.Admit()
	if ok {
		d := a.svc.Document()
		a.w.boots.by = admission{proc: a.p, limit: d.Limit, burst: d.Burst}
	}
	return ok, retry
}

func (a pathAdmitter) AdmitShare(replicas int) (bool, time.Duration) {
	ok, retry := a.svc.AdmitShare(replicas)
	if ok {
		d := a.svc.Document()
		a.w.boots.by = admission{proc: a.p, share: true, replicas: max(replicas, 1), limit: d.Limit, burst: d.Burst}
	}
	return ok, retry
}
