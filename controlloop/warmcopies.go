package controlloop

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/hitrate"
	"github.com/mcrib/mcrib/warmcopy"
)

// The leader copies the hot keys (docs/concepts.md, "The leader copies
// the hot keys"): while a slot warms (no ended_at) and its warm source
// answers, the leader runs one copy of the move (package warmcopy) from
// the warm source into the new holder, and stops it when the warming
// ends, when either node stops answering, or when it no longer leads.
// Like a flush, a copy adds a key only while this process confirmed the
// leader lock within warmcopy.LockFresh: while copies run, the lock is
// confirmed every confirmEvery. The copy's gets at the source are no
// application's: HitCounters leaves them out of its counters (discount).

// moveCopier copies one warming move's hot keys; *warmcopy.Copier
// implements it.
type moveCopier interface {
	Copy(ctx context.Context, m warmcopy.Move, p *warmcopy.Progress) error
	Totals() warmcopy.Stats
}

var _ moveCopier = (*warmcopy.Copier)(nil)

const (
	// confirmEvery is how often the leader lock is confirmed while copies
	// run: well within warmcopy.LockFresh.
	confirmEvery = 300 * time.Millisecond
	// copyRetry is how long a copy that failed waits before it starts
	// again (the warming still going on).
	copyRetry = 5 * time.Second
)

// copyMove is one copy the leader wants: a warming slot's move, with the
// IDs of its warm source and new holder.
type copyMove struct {
	move           warmcopy.Move
	source, target string
}

// warmCopies runs the leader's copies. Build it with newWarmCopies; its
// methods are safe for concurrent use. Its lock is taken inside the
// loop's, never the other way round.
type warmCopies struct {
	copier  moveCopier // nil: the copy is off
	clock   clock.Clock
	confirm func(ctx context.Context) error
	log     *slog.Logger

	mu   sync.Mutex
	base context.Context // Run's context; nil while Run does not run
	wg   sync.WaitGroup
	// runs are the copies of the warming moves, running or done, by
	// move; each stays (for the status) while its slot's warming object
	// is in the map.
	runs map[warmcopy.Move]*copyRun
	// confirmedAt is when the leader lock was last confirmed (the time
	// the question was sent); wake tells the confirming goroutine that
	// copies run.
	confirmedAt time.Time
	wake        chan struct{}
	// done sums, by warm source, the gets and hits of the copies from it
	// that were forgotten, since its memcached's pid.
	done map[string]copyGets
}

// copyRun is one move's copy.
type copyRun struct {
	copyMove
	p      *warmcopy.Progress
	cancel context.CancelFunc
	// running is true until the copy's goroutine returns; pid is the warm
	// source's memcached pid when the copy began.
	running bool
	pid     int64
}

// copyGets are gets a copy made at its source, with the pid they were
// made on.
type copyGets struct {
	pid        int64
	gets, hits int64
}

func newWarmCopies(c moveCopier, clk clock.Clock, confirm func(context.Context) error, log *slog.Logger) *warmCopies {
	return &warmCopies{copier: c, clock: clk, confirm: confirm, log: log, wake: make(chan struct{}, 1)}
}

// lockConfirmedAt is warmcopy.Options.LockConfirmedAt.
func (w *warmCopies) lockConfirmedAt() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.confirmedAt
}

// run confirms the leader lock every confirmEvery while copies run, until
// ctx ends; then it stops every copy and waits for them. Copies start
// only while it runs (ctx is their parent).
func (w *warmCopies) run(ctx context.Context) {
	w.mu.Lock()
	w.base = ctx
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.base = nil
		w.stopAllLocked()
		w.mu.Unlock()
		w.wg.Wait()
	}()
	for {
		if !w.anyRunning() {
			select {
			case <-ctx.Done():
				return
			case <-w.wake:
				continue
			}
		}
		asked := w.clock.Now()
		cctx, cancel := context.WithTimeout(ctx, warmcopy.LockFresh)
		err := w.confirm(cctx)
		cancel()
		if err == nil {
			w.mu.Lock()
			w.confirmedAt = asked
			w.mu.Unlock()
		}
		if !clock.Sleep(ctx, w.clock, confirmEvery) {
			return
		}
	}
}

func (w *warmCopies) anyRunning() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.runs {
		if r.running {
			return true
		}
	}
	return false
}

