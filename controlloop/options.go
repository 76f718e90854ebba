package controlloop

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"time"

	"github.com/hashicorp/consul/api"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/flapdamp"
	"github.com/mcrib/mcrib/slotplan"
)

// Options configures a Loop. Pool, KVPrefix, NumSlots and ProbeInterval
// are required, and so are Consul and Service unless Store and Discovery
// are both given. The optional dependencies get working defaults: nil Store
// the pool's keys in Consul KV (NewConsulStore), nil Discovery a
// cachenodes.ConsulSource on Service and Tag, nil Leadership a process that
// always leads (without a lock to check), nil Prober a cachenodes.Prober
// whose timeout is the probe interval clamped to 250ms..1s, nil Clock the
// real clock, nil Logger a discarding logger, nil Metrics no metrics.
type Options struct {
	Consul   *api.Client
	Pool     string
	KVPrefix string
	NumSlots int
	Service  string
	Tag      string

	Hold                     time.Duration
	ProbeInterval            time.Duration
	FlushAfterUnreachable    time.Duration
	MaxAbsentFraction        float64
	MaxReplacementsPerMinute int
	// Damping is the flap damping; zero fields get flapdamp's defaults and
	// a zero BurstWindow the probe interval.
	Damping flapdamp.DampingConfig

	// MCRouterConfig, when set, is the path of an mcrouter config kept in
	// step with the slot map.
	MCRouterConfig string
	// TwemproxyConfig, when set, is the path of a twemproxy config kept in
	// step with the slot map, listening on TwemproxyListen (empty:
	// DefaultTwemproxyListen).
	TwemproxyConfig, TwemproxyListen string

	// WarmFor is how long a planned move keeps the old holder as the warm
	// source of its slot at most (--warm-for; docs/api.md, "Warm moves");
	// 0 makes every move cold.
	WarmFor time.Duration
	// Converge, when set, ends a warming once its new holder is warm, by
	// this rule (--warm-min and --stats-interval; docs/api.md,
	// "Converged"), judged from the stats reads of HitCounters; and a
	// warming from a drained zone once slotplan.DrainedCap(WarmFor) has
	// passed. Nil: a warming lasts until its until, unless its nodes end
	// it sooner (the simulation's mcrib).
	Converge *slotplan.WarmRule
	// SettleAfterMove is how long after a planned move, or after the end of
	// its warming, HitCounters still marks the slot's node Planned, so that
	// the boot limiter leaves it out of its input (plannedmoves.go); a slot
	// is marked all the while it warms too. Zero: three probe intervals.
	// mcrib serve gives three stats intervals.
	SettleAfterMove time.Duration
	// WarmTTL is the expiry of a value copied from the warm source into
	// the new holder (--warm-ttl); the loop only carries it for the router
	// configs (the mcrouter WarmUpRoute exptime).
	WarmTTL time.Duration
	// WarmCopyRate, when above 0, makes the leader copy each warming
	// slot's hot keys from its warm source into its new holder, at most
	// this many bytes of values a second per move (--warm-copy-rate;
	// warmcopies.go); 0: no copy. The copy runs only under Run.
	WarmCopyRate int64
	// WarmCopyDial opens the copy's connections; nil: a net.Dialer's.
	WarmCopyDial func(ctx context.Context, network, addr string) (net.Conn, error)

	// ReplicaID names this replica among the pool's replicas (its leader
	// ID, the --advertise-addr); its vote on unreachable nodes is published
	// under it. Empty: no vote is published (a process that runs alone).
	ReplicaID string

	Store      Store
	Discovery  Discovery
	Leadership Leadership
	Prober     Prober
	Clock      clock.Clock
	Logger     *slog.Logger
	Metrics    Metrics
	// Events, when set, receives the loop's decisions and node
	// transitions (nil: none).
	Events EventSink
	// Tracer, when set, traces each reconcile pass with its decisions, the
	// Consul calls and the flushes in it (nil: no spans).
	Tracer trace.Tracer
}

// withDefaults checks o and fills in the defaults of its optional fields,
// all but Discovery, which New builds.
func (o Options) withDefaults() (Options, error) {
	switch {
	case o.Consul == nil && (o.Store == nil || o.Discovery == nil):
		return o, errors.New("controlloop: Options.Consul is required")
	case o.Pool == "" || o.KVPrefix == "" || (o.Service == "" && o.Discovery == nil):
		return o, errors.New("controlloop: Options.Pool, KVPrefix and Service are required")
	case o.NumSlots < 1:
		return o, errors.New("controlloop: Options.NumSlots must be at least 1")
	case o.ProbeInterval <= 0:
		return o, errors.New("controlloop: Options.ProbeInterval must be positive")
	case o.WarmFor < 0 || o.WarmTTL < 0 || o.SettleAfterMove < 0 || o.WarmCopyRate < 0:
		return o, errors.New("controlloop: Options.WarmFor, WarmTTL, SettleAfterMove and WarmCopyRate must not be negative")
	}
	o.Clock = clock.Or(o.Clock)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Metrics == nil {
		o.Metrics = nopMetrics{}
	}
	if o.Prober == nil {
		o.Prober = cachenodes.NewProber(cachenodes.ProberOptions{Timeout: min(max(o.ProbeInterval, 250*time.Millisecond), time.Second)})
	}
	if o.Leadership == nil {
		o.Leadership = sole{}
	}
	if o.Store == nil {
		o.Store = NewConsulStore(o.Consul, o.KVPrefix, o.Pool)
	}
	if o.Damping.BurstWindow == 0 {
		o.Damping.BurstWindow = o.ProbeInterval
	}
	o.Damping = o.Damping.WithDefaults()
	return o, nil
}

// WarmTTL returns Options.WarmTTL (--warm-ttl), for the router configs:
// the expiry of a value a warming slot's new holder copies from its warm
// source.
func (l *Loop) WarmTTL() time.Duration { return l.opts.WarmTTL }

// WarmFor returns Options.WarmFor (--warm-for).
func (l *Loop) WarmFor() time.Duration { return l.opts.WarmFor }
