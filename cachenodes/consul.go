package cachenodes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"
)

// Default settings of ConsulSourceOptions.
const (
	DefaultConsulWaitTime    = 30 * time.Second
	DefaultConsulMinInterval = 10 * time.Millisecond
	DefaultConsulMaxBackoff  = 5 * time.Second

	// firstConsulBackoff is the wait after the first failed query; it
	// doubles with every further failure up to MaxBackoff.
	firstConsulBackoff = 100 * time.Millisecond
)

// Check IDs Consul gives its maintenance-mode checks.
const (
	nodeMaintenanceCheckID          = "_node_maintenance"
	serviceMaintenanceCheckIDPrefix = "_service_maintenance:"
)

// Instance is one instance of the service as one Consul answer lists it.
type Instance struct {
	Node
	// Present is true when the instance is listed with every check passing.
	Present bool
	// Maintenance is true when the instance's service maintenance check
	// ("_service_maintenance:<service id>") or its node's maintenance check
	// ("_node_maintenance") is critical: an operator took it out on purpose.
	Maintenance bool
}

// Membership is one answer of Consul's health endpoint: the instances of the
// service sorted by ID, and the X-Consul-Index of the answer. An instance
// that Consul no longer lists (deregistered, or its agent left) is simply
// not in Instances.
type Membership struct {
	Instances []Instance
	Index     uint64
}

// Instance returns the instance with the given ID and whether it is listed.
// It does not rely on the order of Instances.
func (m Membership) Instance(id string) (Instance, bool) {
	for _, in := range m.Instances {
		if in.ID == id {
			return in, true
		}
	}
	return Instance{}, false
}

// ConsulSourceOptions configures a ConsulSource. Client and Service are
// required; zero durations and a nil Logger get the documented defaults.
type ConsulSourceOptions struct {
	// Client is the Consul API client. Required. Its HTTP client must not
	// time out requests sooner than WaitTime (plus Consul's jitter of up to
	// WaitTime/16), or every blocking query fails.
	Client *api.Client
	// Service is the Consul service whose instances are the cache nodes.
	// Required.
	Service string
	// Tag, when set, keeps only instances carrying this tag.
	Tag string
	// WaitTime bounds how long one blocking query waits for a change;
	// default DefaultConsulWaitTime (30s).
	WaitTime time.Duration
	// MinInterval is the minimum time between the starts of two queries,
	// jittered up by as much as 50%; default DefaultConsulMinInterval (10ms).
	MinInterval time.Duration
	// MaxBackoff caps the exponential backoff after failed queries, which
	// starts at 100ms (or MaxBackoff if that is smaller); default
	// DefaultConsulMaxBackoff (5s).
	MaxBackoff time.Duration
	// Logger receives warnings such as duplicate service IDs; nil discards.
	Logger *slog.Logger
}

// ConsulSource watches the instances of one Consul service through blocking
// queries on the health endpoint. Build it with NewConsulSource; the zero
// value is not usable. Fetch is safe for concurrent use; Run must not be
// called twice at the same time on one source.
type ConsulSource struct {
	client       *api.Client
	service      string
	tag          string
	waitTime     time.Duration
	minInterval  time.Duration
	firstBackoff time.Duration
	maxBackoff   time.Duration
	logger       *slog.Logger
}

// NewConsulSource checks opts, fills in the defaults and returns the source.
func NewConsulSource(opts ConsulSourceOptions) (*ConsulSource, error) {
	if opts.Client == nil {
		return nil, errors.New("cachenodes: ConsulSourceOptions.Client is required")
	}
	if opts.Service == "" {
		return nil, errors.New("cachenodes: ConsulSourceOptions.Service is required")
	}
	if opts.WaitTime < 0 || opts.MinInterval < 0 || opts.MaxBackoff < 0 {
		return nil, errors.New("cachenodes: ConsulSourceOptions durations must not be negative")
	}
	s := &ConsulSource{
		client:       opts.Client,
		service:      opts.Service,
		tag:          opts.Tag,
		waitTime:     orDefault(opts.WaitTime, DefaultConsulWaitTime),
		minInterval:  orDefault(opts.MinInterval, DefaultConsulMinInterval),
		firstBackoff: firstConsulBackoff,
		maxBackoff:   orDefault(opts.MaxBackoff, DefaultConsulMaxBackoff),
		logger:       opts.Logger,
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	s.firstBackoff = min(s.firstBackoff, s.maxBackoff)
	return s, nil
}

// orDefault returns d, or def when d is zero.
func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// Fetch reads the current membership once, without blocking for a change.
func (s *ConsulSource) Fetch(ctx context.Context) (Membership, error) {
	return s.query(ctx, 0)
}

// Run watches the service until ctx ends. It calls onAnswer with every
// answer whose instances differ from the last one delivered (the first
// answer always), and onError after each failed query; then it backs off
// exponentially (capped at MaxBackoff) and retries, forever. Both callbacks
// run on Run's goroutine, promptly after the query returns: a slow callback
// delays the next query, nothing else. When Consul's index goes backwards
// (Consul restarted or lost its state) or is zero, and after every failed
// query, the next query starts again from index 0 (non-blocking). Either
// callback may be nil.
func (s *ConsulSource) Run(ctx context.Context, onAnswer func(Membership), onError func(error)) {
	var (
		waitIndex uint64
		last      []Instance
		delivered bool
		failures  int
		// notBefore is when the next query may start.
		notBefore time.Time
	)
	for {
		if !s.sleepUntil(ctx, notBefore) {
			return
		}
		start := time.Now()
		notBefore = start.Add(s.jitteredMinInterval())
		m, err := s.query(ctx, waitIndex)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			// Whatever answers next may be a restarted Consul whose index
			// is below ours; a blocking query with our index would then
			// hang until WaitTime. Start over with a non-blocking query.
			waitIndex = 0
			failures++
			backoff := s.backoff(failures)
			s.logger.Warn("consul health query failed", "service", s.service, "error", err, "retry_in", backoff)
			if onError != nil {
				onError(err)
			}
			notBefore = time.Now().Add(backoff)
			continue
		}
		failures = 0
		switch {
		case m.Index == 0:
			waitIndex = 0
		case m.Index < waitIndex:
			s.logger.Info("consul index went backwards, starting over", "service", s.service, "index", m.Index, "previous", waitIndex)
			waitIndex = 0
		default:
			waitIndex = m.Index
		}
		if delivered && slices.Equal(last, m.Instances) {
			continue
		}
		last, delivered = m.Instances, true
		if onAnswer != nil {
			onAnswer(m)
		}
	}
}

