package warmcopy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/clock"
)

// Limits of one batch: the keys of one gets, their adds sent at once, and
// the gets that checks them.
const (
	// maxBatchKeys is the most keys in a batch.
	maxBatchKeys = 128
	// maxBatchLine is the longest gets line of a batch, in bytes.
	maxBatchLine = 8 << 10
)

// busyRetry is how long a copy waits before it asks again for a
// metadump that the LRU crawler refused as busy.
const busyRetry = time.Second

// lockPoll is how often a copy paused for the leader lock looks again.
const lockPoll = 100 * time.Millisecond

// Copy copies m's hot keys from m.Source into m.Target (docs/concepts.md,
// "The leader copies the hot keys"): it lists the source's items with
// `lru_crawler metadump hash` (`all` on a memcached without it), picks the keys of the slot as Pick does
// (most recently used first), and copies them in batches, each at most
// the rate allows: one gets of the batch at the source; for each key
// found unchanged since the dump, an add into B with the item's flags and
// expiry min(remaining, WarmTTL), sent within cachenodes.FillWithin of
// the gets and only while the leader lock is fresh (LockFresh); then a
// second gets at the source of the keys B stored, and for each that is
// gone or has a new CAS unique, the tombstone in B
// (cachenodes.TombstoneItem) instead. It never deletes at B, and an add
// B refuses (a value or a tombstone is there) is no copy. The rate is
// halved while the source answers a gets slower than SlowAnswer.
//
// Copy counts into p (nil: not counted but in Totals), which may be read
// while it runs. It returns nil when it has gone through every key
// listed, and ctx.Err() when ctx ends first (the warming is over): it
// stops before the next gets or add, but a batch already added to B is
// still checked and undone where it must be. Any other error ends the
// copy: it wraps ErrSource or ErrTarget (and ErrBusy, ErrProtocol,
// ErrServer or the network's error), joined with an *UnverifiedError
// when copies B may hold could be neither checked nor undone. Copy opens
// its connections itself and closes them before it returns.
func (c *Copier) Copy(ctx context.Context, m Move, p *Progress) error {
	if err := m.check(); err != nil {
		return err
	}
	if p == nil {
		p = new(Progress)
	}
	r := &run{c: c, m: m, p: p, t: tally{run: &p.c, all: &c.totals}}
	defer r.close()
	list, err := r.list(ctx)
	if err != nil {
		return err
	}
	r.pace = newPace(c.opts.Rate)
	for len(list) > 0 {
		if err := r.wait(ctx); err != nil {
			return err
		}
		n := r.batchLen(list)
		if err := r.batch(ctx, list[:n]); err != nil {
			return err
		}
		list = list[n:]
	}
	return nil
}

// run is one Copy.
type run struct {
	c    *Copier
	m    Move
	p    *Progress
	t    tally
	pace *pace
	src  node
	dst  node // nil until the first add, and after a failure
	// srcAt is the source's clock (Unix seconds) when c.clock read
	// srcRead.
	srcAt   int64
	srcRead time.Time
}

// close closes the run's connections and clears its Halved.
func (r *run) close() {
	if r.src != nil {
		r.src.close()
	}
	r.dropTarget()
	r.p.halved.Store(false)
}

func (r *run) dropTarget() {
	if r.dst != nil {
		r.dst.close()
		r.dst = nil
	}
}

// target returns the connection to B, opening it when there is none.
func (r *run) target(ctx context.Context) (node, error) {
	if r.dst == nil {
		dst, err := r.c.open(ctx, r.m.Target)
		if err != nil {
			return nil, err
		}
		r.dst = dst
	}
	return r.dst, nil
}

func (r *run) srcErr(doing string, err error) error {
	return fmt.Errorf("%w: %s %s: %w", ErrSource, doing, r.m.Source, err)
}

func (r *run) dstErr(doing string, err error) error {
	return fmt.Errorf("%w: %s %s: %w", ErrTarget, doing, r.m.Target, err)
}

// sourceNow returns the source's clock when c.clock reads now.
func (r *run) sourceNow(now time.Time) time.Time {
	return time.Unix(r.srcAt, 0).Add(now.Sub(r.srcRead))
}

