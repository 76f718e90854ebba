package eventlog

import (
	"context"
	"sync"
	"time"

	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/mcribapi"
)

// DefaultWindow is how far back a History reaches when HistoryOptions.Window
// is 0.
const DefaultWindow = 30 * time.Minute

// maxPoints bounds a History whatever its window and interval.
const maxPoints = 3600

// Reading is what a History samples once per interval besides its own
// counts: the hit rate (Known false while no interval with traffic was
// measured) and the boot limit.
type Reading struct {
	HitRate      float64
	HitRateKnown bool
	BootLimit    float64
	BootMode     string
}

// point is one interval of a History.
type point struct {
	at           time.Time
	hitRate      *float64
	bootLimit    float64
	bootMode     string
	admissions   int
	refusals     int
	flushes      int
	replacements int
}

// HistoryOptions configures NewHistory. Interval is required.
type HistoryOptions struct {
	// Interval is the time between points (the stats interval).
	Interval time.Duration
	// Window is how far back the history reaches; 0 is DefaultWindow.
	Window time.Duration
	// Clock dates the points and times Run; nil is the real clock.
	Clock clock.Clock
}

// History keeps one point per interval over a window: the figures a
// Reading gives and the admissions, refusals, flushes and replacements
// counted during the interval. It is safe for concurrent use; build it
// with NewHistory.
type History struct {
	opts HistoryOptions
	size int

	mu      sync.Mutex
	points  []point
	next    int
	pending point
}

// NewHistory returns an empty History. A non-positive interval is taken as
// one second.
func NewHistory(opts HistoryOptions) *History {
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	opts.Clock = clock.Or(opts.Clock)
	size := min(max(int(opts.Window/opts.Interval), 1), maxPoints)
	return &History{opts: opts, size: size, points: make([]point, 0, size)}
}

// Admission counts one boot admission (admitted) or refusal.
func (h *History) Admission(admitted bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if admitted {
		h.pending.admissions++
	} else {
		h.pending.refusals++
	}
}

// Count counts an event of kind in the current interval; only flushes
// and replacements are counted.
func (h *History) Count(kind mcribapi.EventKind) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch kind {
	case mcribapi.EventFlush:
		h.pending.flushes++
	case mcribapi.EventReplacement:
		h.pending.replacements++
	}
}

// Sample closes the current interval with r, dated now, and starts the
// next one. The oldest point goes once the window is full.
func (h *History) Sample(r Reading) {
	now := h.opts.Clock.Now().UTC()
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.pending
	h.pending = point{}
	p.at, p.bootLimit, p.bootMode = now, r.BootLimit, r.BootMode
	if r.HitRateKnown {
		v := r.HitRate
		p.hitRate = &v
	}
	if len(h.points) < h.size {
		h.points = append(h.points, p)
		return
	}
	h.points[h.next] = p
	h.next = (h.next + 1) % h.size
}

// Run samples read once per interval on the History's clock until ctx
// ends.
func (h *History) Run(ctx context.Context, read func() Reading) {
	tick := h.opts.Clock.NewTicker(h.opts.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
			h.Sample(read())
		}
	}
}

// Series returns the kept points as time series, oldest first: the
// document of GET /v1/history.
func (h *History) Series() mcribapi.History {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(h.points)
	s := mcribapi.History{
		IntervalSeconds: h.opts.Interval.Seconds(),
		WindowSeconds:   h.opts.Window.Seconds(),
		At:              make([]time.Time, 0, n),
		HitRate:         make([]*float64, 0, n),
		BootLimit:       make([]float64, 0, n),
		BootMode:        make([]string, 0, n),
		Admissions:      make([]int, 0, n),
		Refusals:        make([]int, 0, n),
		Flushes:         make([]int, 0, n),
		Replacements:    make([]int, 0, n),
	}
	for i := range n {
		p := h.points[(h.next+i)%n]
		s.At = append(s.At, p.at)
		s.HitRate = append(s.HitRate, p.hitRate)
		s.BootLimit = append(s.BootLimit, p.bootLimit)
		s.BootMode = append(s.BootMode, p.bootMode)
		s.Admissions = append(s.Admissions, p.admissions)
		s.Refusals = append(s.Refusals, p.refusals)
		s.Flushes = append(s.Flushes, p.flushes)
		s.Replacements = append(s.Replacements, p.replacements)
	}
	return s
}
