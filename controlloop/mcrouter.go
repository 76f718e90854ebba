package controlloop

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcrib/mcrib/cachenodes"
)

// VacantServer is the address written for a vacant slot in the mcrouter
// config: nothing listens there, so a key of a vacant slot fails fast and
// misses, and no other node's keys move.
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

// WriteFileAtomic writes data to path through a temporary file in the same
// directory and a rename, so a reader sees the old file or the new one.
func WriteFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// writeRouterConfig keeps the mcrouter config in step with m, when one is
// configured; it writes only when the servers changed.
func (l *Loop) writeRouterConfig(m *cachenodes.SlotMap) {
	if l.opts.MCRouterConfig == "" || m == nil {
		return
	}
	l.mu.Lock()
	last := l.routerWritten
	l.mu.Unlock()
	if last != nil && last.Pool() == m.Pool() && sameServers(last, m) {
		return
	}
	data, err := MCRouterConfig(m)
	if err == nil {
		err = WriteFileAtomic(l.opts.MCRouterConfig, data)
	}
	if err != nil {
		l.opts.Logger.Error("writing the mcrouter config failed", "path", l.opts.MCRouterConfig, "err", err)
		return
	}
	l.mu.Lock()
	l.routerWritten = m
	l.mu.Unlock()
}

func sameServers(a, b *cachenodes.SlotMap) bool {
	if a.NumSlots() != b.NumSlots() {
		return false
	}
	for i := range a.NumSlots() {
		if a.Slot(i).Addr != b.Slot(i).Addr {
			return false
		}
	}
	return true
}
