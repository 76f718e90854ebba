package mcclient

import (
	"errors"
	"sync"

	"github.com/bradfitz/gomemcache/memcache"
)

// GetMulti reads keys, each from the node of its slot, one request per
// node, the nodes in parallel. Keys of vacant slots, and of nodes whose
// queued deletes cannot be replayed first, are misses: they are absent
// from the map. The map holds every hit even when some node fails; the
// error is then the failures joined. It is non-nil when the error is nil.
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
		mu   sync.Mutex
		out  = make(map[string]*memcache.Item, len(keys))
		errs []error
		wg   sync.WaitGroup
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
			}
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}
