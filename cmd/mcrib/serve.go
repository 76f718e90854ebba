package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/controlloop"
	"github.com/mcrib/mcrib/internal/apiserver"
	"github.com/mcrib/mcrib/internal/consulcall"
	"github.com/mcrib/mcrib/internal/eventlog"
	"github.com/mcrib/mcrib/internal/kvlayout"
	"github.com/mcrib/mcrib/internal/tracing"
	"github.com/mcrib/mcrib/leader"
	"github.com/mcrib/mcrib/mcribapi"
	"github.com/mcrib/mcrib/metrics"
	"github.com/mcrib/mcrib/ratelimit"
	"github.com/mcrib/mcrib/slotplan"
)

// shutdownGrace bounds the HTTP server's graceful shutdown; the whole stop,
// lock release included, stays within 5 s.
const shutdownGrace = 3 * time.Second

// runServe runs the control plane with cfg until ctx is done. It returns nil
// after a clean stop; an error when it cannot start (exit 1), or an
// *exitError with code 2 when the stored pool does not fit the flags.
func runServe(ctx context.Context, cfg serveConfig, stdout, stderr io.Writer) error {
	logger := newLogger(cfg.LogFormat, stderr)
	consul, err := newConsulClient(cfg.Consul)
	if err != nil {
		return badFlag(fmt.Errorf("--consul: %w", err))
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	defer ln.Close() // also closed by the server's Shutdown; a second Close is harmless
	// The leader ID is what the other replicas forward boots to: an
	// address they can reach, never a wildcard (the --advertise-addr rule).
	id, err := advertiseAddr(cfg.AdvertiseAddr, listenName(cfg.Listen, ln.Addr()), net.InterfaceAddrs)
	if err != nil {
		return badFlag(err)
	}
	keys := kvlayout.For(cfg.KVPrefix, cfg.Pool)

	elector, err := leader.New(leader.Options{Client: consul, Key: keys.Leader(), ID: id, Logger: logger})
	if err != nil {
		return err
	}
	prober := cachenodes.NewProber(cachenodes.ProberOptions{Timeout: min(max(cfg.ProbeInterval, 250*time.Millisecond), time.Second)})
	// The gauges are read at scrape time, once the loop and the limiter
	// below exist and the API serves.
	var (
		loop *controlloop.Loop
		boot *ratelimit.Service
	)
	rec, metricsHandler, err := metrics.New(metrics.Options{Gauges: func() metrics.Gauges { return gauges(loop, boot) },
		Pool: cfg.Pool, Version: version, Runtime: true})
	if err != nil {
		return fmt.Errorf("setting up metrics: %w", err)
	}
	traces, err := tracing.Setup(ctx, tracing.Options{Getenv: os.Getenv, Version: version, Pool: cfg.Pool})
	if err != nil {
		return err
	}
	defer func() {
		shutCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		traces.Shutdown(shutCtx)
	}()
	if traces.Protocol != "" {
		logger.Info("exporting traces over OTLP", "protocol", traces.Protocol)
	}
	ops := apiserver.NewOps(eventlog.NewLog(eventlog.Options{}), eventlog.NewHistory(eventlog.HistoryOptions{Interval: cfg.StatsInterval}))
	loop, err = controlloop.New(controlloop.Options{
		Consul:                   consul,
		Pool:                     cfg.Pool,
		KVPrefix:                 cfg.KVPrefix,
		NumSlots:                 cfg.Slots,
		Service:                  cfg.Service,
		Tag:                      cfg.Tag,
		Hold:                     cfg.Hold,
		ProbeInterval:            cfg.ProbeInterval,
		FlushAfterUnreachable:    cfg.FlushAfterUnreachable,
		MaxAbsentFraction:        cfg.MaxAbsentFraction,
		MaxReplacementsPerMinute: cfg.MaxReplacementsPerMinute,
		WarmFor:                  cfg.WarmFor,
		Converge:                 &slotplan.WarmRule{WarmMin: cfg.WarmMin, StatsInterval: cfg.StatsInterval},
		WarmTTL:                  cfg.WarmTTL,
		WarmCopyRate:             cfg.WarmCopyRate,
		SettleAfterMove:          3 * cfg.StatsInterval,
		MCRouterConfig:           cfg.McrouterConfig,
		ReplicaID:                id,
		TwemproxyConfig:          cfg.TwemproxyConfig,
		TwemproxyListen:          cfg.TwemproxyListen,
		Leadership:               elector,
		Prober:                   prober,
		Logger:                   logger,
		Metrics:                  rec,
		Events:                   ops.Sink(),
		Tracer:                   traces.Tracer("github.com/mcrib/mcrib/controlloop"),
	})
	if err != nil {
		return err
	}
	loadCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err = loop.Load(loadCtx)
	cancel()
	switch {
	case errors.Is(err, controlloop.ErrSlotCountMismatch):
		return badFlag(fmt.Errorf("--slots: %s", strings.TrimPrefix(err.Error(), controlloop.ErrSlotCountMismatch.Error()+": ")))
	case errors.Is(err, controlloop.ErrCorruptDocument) || errors.Is(err, controlloop.ErrForeignSlotMap):
		logger.Error("the pool's state in Consul KV is refused; nothing is changed until it is fixed", "err", err)
	case err != nil:
		logger.Warn("consul is not reachable at start; serving what is known and retrying", "err", err)
	}

	boot, err = ratelimit.NewService(ratelimit.ServiceOptions{
		Client: consul,
		Key:    keys.BootLimit(),
		Config: ratelimit.ControllerConfig{
			Floor: cfg.BootLimitMin, Ceiling: cfg.BootLimitMax,
			Low: cfg.HitRateLow, Target: cfg.HitRateTarget,
			Interval: cfg.StatsInterval,
		},
		Logger:   logger,
		Stats:    loop.HitCounters,
		IsLeader: elector.IsLeader,
	})
	if err != nil {
		return err
	}
	api, err := apiserver.New(apiserver.Options{
		Loop:       loop,
		Boot:       boot,
		Recorder:   rec,
		Metrics:    metricsHandler,
		Token:      cfg.Token,
		Logger:     logger,
		Leader:     func() (bool, string) { return elector.IsLeader(), elector.LeaderID() },
		Assured:    elector.IsAssured,
		ID:         id,
		Replicas:   replicaSet{loop: loop, elector: elector},
		Ops:        ops,
		ConsulAddr: cfg.Consul,
		KVPrefix:   cfg.KVPrefix,
		TLSCert:    cfg.TLSCert,
		Listen:     cfg.Listen,
		Bound:      ln.Addr().String(),
		Tracer:     traces.Tracer("github.com/mcrib/mcrib/cmd/mcrib"),
	})
	if err != nil {
		return err
	}
	srv := api.HTTPServer()
	fmt.Fprintf(stdout, "mcrib serving pool %q on %s://%s/ (consul %s)\n", cfg.Pool, api.Scheme(), id, cfg.Consul)
	logger.Info("mcrib serving", "pool", cfg.Pool, "listen", id, "consul", cfg.Consul, "slots", cfg.Slots, "version", version)

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	wg.Go(func() {
		elector.Run(runCtx, func(lctx context.Context, session string) {
			logger.Info("this process leads the pool", "session", session)
			loop.Kick()
			<-lctx.Done()
			logger.Info("this process no longer leads the pool")
			loop.Kick()
		})
	})
	wg.Go(func() { loop.Run(runCtx) })
	wg.Go(func() { ops.Run(runCtx, boot, boot.HitRate) })
	wg.Go(func() {
		if err := boot.Run(runCtx); err != nil && runCtx.Err() == nil {
			logger.Error("the boot limiter stopped", "err", err)
		}
	})
	// A restarted process answers with the stored boot limit, not the
	// stand-in it holds until the first read; Consul being away delays the
	// API by at most bootLoadWait.
	waitLoaded(runCtx, boot.Loaded, bootLoadWait)
	serveErr := make(chan error, 1)
	go func() {
		if cfg.TLSCert != "" {
			serveErr <- srv.ServeTLS(ln, cfg.TLSCert, cfg.TLSKey)
			return
		}
		serveErr <- srv.Serve(ln)
	}()

	var stopErr error
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		logger.Error("the HTTP API stopped", "err", err)
		stopErr = reported(1)
	}
	logger.Info("mcrib stopping")
	stop()
	shutCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	srv.Shutdown(shutCtx)
	wg.Wait()
	logger.Info("mcrib stopped")
	return stopErr
}