// sleepUntil waits until t or until ctx ends; it reports whether ctx is
// still live.
func (s *ConsulSource) sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// jitteredMinInterval returns MinInterval plus up to 50% of it.
func (s *ConsulSource) jitteredMinInterval() time.Duration {
	return s.minInterval + rand.N(s.minInterval/2+1)
}

// backoff returns the wait after the given number of consecutive failures:
// the first backoff doubled per failure, capped at MaxBackoff, minus up to
// 20% jitter so that many watchers do not retry in lockstep.
func (s *ConsulSource) backoff(failures int) time.Duration {
	d := s.firstBackoff
	for i := 1; i < failures && d < s.maxBackoff; i++ {
		d *= 2
	}
	d = min(d, s.maxBackoff)
	return d - rand.N(d/5+1)
}

// query runs one health query; waitIndex 0 makes it non-blocking.
func (s *ConsulSource) query(ctx context.Context, waitIndex uint64) (Membership, error) {
	q := &api.QueryOptions{WaitIndex: waitIndex}
	if waitIndex != 0 {
		q.WaitTime = s.waitTime
	}
	entries, meta, err := s.client.Health().Service(s.service, s.tag, false, q.WithContext(ctx))
	if err != nil {
		return Membership{}, fmt.Errorf("reading consul health of service %q: %w", s.service, err)
	}
	return Membership{Instances: s.instances(entries), Index: meta.LastIndex}, nil
}

// instances turns the health entries into instances sorted by ID, keeping
// one entry per service ID.
func (s *ConsulSource) instances(entries []*api.ServiceEntry) []Instance {
	type candidate struct {
		inst     Instance
		nodeName string
	}
	byID := make(map[string]candidate, len(entries))
	for _, e := range entries {
		if e == nil || e.Service == nil {
			continue
		}
		c := candidate{inst: instanceOf(e)}
		if e.Node != nil {
			c.nodeName = e.Node.Node
		}
		prev, dup := byID[c.inst.ID]
		if !dup {
			byID[c.inst.ID] = c
			continue
		}
		keep, drop := prev, c
		if better(c.inst, c.nodeName, prev.inst, prev.nodeName) {
			keep, drop = c, prev
		}
		s.logger.Warn("service ID registered on two Consul nodes; keeping one",
			"service", s.service, "service_id", c.inst.ID,
			"kept_node", keep.nodeName, "dropped_node", drop.nodeName)
		byID[c.inst.ID] = keep
	}
	out := make([]Instance, 0, len(byID))
	for _, c := range byID {
		out = append(out, c.inst)
	}
	slices.SortFunc(out, func(a, b Instance) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// better reports whether instance a on node an should win over b on node bn
// when both carry the same service ID: a present one wins, then the one on
// the node whose name sorts first.
func better(a Instance, an string, b Instance, bn string) bool {
	if a.Present != b.Present {
		return a.Present
	}
	return an < bn
}

// instanceOf converts one health entry.
func instanceOf(e *api.ServiceEntry) Instance {
	svc := e.Service
	var nodeAddr string
	var nodeMeta map[string]string
	if e.Node != nil {
		nodeAddr, nodeMeta = e.Node.Address, e.Node.Meta
	}
	host := svc.Address
	if host == "" {
		host = nodeAddr
	}
	az := svc.Meta["az"]
	if az == "" {
		az = nodeMeta["az"]
	}
	inst := Instance{
		Node:    Node{ID: svc.ID, Addr: net.JoinHostPort(host, strconv.Itoa(svc.Port)), AZ: az},
		Present: true,
	}
	serviceMaint := serviceMaintenanceCheckIDPrefix + svc.ID
	for _, c := range e.Checks {
		if c == nil {
			continue
		}
		if c.Status != api.HealthPassing {
			inst.Present = false
		}
		if c.Status == api.HealthCritical && (c.CheckID == nodeMaintenanceCheckID || c.CheckID == serviceMaint) {
			inst.Maintenance = true
		}
	}
	return inst
}
