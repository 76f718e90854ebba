package eventlog

import (
	"sync"

	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/mcribapi"
)

// DefaultSize is the number of events a Log keeps when Options.Size is 0.
const DefaultSize = 500

// Options configures NewLog. The zero value keeps DefaultSize events on
// the real clock.
type Options struct {
	// Size is the number of events kept; 0 is DefaultSize.
	Size int
	// Clock dates the events; nil is the real clock.
	Clock clock.Clock
}

// Log is a bounded ring of the latest events, safe for concurrent use.
// Build it with NewLog.
type Log struct {
	clock clock.Clock
	mu    sync.Mutex
	ring  []mcribapi.Event
	next  int // index of the next write once the ring is full
	seq   uint64
}

// NewLog returns an empty Log.
func NewLog(opts Options) *Log {
	if opts.Size <= 0 {
		opts.Size = DefaultSize
	}
	return &Log{clock: clock.Or(opts.Clock), ring: make([]mcribapi.Event, 0, opts.Size)}
}

// Add records e, dating it now when its At is zero, and returns it with
// its sequence number, which numbers the events of one Log from 1. Who defaults to "mcrib" (a decision of its own).
func (l *Log) Add(e mcribapi.Event) mcribapi.Event {
	if e.At.IsZero() {
		e.At = l.clock.Now()
	}
	e.At = e.At.UTC()
	if e.Who == "" {
		e.Who = "mcrib"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	e.Seq = l.seq
	if len(l.ring) < cap(l.ring) {
		l.ring = append(l.ring, e)
	} else {
		l.ring[l.next] = e
		l.next = (l.next + 1) % len(l.ring)
	}
	return e
}

// Since returns the kept events whose Seq is above seq, oldest first.
// Since(0) returns every kept event.
func (l *Log) Since(seq uint64) []mcribapi.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]mcribapi.Event, 0, len(l.ring))
	for i := range l.ring {
		e := l.ring[(l.next+i)%len(l.ring)]
		if e.Seq > seq {
			out = append(out, e)
		}
	}
	return out
}

// Last returns the sequence number of the latest event, 0 before any.
func (l *Log) Last() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq
}