// replicaSet is the replicas of a running mcrib serve: the loop's view of
// them, and this process's session from the elector.
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

// bootLoadWait bounds how long serve waits for the boot-limit document
// before it opens the API.
const bootLoadWait = 3 * time.Second

// waitLoaded polls loaded until it is true, ctx ends or limit passes.
func waitLoaded(ctx context.Context, loaded func() bool, limit time.Duration) {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !loaded() {
		select {
		case <-ctx.Done():
			return
		case <-deadline.C:
			return
		case <-tick.C:
		}
	}
}

// newLogger returns the slog logger of --log-format.
func newLogger(format string, w io.Writer) *slog.Logger {
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, nil))
	}
	return slog.New(slog.NewTextHandler(w, nil))
}

// newConsulClient returns a Consul API client for addr ("host:port" or a
// URL); the rest of the Consul environment (CONSUL_HTTP_TOKEN, TLS) is read
// as the Consul CLI reads it. Every call carries a deadline
// (internal/consulcall): 10 s, or a blocking query's wait plus 10 s.
func newConsulClient(addr string) (*api.Client, error) {
	conf := api.DefaultConfig()
	conf.Address = addr
	hc, err := api.NewHttpClient(conf.Transport, conf.TLSConfig)
	if err != nil {
		return nil, err
	}
	hc.Transport = &consulcall.Transport{Base: hc.Transport}
	conf.HttpClient = hc
	return api.NewClient(conf)
}

