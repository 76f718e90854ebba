package controlloop

import (
	"encoding/json"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
)

// VacantServer is the address written for a vacant slot in the mcrouter
// and twemproxy configs: nothing listens there, so a key of a vacant slot
// fails fast and misses, and no other node's keys move.
const VacantServer = "127.0.0.1:1"

// defaultWarmTTL is the WarmUpRoute exptime when no warm TTL is given: the
// default of --warm-ttl.
const defaultWarmTTL = time.Hour

// maxRouterExptime is the longest exptime written: memcached reads a larger
// one as a Unix time.
const maxRouterExptime = 30 * 24 * 3600

// MCRouterConfig returns the mcrouter JSON config for m: one pool named
// after the pool, one server per slot in slot order, routed with
// PoolRoute and the Crc32 hash, so mcrouter sends a key where
// cachenodes.KeySlot does.
//
// While some slot warms (docs/api.md, "Warm moves") it adds a second pool,
// "<pool>.warm", whose server of each slot is the slot's warm source, or
// its holder when the slot does not warm, and routes with an
// OperationSelectorRoute: gets through a WarmUpRoute (cold: the holders,
// warm: "<pool>.warm", exptime: warmTTL in seconds; zero means an hour),
// sets and deletes through an AllSyncRoute over both pools (WarmUpRoute
// alone sends them to the cold side only, so a deleted key could come back
// from the warm one), every other operation to the holders. When nothing
// warms it is the plain config above, so mcrouter goes back to it as soon
// as the last warming ends. A warming that ended early (ended_at set) is
// rendered as a slot that does not warm: mcrouter stops reading its old
// holder at once, and its writes go to the new holder only (an old holder
// that stopped answering or owes a flush must not be read; the 12 s the
// Go clients still write it for are theirs, docs/clients.md). An
// incoming node (an announce) changes nothing.
func MCRouterConfig(m *cachenodes.SlotMap, warmTTL time.Duration) ([]byte, error) {
	servers := routerServers(m, false)
	if !warmsAny(m) {
		cfg := map[string]any{
			"pools": map[string]any{m.Pool(): map[string]any{"servers": servers}},
			"route": poolRoute(m.Pool()),
		}
		return json.MarshalIndent(cfg, "", "  ")
	}
	warmPool := m.Pool() + ".warm"
	both := map[string]any{
		"type":     "AllSyncRoute",
		"children": []any{poolRoute(m.Pool()), poolRoute(warmPool)},
	}
	cfg := map[string]any{
		"pools": map[string]any{
			m.Pool(): map[string]any{"servers": servers},
			warmPool: map[string]any{"servers": routerServers(m, true)},
		},
		"route": map[string]any{
			"type":           "OperationSelectorRoute",
			"default_policy": poolRoute(m.Pool()),
			"operation_policies": map[string]any{
				"get": map[string]any{
					"type":    "WarmUpRoute",
					"cold":    poolRoute(m.Pool()),
					"warm":    poolRoute(warmPool),
					"exptime": routerExptime(warmTTL),
				},
				"set":    both,
				"delete": both,
			},
		},
	}
	return json.MarshalIndent(cfg, "", "  ")
}

// routerServers returns one address per slot in slot order: the holder's
// (VacantServer when vacant), or with warm the warm source's where the
// slot warms.
func routerServers(m *cachenodes.SlotMap, warm bool) []string {
	servers := make([]string, m.NumSlots())
	for i, n := range m.Slots() {
		servers[i] = n.Addr
		if n.IsZero() {
			servers[i] = VacantServer
		}
		if w := m.Warming(i); warm && w != nil && !w.Ended() {
			servers[i] = w.Addr
		}
	}
	return servers
}

// warmsAny reports whether some slot of m has a warming that has not
// ended early (no ended_at).
func warmsAny(m *cachenodes.SlotMap) bool {
	if !m.AnyWarming() {
		return false
	}
	for i := range m.NumSlots() {
		if w := m.Warming(i); w != nil && !w.Ended() {
			return true
		}
	}
	return false
}

// poolRoute is a PoolRoute to pool with the Crc32 hash (the short form
// "PoolRoute|<pool>" would hash with mcrouter's default, Ch3).
func poolRoute(pool string) map[string]any {
	return map[string]any{
		"type": "PoolRoute",
		"pool": pool,
		"hash": map[string]any{"hash_func": "Crc32"},
	}
}

// routerExptime returns warmTTL in whole seconds, rounded up, at least 1
// and at most 30 days; zero means defaultWarmTTL.
func routerExptime(warmTTL time.Duration) int64 {
	if warmTTL <= 0 {
		warmTTL = defaultWarmTTL
	}
	return min(max(int64((warmTTL+time.Second-1)/time.Second), 1), maxRouterExptime)
}

// writeRouterConfig keeps the mcrouter config of opts in step with m, when
// one is configured (see writeConfig).
func (o *outputs) writeRouterConfig(opts Options, m *cachenodes.SlotMap) {
	o.writeConfig(opts, ConfigMcrouter, opts.MCRouterConfig, m, func(m *cachenodes.SlotMap) ([]byte, error) {
		return MCRouterConfig(m, opts.WarmTTL)
	})
}
