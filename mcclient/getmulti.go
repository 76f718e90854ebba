package mcclient

import (
	"errors"
	"sync"

	"github.com/bradfitz/gomemcache/memcache"
)

// GetMulti reads keys, each from the node of its slot, one request per
// node, the nodes in parallel. Keys of vacant slots, and of nodes whose
// queued deletes cannot be replayed first, are misses: they are absent
// from the map. While a slot warms, the keys its node answered as misses
// are read again from the slot's old holder, one request per old holder,
// and each hit is copied into the node as Get does. The map holds every
// hit even when some node fails; the error is then the failures joined.
// It is non-nil when the error is nil.
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
			items, err := n.be.GetMulti(ks)
			mu.Lock()
			defer mu.Unlock()
			for k, it := range items {
				out[k] = it
			}
			if err != nil {
				errs = append(errs, err)
				return
			}
			if r.warm != nil {
				for _, k := range ks {
					if items[k] == nil {
						missed = append(missed, k)
					}
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
// warm sources in use, one request per source in parallel, and adds to out
// every hit that fill lets through.
func (c *Client) warmGetMulti(r *routing, keys []string, out map[string]*memcache.Item) {
	type group struct {
		n    *node
		keys []string
	}
	bySource := map[*warmSource]*group{}
	for _, k := range keys {
		i := slotOf(k, len(r.slots))
		if w := c.activeWarm(r, i); w != nil {
			g := bySource[w]
			if g == nil {
				g = &group{n: r.slots[i]}
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
			items, err := w.n.be.GetMulti(g.keys)
			if Unreachable(err) {
				w.off.Store(true)
			}
			for _, it := range items {
				if c.fill(g.n, w, it) {
					mu.Lock()
					out[it.Key] = it
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
}
