package mcclient

import (
	"errors"
	"sync"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mcrib/mcrib/cachenodes"
)

// GetMulti reads keys, each from the node of its slot, one request per
// node, the nodes in parallel. Keys of vacant slots, keys whose value is
// a tombstone, and keys of nodes whose queued deletes cannot be replayed
// first, are misses: they are absent from the map. While a slot warms and
// the map is fresh, the keys its node answered as misses (not those it
// answered with a tombstone) are read again from the slot's old holder,
// one request per old holder, and each hit is copied into the node as Get
// does. The map holds every hit even when some node fails; the error is
// then the failures joined. It is non-nil when the error is nil.
func (c *Client) GetMulti(keys []string) (map[string]*memcache.Item, error) {
	r := c.route.Load()
	if r == nil {
		return nil, ErrNoSlotMap
	}
	byNode := map[*node][]string{}
	for _, k := range keys {
		if n := r.slots[slotOf(k, len(r.slots))]; n != nil {
			byNode[n] = append(byNode[n], k)
		}
	}
	var (
		mu     sync.Mutex
		out    = make(map[string]*memcache.Item, len(keys))
		errs   []error
		missed []string // keys of warming slots their node answered as misses
		wg     sync.WaitGroup
	)
	for n, ks := range byNode {
		wg.Go(func() {
			if !n.ready() {
				return
			}
			var marks []guardMark // by key of ks, while a slot warms
			if r.warm != nil {
				marks = make([]guardMark, len(ks))
				for j, k := range ks {
					marks[j] = c.markFills(r.warm[slotOf(k, len(r.slots))], k)
				}
			}
			items, err := n.be.GetMulti(ks)
			mu.Lock()
			defer mu.Unlock()
			for k, it := range items {
				if !cachenodes.IsTombstone(it) {
					out[k] = it
				}
			}
			if err != nil {
				errs = append(errs, err)
				return
			}
			if r.warm == nil {
				return
			}
			for j, k := range ks {
				switch it := items[k]; {
				case r.warm[slotOf(k, len(r.slots))] == nil, cachenodes.IsTombstone(it):
				case it == nil:
					missed = append(missed, k)
				case c.suspectHit(marks[j]):
					delete(out, k) // read through the old holder, as Get does
					missed = append(missed, k)
				}
			}
		})
	}
	wg.Wait()
	if len(missed) > 0 {
		c.warmGetMulti(r, missed, out)
	}
	return out, errors.Join(errs...)
}

// warmGetMulti reads keys, misses of their slots' nodes, from the slots'
// warm sources the client reads now, one request per source in parallel,
// and adds to out every hit that fill lets through. Keys with a write
// under way in this client are not read (see warmGet).
func (c *Client) warmGetMulti(r *routing, keys []string, out map[string]*memcache.Item) {
	type group struct {
		n     *node
		keys  []string
		marks map[string]guardMark
	}
	now := c.sh.clock.Now()
	bySource := map[*warmSource]*group{}
	for _, k := range keys {
		i := slotOf(k, len(r.slots))
		if w := r.warm[i]; c.readsSource(r, w, now) {
			g := bySource[w]
			if g == nil {
				g = &group{n: r.slots[i], marks: map[string]guardMark{}}
				bySource[w] = g
			}
			g.keys = append(g.keys, k)
		}
	}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for w, g := range bySource {
		wg.Go(func() {
			if !w.n.ready() {
				return
			}
			ks := g.keys
			if c.durable {
				ks = ks[:0:0]
				for _, k := range g.keys {
					if m := w.st.guard.markWrites(k); m.quiet {
						g.marks[k] = m
						ks = append(ks, k)
					}
				}
				if len(ks) == 0 {
					return
				}
			}
			readAt := c.sh.clock.Now()
			items, err := w.n.be.GetMulti(ks)
			if Unreachable(err) {
				w.st.off.Store(true)
			}
			for _, it := range items {
				if !cachenodes.IsTombstone(it) && c.fill(r, g.n, w, it, g.marks[it.Key], readAt) {
					mu.Lock()
					out[it.Key] = it
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
}