// list connects to the source, reads its clock and its metadump, and
// returns the keys to copy in order. The dump walks the hash table
// (`metadump hash`): a walk of the LRU queues (`metadump all`) misses the
// items that move between them meanwhile, and a source that serves
// reads moves its hot items, the very ones to copy; a memcached without
// the hash walk (BADCLASS) is asked for `all`. A busy crawler is asked
// again every busyRetry until ctx ends.
func (r *run) list(ctx context.Context) ([]Entry, error) {
	clk := r.c.clock
	src, err := r.c.open(ctx, r.m.Source)
	if err != nil {
		return nil, r.srcErr("connecting to", err)
	}
	r.src = src
	mode := "hash"
	for {
		at, err := src.serverTime()
		if err != nil {
			return nil, r.srcErr("reading the clock of", err)
		}
		r.srcAt, r.srcRead = at, clk.Now()
		pk := newPicker(r.m.Slot, r.m.NumSlots, time.Unix(at, 0), r.c.opts.MaxKeys)
		err = src.metadump(ctx, mode, pk.offer)
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.Is(err, errBadClass) && mode == "hash":
			mode = "all"
			continue
		case errors.Is(err, ErrBusy):
			if !clock.Sleep(ctx, clk, busyRetry) {
				return nil, ctx.Err()
			}
			continue
		case err != nil:
			return nil, r.srcErr("listing the items of", err)
		}
		list := pk.list()
		r.t.add(cDumped, pk.dumped)
		r.t.add(cListed, int64(len(list)))
		for reason, n := range pk.skipped {
			r.t.skip(SkipReason(reason), n)
		}
		return list, nil
	}
}

// wait waits until the bytes copied so far are paid for and the leader
// lock is fresh, or ctx ends (its error).
func (r *run) wait(ctx context.Context) error {
	clk := r.c.clock
	if !clock.Sleep(ctx, clk, r.pace.delay(clk.Now())) {
		return ctx.Err()
	}
	if !r.c.leading(clk.Now()) {
		r.t.add(cLockWaits, 1)
		for !r.c.leading(clk.Now()) {
			if !clock.Sleep(ctx, clk, lockPoll) {
				return ctx.Err()
			}
		}
	}
	return ctx.Err()
}

// batchLen returns how many of the keys list begins with go in the next
// batch: at least one; at most maxBatchKeys, a gets line of maxBatchLine
// bytes, and the bytes the pace lets through at once (by the items'
// sizes in memory, a little over their values').
func (r *run) batchLen(list []Entry) int {
	n, line, size := 1, len("gets ")+len(list[0].Key), list[0].Size
	for n < len(list) && n < maxBatchKeys {
		e := list[n]
		if line+1+len(e.Key) > maxBatchLine || size+e.Size > r.pace.burst {
			break
		}
		line, size = line+1+len(e.Key), size+e.Size
		n++
	}
	return n
}

// gets sends one gets of keys to the source and takes its time: a slow
// answer halves the rate.
func (r *run) gets(keys []string) ([]item, time.Time, error) {
	clk := r.c.clock
	start := clk.Now()
	got, err := r.src.gets(keys, r.c.opts.MaxValueBytes)
	now := clk.Now()
	if r.pace.answered(now, now.Sub(start)) {
		r.t.add(cSlowGets, 1)
	}
	r.p.halved.Store(r.pace.halved)
	r.t.add(cSourceGets, int64(len(keys)))
	r.t.add(cSourceHits, int64(len(got)))
	return got, start, err
}

// pending is a key added to B, to be checked: its CAS unique at the
// first gets and its value's size.
type pending struct {
	key  string
	cas  uint64
	size int
}

