package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/internal/consulwatch"
	"github.com/mcrib/mcrib/internal/peak"
)

// ClientOptions configures a Client. Consul and Key are required; the
// other fields may be left zero.
type ClientOptions struct {
	// Consul is the Consul client (required).
	Consul *api.Client
	// Key is the KV key of the published boot-limit document (required;
	// Key(kvPrefix, pool)).
	Key string
	// Service is the application's own Consul service; the published
	// limit is shared equally among its passing instances. While that
	// count is unknown, zero or late (below a count seen in the last
	// PeakWindow), the limit is shared among the largest count seen in
	// that window, so that the pool never admits more because a count
	// lags. "" means this is the only instance.
	Service string
	// Tag, when set, counts only the instances of Service carrying it.
	Tag string
	// Clock tells the time, times the watches' waits and the PeakWindow;
	// nil means the real clock. An application's test can pass a
	// clock.Fake (package github.com/mcrib/mcrib/clock) and move it.
	Clock clock.Clock
	// Logger receives the client's log; nil discards it.
	Logger *slog.Logger
	// Fallback is the limit, boots/s, enforced until the document (and,
	// when Service is set, an instance count above 0 within PeakWindow)
	// has been read; 0 means 1.
	Fallback float64
}

// Client is the part of the boot limiter a web application embeds. It
// follows the published boot-limit document and the number of passing
// instances of the application's Consul service with blocking queries, and
// enforces the application's share locally: limit / instances boots per
// second (never below 1 boot/s unless the limit is 0, which stops boots),
// with burst ceil(burst / instances) (at least 1). The instances counted
// are the largest count in force over the last PeakWindow (invariant 8: a
// count that is unknown, zero or late never lets the pool admit more). A
// count of 0 within that window, or none yet, enforces Fallback.
// Admissions are decided in memory, without a network hop. When Consul
// cannot be reached, the last known share stays in force.
//
// The zero value is not usable; build a Client with NewClient and start
// Run. A Client is safe for concurrent use; Allow does not allocate.
type Client struct {
	store    *Store
	health   *api.Health
	service  string
	tag      string
	clock    clock.Clock
	log      *slog.Logger
	fallback float64
	adm      *Admitter
	running  atomic.Bool

	mu        sync.Mutex // guards the fields below
	doc       Document
	haveDoc   bool
	instances peak.Count
	limit     float64
	burst     int

	// rearm wakes the expiry loop when a count arrives (peak.next moved).
	rearm chan struct{}
}

// NewClient checks opts and returns a Client enforcing the fallback limit
// until Run has read the published one.
func NewClient(opts ClientOptions) (*Client, error) {
	if opts.Consul == nil {
		return nil, errors.New("ratelimit: ClientOptions.Consul is required")
	}
	if opts.Key == "" {
		return nil, errors.New("ratelimit: ClientOptions.Key is required")
	}
	if !finite(opts.Fallback) || opts.Fallback < 0 {
		return nil, errors.New("ratelimit: ClientOptions.Fallback must be a finite number of boots per second, at least 0")
	}
	c := &Client{
		store:    NewStore(opts.Consul, opts.Key),
		health:   opts.Consul.Health(),
		service:  opts.Service,
		tag:      opts.Tag,
		clock:    clock.Or(opts.Clock),
		log:      opts.Logger,
		fallback: opts.Fallback,
		rearm:    make(chan struct{}, 1),
	}
	if c.log == nil {
		c.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.fallback == 0 {
		c.fallback = 1
	}
	c.limit, c.burst = c.fallback, DefaultBurst(c.fallback)
	c.adm = NewAdmitter(c.limit, c.burst)
	return c, nil
}

// Run follows the published document and the instance count until ctx
// ends, then returns nil. Consul errors are logged, backed off and retried.
// A second concurrent Run returns ErrRunning.
func (c *Client) Run(ctx context.Context) error {
	if !c.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer c.running.Store(false)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.store.follow(ctx, c.clock, c.log, sameReading, c.onReading)
	}()
	if c.service != "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			opts := consulwatch.Options[int]{
				Name: "passing instances of service " + c.service, Equal: func(a, b int) bool { return a == b },
				Clock: c.clock, Logger: c.log,
			}
			consulwatch.Run(ctx, opts, c.countInstances, c.onCount, nil)
		}()
		wg.Go(func() { c.expireCounts(ctx) })
	}
	wg.Wait()
	return nil
}