// gauges reads the loop and the limiter for a metrics scrape.
func gauges(loop *controlloop.Loop, boot *ratelimit.Service) metrics.Gauges {
	st := loop.Status()
	doc := boot.Document()
	g := metrics.Gauges{
		Generation:          st.Generation,
		Leader:              st.Leader,
		Frozen:              st.Frozen,
		AutoFrozen:          st.AutoFrozen,
		DiscoveryFault:      st.DiscoveryFault,
		ConsulReachable:     st.ConsulReachable,
		Ready:               loop.Ready() == nil,
		VacantSlots:         st.VacantSlots,
		SlotsUnserved:       st.SlotsUnserved,
		NumSlots:            st.NumSlots,
		ReplacementsBlocked: st.ReplacementsBlocked,
		NodesByState:        map[mcribapi.NodeState]int{},
		BootLimit:           doc.Limit,
		BootLimitManual:     doc.Mode == ratelimit.ModeManual,
		CorruptDocuments:    st.CorruptDocuments,
	}
	if c := st.Capacity; c != nil {
		g.SpareNodes, g.PresentNodes = c.SparesReady, c.Nodes
	}
	g.ConfigGenerations = loop.ConfigGenerations()
	copied := loop.WarmCopied()
	g.WarmCopiedKeys, g.WarmCopiedBytes = copied.CopiedKeys, copied.CopiedBytes
	if m := loop.SlotMap(); m != nil {
		g.SlotMapUpdated = m.UpdatedAt()
	}
	if st.LastReconcileAt != nil {
		g.LastReconcile = *st.LastReconcileAt
	}
	if rate, known := boot.HitRate(); known {
		g.HitRate = rate
	} else {
		// No reading here (no interval with gets yet, or none in the last): NaN,
		// so a rule like mcrib_hit_rate < 0.8 does not fire on an idle pool.
		g.HitRate = math.NaN()
	}
	for _, z := range st.Zones {
		g.Zones = append(g.Zones, metrics.ZoneGauges{Zone: z.Zone, Slots: z.Slots, Unreachable: z.Unreachable, HitRate: z.HitRate, Alert: z.Alert})
	}
	if r := st.Roll; r != nil {
		g.RollNodes = map[mcribapi.RollNodeState]int{}
		for _, n := range r.Nodes {
			g.RollNodes[n.State]++
		}
	}
	for _, n := range st.Nodes {
		g.NodesByState[n.State]++
		if n.FlushPending {
			g.FlushesPending++
		}
	}
	return g
}
