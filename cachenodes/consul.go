package cachenodes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/internal/backoff"
	"github.com/mcrib/mcrib/internal/consulwatch"
)

// Default settings of ConsulSourceOptions.
const (
	DefaultConsulWaitTime    = 30 * time.Second
	DefaultConsulMinInterval = 10 * time.Millisecond
	DefaultConsulMaxBackoff  = 5 * time.Second

	// firstConsulBackoff is the ceiling of the wait after the first failed
	// query; it doubles with every further failure up to MaxBackoff.
	firstConsulBackoff = 100 * time.Millisecond
)

// ConsulSourceOptions configures a ConsulSource. Client and Service are
// required; zero durations, a nil Clock and a nil Logger get the
// documented defaults.
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
	// starts at 100ms (or MaxBackoff if that is smaller) and doubles with
	// each failure in a row, every wait drawn from the upper half of its
	// step (internal/backoff); default DefaultConsulMaxBackoff (5s).
	MaxBackoff time.Duration
	// Clock times Run's waits; nil means the real clock.
	Clock clock.Clock
	// Logger receives warnings such as duplicate service IDs and failed
	// queries; nil discards.
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
	clock        clock.Clock
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
		clock:        clock.Or(opts.Clock),
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
	m, _, err := s.query(ctx, (&api.QueryOptions{}).WithContext(ctx))
	return m, err
}

// Run watches the service until ctx ends, through a consulwatch watch. It
// calls onAnswer with every answer whose instances differ from the last
// one delivered (the first answer always), and onError after each failed
// query; then it backs off exponentially (capped at MaxBackoff) and
// retries, forever. Both callbacks run on Run's goroutine, promptly after
// the query returns: a slow callback delays the next query, nothing else.
// When Consul's index goes backwards (Consul restarted or lost its state),
// and after every failed query, the next query starts again from index 0
// (non-blocking); an index of 0 after an answer is waited on as 1, so that
// queries keep blocking. Either callback may be nil.
func (s *ConsulSource) Run(ctx context.Context, onAnswer func(Membership), onError func(error)) {
	consulwatch.Run(ctx, s.watchOptions(), s.query, func(m Membership, _ uint64) error {
		if onAnswer != nil {
			onAnswer(m)
		}
		return nil
	}, onError)
}

// watchOptions returns the settings of Run's watch.
func (s *ConsulSource) watchOptions() consulwatch.Options[Membership] {
	return consulwatch.Options[Membership]{
		Name:        "health of service " + s.service,
		WaitTime:    s.waitTime,
		MinInterval: s.minInterval,
		Backoff:     backoff.Backoff{Min: s.firstBackoff, Max: s.maxBackoff},
		Equal:       func(a, b Membership) bool { return slices.Equal(a.Instances, b.Instances) },
		Clock:       s.clock,
		Logger:      s.logger,
	}
}

// query runs one health query with q (WaitIndex 0: non-blocking).
func (s *ConsulSource) query(_ context.Context, q *api.QueryOptions) (Membership, *api.QueryMeta, error) {
	entries, meta, err := s.client.Health().Service(s.service, s.tag, false, q)
	if err != nil {
		return Membership{}, nil, fmt.Errorf("reading consul health of service %q: %w", s.service, err)
	}
	if meta.ResultsFilteredByACLs {
		// A membership missing the nodes the token may not see would look
		// like a mass absence: no answer rather than a partial one.
		return Membership{}, nil, fmt.Errorf("reading consul health of service %q: %w", s.service, ErrACLHidden)
	}
	return Membership{Instances: s.instances(entries), Index: meta.LastIndex}, meta, nil
}