// want makes the copies the ones of moves: a move not copied yet starts
// (while run runs), a copy whose move is not wanted stops, and a stopped
// one is forgotten once its move is not in keep either (its slot's
// warming object left the map). pidOf gives a warm source's pid as last
// read (0: unknown).
func (w *warmCopies) want(moves []copyMove, keep map[warmcopy.Move]bool, pidOf func(id string) int64) {
	if w.copier == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	wanted := make(map[warmcopy.Move]bool, len(moves))
	started := false
	for _, m := range moves {
		wanted[m.move] = true
		if _, ok := w.runs[m.move]; ok || w.base == nil {
			continue
		}
		if w.runs == nil {
			w.runs = make(map[warmcopy.Move]*copyRun)
		}
		ctx, cancel := context.WithCancel(w.base)
		r := &copyRun{copyMove: m, p: new(warmcopy.Progress), cancel: cancel, running: true, pid: pidOf(m.source)}
		w.runs[m.move] = r
		w.wg.Go(func() { w.copy(ctx, r) })
		started = true
	}
	for mv, r := range w.runs {
		if !wanted[mv] {
			r.cancel()
		}
		if !wanted[mv] && !keep[mv] {
			w.forgetLocked(r)
			delete(w.runs, mv)
		}
	}
	if started {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// copy runs r's copy until it has gone through its keys or ctx ends; a
// copy that fails starts again copyRetry later.
func (w *warmCopies) copy(ctx context.Context, r *copyRun) {
	defer func() {
		r.cancel()
		w.mu.Lock()
		r.running = false
		w.mu.Unlock()
	}()
	for {
		err := w.copier.Copy(ctx, r.move, r.p)
		if err == nil || ctx.Err() != nil {
			s := r.p.Stats()
			w.log.Info("warm copy over", "slot", r.move.Slot, "from", r.source, "to", r.target,
				"copied_keys", s.CopiedKeys, "copied_bytes", s.CopiedBytes, "undone", s.Undone, "skipped", s.Skipped.Total(), "stopped", ctx.Err() != nil)
			return
		}
		w.log.Warn("warm copy failed; trying again", "slot", r.move.Slot, "from", r.source, "to", r.target, "err", err, "retry_in", copyRetry)
		if !clock.Sleep(ctx, w.clock, copyRetry) {
			return
		}
	}
}

// forgetLocked adds r's gets at its source to done. w.mu must be held.
func (w *warmCopies) forgetLocked(r *copyRun) {
	s := r.p.Stats()
	if s.SourceGets == 0 {
		return
	}
	if w.done == nil {
		w.done = make(map[string]copyGets)
	}
	d := w.done[r.source]
	if d.pid != r.pid {
		d = copyGets{pid: r.pid}
	}
	d.gets, d.hits = d.gets+s.SourceGets, d.hits+s.SourceHits
	w.done[r.source] = d
}

func (w *warmCopies) stopAllLocked() {
	for _, r := range w.runs {
		r.cancel()
	}
}

// discount returns c, the counters of node id, less the gets and hits the
// copies made at it since its memcached's pid (a node restarted since
// counts from zero, and so does what is left of them).
func (w *warmCopies) discount(id string, c hitrate.Counters) hitrate.Counters {
	if w.copier == nil {
		return c
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var gets, hits int64
	if d, ok := w.done[id]; ok {
		if d.pid != c.PID {
			delete(w.done, id)
		} else {
			gets, hits = d.gets, d.hits
		}
	}
	for _, r := range w.runs {
		if r.source == id && r.pid == c.PID {
			s := r.p.Stats()
			gets, hits = gets+s.SourceGets, hits+s.SourceHits
		}
	}
	c.Hits -= min(c.Hits, uint64(hits))
	c.Misses -= min(c.Misses, uint64(gets-hits))
	return c
}

// copied returns what the copies into node id did, for its status entry.
func (w *warmCopies) copied(id string) (keys, bytes int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.runs {
		if r.target == id {
			s := r.p.Stats()
			keys, bytes = keys+s.CopiedKeys, bytes+s.CopiedBytes
		}
	}
	return keys, bytes
}

// totals returns what every copy of this process did (the metrics).
func (w *warmCopies) totals() warmcopy.Stats {
	if w.copier == nil {
		return warmcopy.Stats{}
	}
	return w.copier.Totals()
}
