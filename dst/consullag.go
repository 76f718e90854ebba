package dst

import (
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"
)

// Consul's reads of default consistency may lag: an agent's read is served
// by a server that may be behind the leader (a follower that has not yet
// applied the last entries), so it returns an older index and older
// values. Reads that ask for consistency (?consistent, as leader.Held
// does) and every write go to the leader and never lag.

// kvHistoryKeep is how far back the KV store's past is kept for lagging
// reads: longer than the longest lag a fault draws.
const kvHistoryKeep = 6 * time.Second

// kvSnapshot is the KV store as it was from one instant on.
type kvSnapshot struct {
	at    time.Duration
	index uint64
	kv    map[string]kvEntry
}

// kvHistory is the KV store's recent past, one snapshot per Consul tick
// in which the raft index moved.
type kvHistory struct {
	snaps []kvSnapshot
	// lag is, per host, how far behind the server its agent reads from
	// is (0 or absent: current).
	lag map[string]time.Duration
	// wrote is, per host, the raft index after its last request that
	// may have changed the store: a read of default consistency is
	// served by the leader, which has applied it, so no lag hides a
	// host's own writes from it.
	wrote map[string]uint64
}

// noteWrite records that host's request (not a GET) was carried out.
func (c *consulSim) noteWrite(host string, req *http.Request) {
	if req.Method == http.MethodGet || len(c.history.lag) == 0 {
		return
	}
	if c.history.wrote == nil {
		c.history.wrote = map[string]uint64{}
	}
	c.history.wrote[host] = c.index
}

// recordKV keeps a snapshot of the KV store when it changed since the
// last, and forgets those no lag reaches.
func (c *consulSim) recordKV() {
	h := &c.history
	if len(h.lag) == 0 {
		h.snaps = h.snaps[:0]
		return
	}
	if n := len(h.snaps); n == 0 || h.snaps[n-1].index != c.index {
		kv := make(map[string]kvEntry, len(c.kv))
		for k, e := range c.kv {
			kv[k] = *e
		}
		h.snaps = append(h.snaps, kvSnapshot{at: c.w.now, index: c.index, kv: kv})
	}
	// Keep the last snapshot older than the window: it is the state at
	// the window's start.
	drop := 0
	for drop+1 < len(h.snaps) && h.snaps[drop+1].at <= c.w.now-kvHistoryKeep {
		drop++
	}
	h.snaps = h.snaps[drop:]
}

// laggedKV returns the snapshot that host's read req is served from, or
// nil when it reads the current state: a GET of /v1/kv/ of default
// consistency while host's agent reads from a server lag behind.
func (c *consulSim) laggedKV(host string, req *http.Request) *kvSnapshot {
	lag := c.history.lag[host]
	if lag <= 0 || req.Method != http.MethodGet || !strings.HasPrefix(req.URL.Path, "/v1/kv/") || req.URL.Query().Has("consistent") {
		return nil
	}
	var snap *kvSnapshot
	for i := range c.history.snaps {
		if s := &c.history.snaps[i]; s.at <= c.w.now-lag {
			snap = s
		}
	}
	if snap != nil && snap.index < c.history.wrote[host] {
		return nil // its own write since: read from the leader
	}
	return snap
}

// serveLagged answers a KV read from snap, as a lagging server would.
func (c *consulSim) serveLagged(snap *kvSnapshot, req *http.Request) (int, []byte) {
	key := strings.TrimPrefix(req.URL.Path, "/v1/kv/")
	if req.URL.Query().Has("recurse") {
		var out []*api.KVPair
		for _, k := range sortedKeys(snap.kv) {
			if strings.HasPrefix(k, key) {
				e := snap.kv[k]
				out = append(out, e.pair(k))
			}
		}
		if len(out) == 0 {
			return http.StatusNotFound, nil
		}
		return http.StatusOK, mustJSON(out)
	}
	e, ok := snap.kv[key]
	if !ok {
		return http.StatusNotFound, nil
	}
	return http.StatusOK, mustJSON([]*api.KVPair{e.pair(key)})
}

// consulLag makes the agents of hosts read from a server lag behind the
// leader for d: their reads of default consistency show the others'
// writes late, never their own.
func (w *world) consulLag(hosts []string, lag, d time.Duration) {
	h := &w.consul.history
	if h.lag == nil {
		h.lag = map[string]time.Duration{}
	}
	for _, name := range hosts {
		h.lag[name] = lag
	}
	w.consul.recordKV()
	w.after(d, "consul lag over", func() {
		for _, name := range hosts {
			if h.lag[name] == lag {
				delete(h.lag, name)
			}
		}
	})
}