// batch copies the keys of es (see Copy).
func (r *run) batch(ctx context.Context, es []Entry) error {
	clk := r.c.clock
	keys := make([]string, len(es))
	for i, e := range es {
		keys[i] = e.Key
	}
	got, start, err := r.gets(keys)
	if err != nil {
		return r.srcErr("getting keys from", err)
	}
	read := 0
	for _, it := range got {
		read += it.size
	}
	r.pace.charge(clk.Now(), read)

	// What the source had, as the dump listed it.
	found := make([]item, 0, len(got))
	exps := make([]int64, 0, len(got))
	for i, j := 0, 0; i < len(es); i++ {
		e := es[i]
		if j >= len(got) || got[j].key != e.Key {
			r.t.skip(SkipGone, 1)
			continue
		}
		it := got[j]
		j++
		switch {
		case it.tooLarge:
			r.t.skip(SkipTooLarge, 1)
		case it.cas != e.CAS:
			r.t.skip(SkipChanged, 1)
		default:
			found = append(found, it)
			exps = append(exps, e.Exp)
		}
	}
	if r.c.afterGets != nil {
		r.c.afterGets(itemKeys(found))
	}
	if len(found) == 0 {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	now := clk.Now()
	left := cachenodes.FillWithin - now.Sub(start)
	switch {
	case left <= 0:
		r.t.skip(SkipLate, int64(len(found)))
		return nil
	case !r.c.leading(now):
		r.t.skip(SkipNotLeader, int64(len(found)))
		return nil
	}
	srcNow := r.sourceNow(now)
	reqs := make([]storeReq, 0, len(found))
	sent := make([]pending, 0, len(found))
	for i, it := range found {
		exp, ok := copyExpiry(exps[i], srcNow, r.c.opts.WarmTTL)
		if !ok {
			r.t.skip(SkipExpiring, 1)
			continue
		}
		reqs = append(reqs, storeReq{key: it.key, flags: it.flags, exp: exp, value: it.value})
		sent = append(sent, pending{key: it.key, cas: it.cas, size: it.size})
	}
	if len(reqs) == 0 {
		return nil
	}
	dst, err := r.target(ctx)
	if err != nil {
		return r.dstErr("connecting to", err) // nothing sent
	}
	outs, addErr := dst.store("add", reqs, left)
	var added []pending
	var unsure []string // sent, but unanswered: B may hold them
	for i, o := range outs {
		switch o {
		case stored:
			added = append(added, sent[i])
		case notStored:
			r.t.skip(SkipPresent, 1)
		case refused:
			r.t.skip(SkipRefused, 1)
		default:
			unsure = append(unsure, sent[i].key)
		}
	}
	if addErr != nil {
		r.dropTarget()
		return errors.Join(r.dstErr("adding keys to", addErr), r.undo(ctx, append(pendingKeys(added), unsure...)))
	}
	if r.c.afterAdd != nil {
		r.c.afterAdd(pendingKeys(added))
	}
	if len(added) == 0 {
		return nil
	}

	// The second look: a key gone or changed at the source since the
	// first gets may have been deleted or set by a client whose
	// tombstone or value reached B before the add: the copy is undone.
	again, _, err := r.gets(pendingKeys(added))
	if err != nil {
		return errors.Join(r.srcErr("checking keys at", err), r.undo(ctx, pendingKeys(added)))
	}
	var stale []string
	var copied, bytes int64
	for i, j := 0, 0; i < len(added); i++ {
		a := added[i]
		if j < len(again) && again[j].key == a.key {
			same := again[j].cas == a.cas
			j++
			if same {
				copied++
				bytes += int64(a.size)
				continue
			}
		}
		stale = append(stale, a.key)
	}
	r.t.add(cCopiedKeys, copied)
	r.t.add(cCopiedBytes, bytes)
	return r.undo(ctx, stale)
}

// undo sets the tombstone in B of each of keys, copies B may hold that
// the source no longer has or that could not be checked; ctx ending does
// not stop it. It tries twice, the second time on a new connection, and
// returns an *UnverifiedError naming the keys whose tombstone it could
// not set.
func (r *run) undo(ctx context.Context, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	left, err := r.c.setTombstones(context.WithoutCancel(ctx), r.target, r.dropTarget, keys)
	r.t.add(cUndone, int64(len(keys)-len(left)))
	if len(left) > 0 {
		return &UnverifiedError{Target: r.m.Target, Keys: left, Err: err}
	}
	return nil
}

// setTombstones sets the tombstones of keys through the connection open
// returns, twice at most (drop closes a failed one), and returns the keys
// still without one and why.
func (c *Copier) setTombstones(ctx context.Context, open func(context.Context) (node, error), drop func(), keys []string) ([]string, error) {
	var err error
	for attempt := 0; attempt < 2 && len(keys) > 0; attempt++ {
		var n node
		if n, err = open(ctx); err != nil {
			continue
		}
		reqs := make([]storeReq, len(keys))
		for i, k := range keys {
			t := cachenodes.TombstoneItem(k)
			reqs[i] = storeReq{key: t.Key, flags: t.Flags, exp: int64(t.Expiration), value: t.Value}
		}
		outs, serr := n.store("set", reqs, c.opts.Timeout)
		var left []string
		for i, o := range outs {
			if o != stored {
				left = append(left, keys[i])
			}
		}
		keys, err = left, serr
		if serr != nil {
			drop()
		} else if len(left) > 0 {
			err = fmt.Errorf("%w: %d tombstones not stored", ErrServer, len(left))
		}
	}
	return keys, err
}

// Tombstone sets in the memcached at addr the tombstone of each of keys
// (cachenodes.TombstoneItem), on a connection of its own: what a caller
// does again for the keys of an *UnverifiedError. It returns an
// *UnverifiedError naming the keys it could not set.
func (c *Copier) Tombstone(ctx context.Context, addr string, keys ...string) error {
	var n node
	defer func() {
		if n != nil {
			n.close()
		}
	}()
	open := func(ctx context.Context) (node, error) {
		if n == nil {
			var err error
			if n, err = c.open(ctx, addr); err != nil {
				return nil, err
			}
		}
		return n, nil
	}
	drop := func() {
		if n != nil {
			n.close()
			n = nil
		}
	}
	left, err := c.setTombstones(ctx, open, drop, keys)
	if len(left) > 0 {
		return &UnverifiedError{Target: addr, Keys: left, Err: err}
	}
	return nil
}

func itemKeys(its []item) []string {
	out := make([]string, len(its))
	for i, it := range its {
		out[i] = it.key
	}
	return out
}

func pendingKeys(ps []pending) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.key
	}
	return out
}
