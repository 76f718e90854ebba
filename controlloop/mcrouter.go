package controlloop

import (
	"encoding/json"

	"github.com/mcrib/mcrib/cachenodes"
)

// VacantServer is the address written for a vacant slot in the mcrouter
// and twemproxy configs: nothing listens there, so a key of a vacant slot
// fails fast and misses, and no other node's keys move.
const VacantServer = "127.0.0.1:1"

// MCRouterConfig returns the mcrouter JSON config for m: one pool named
// after the pool, one server per slot in slot order, routed with
// PoolRoute and the Crc32 hash, so mcrouter sends a key where
// cachenodes.KeySlot does.
func MCRouterConfig(m *cachenodes.SlotMap) ([]byte, error) {
	servers := make([]string, m.NumSlots())
	for i, n := range m.Slots() {
		servers[i] = n.Addr
		if n.IsZero() {
			servers[i] = VacantServer
		}
	}
	cfg := map[string]any{
		"pools": map[string]any{m.Pool(): map[string]any{"servers": servers}},
		"route": map[string]any{
			"type": "PoolRoute",
			"pool": m.Pool(),
			"hash": map[string]any{"hash_func": "Crc32"},
		},
	}
	return json.MarshalIndent(cfg, "", "  ")
}

// writeRouterConfig keeps the mcrouter config in step with m, when one is
// configured (see writeConfig).
func (l *Loop) writeRouterConfig(m *cachenodes.SlotMap) {
	l.writeConfig(ConfigMcrouter, l.opts.MCRouterConfig, m, MCRouterConfig)
}