// Allow reports whether this instance may let one client boot now, and
// takes its token if so.
func (c *Client) Allow() bool { return c.adm.Allow(c.clock.Now()) }

// Admit is Allow that also says, on refusal, how long to wait: whole
// seconds, at least 1s (for a Retry-After header).
func (c *Client) Admit() (ok bool, retryAfter time.Duration) { return c.adm.Admit(c.clock.Now()) }

// Limit returns this instance's share of the boot limit, boots/s.
func (c *Client) Limit() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.limit
}

// Burst returns this instance's share of the burst.
func (c *Client) Burst() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.burst
}

// Instances returns the number of instances the limit is shared among
// (at least 1): the largest count in force over the last PeakWindow.
func (c *Client) Instances() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, _ := c.instances.Peak(c.clock.Now())
	return max(n, 1)
}

// Document returns the last published document read; ok is false until one
// has been read.
func (c *Client) Document() (doc Document, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.doc, c.haveDoc
}

// onReading follows the published document. A missing or unreadable
// document keeps the last one in force.
func (c *Client) onReading(r docReading, _ uint64) error {
	switch {
	case r.Bad != nil:
		c.log.Warn("the published boot-limit document cannot be read; keeping the last limit", "key", c.store.Key(), "err", r.Bad)
	case !r.Snap.Found:
		c.log.Warn("no boot-limit document is published; keeping the last limit", "key", c.store.Key())
	default:
		c.mu.Lock()
		c.doc, c.haveDoc = r.Snap.Doc, true
		c.mu.Unlock()
		c.share()
	}
	return nil
}

// countInstances reads the number of passing instances of the service.
func (c *Client) countInstances(_ context.Context, q *api.QueryOptions) (int, *api.QueryMeta, error) {
	entries, meta, err := c.health.Service(c.service, c.tag, true, q)
	if err != nil {
		return 0, nil, fmt.Errorf("reading the passing instances of service %q from consul: %w", c.service, err)
	}
	return len(entries), meta, nil
}

// onCount follows the number of passing instances of the service.
func (c *Client) onCount(n int, _ uint64) error {
	c.mu.Lock()
	c.instances.Observe(c.clock.Now(), n)
	c.mu.Unlock()
	c.share()
	select {
	case c.rearm <- struct{}{}:
	default:
	}
	return nil
}

// expireCounts recomputes the share each time a remembered count leaves
// the PeakWindow, until ctx ends.
func (c *Client) expireCounts(ctx context.Context) {
	for {
		c.mu.Lock()
		at, ok := c.instances.Next()
		c.mu.Unlock()
		var (
			timer clock.Timer
			fire  <-chan time.Time
		)
		if ok {
			timer = c.clock.NewTimer(at.Sub(c.clock.Now()))
			fire = timer.C()
		}
		select {
		case <-ctx.Done():
		case <-c.rearm:
		case <-fire:
			c.share()
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// share recomputes this instance's share and moves the Admitter to it.
// The Admitter moves under c.mu, so two watchers cannot leave it on the
// older of two shares.
func (c *Client) share() {
	c.mu.Lock()
	defer c.mu.Unlock()
	limit, burst := c.fallback, DefaultBurst(c.fallback)
	n, counted := c.instances.Peak(c.clock.Now())
	switch {
	case c.haveDoc && c.service == "":
		limit, burst = shareOf(c.doc.Limit, c.doc.Burst, 1)
	case c.haveDoc && counted:
		limit, burst = shareOf(c.doc.Limit, c.doc.Burst, n)
	}
	if limit == c.limit && burst == c.burst {
		return
	}
	c.limit, c.burst = limit, burst
	c.adm.Set(limit, burst, c.clock.Now())
	c.log.Info("boot-limit share changed", "limit", limit, "burst", burst, "instances", max(n, 1))
}

// shareOf divides a pool-wide limit and burst among instances (at least
// 1): the limit never below 1 boot/s unless it is 0, the burst at least 1.
func shareOf(limit float64, burst, instances int) (float64, int) {
	n := max(instances, 1)
	l := limit / float64(n)
	if limit > 0 {
		l = max(l, 1)
	}
	b := int(math.Ceil(float64(burst) / float64(n)))
	return l, max(b, 1)
}
