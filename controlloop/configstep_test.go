package controlloop

import (
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcrib/mcrib/clock"
)

// TestConfigGenerations checks that each config file asked for reports the
// generation it is in step with: a map that changes only its spares keeps
// the file in step without a write, a failed write leaves it behind.
func TestConfigGenerations(t *testing.T) {
	dir := t.TempDir()
	nutDir := filepath.Join(dir, "nutcracker")
	if err := os.Mkdir(nutDir, 0o755); err != nil {
		t.Fatal(err)
	}
	l := &Loop{opts: Options{
		MCRouterConfig: filepath.Join(dir, "mcrouter.json"), TwemproxyConfig: filepath.Join(nutDir, "pool.yml"),
		Clock: clock.NewFake(time.Unix(0, 0)), Logger: slog.New(slog.DiscardHandler), Metrics: nopMetrics{},
	}}
	if got := l.ConfigGenerations(); len(got) != 0 {
		t.Fatalf("before any pass: %v, want none", got)
	}
	steps := []struct {
		name    string
		gen     uint64
		slots   []string
		prepare func()
		want    map[string]uint64
	}{
		{"first map", 1, []string{"a", "b"}, nil, map[string]uint64{ConfigMcrouter: 1, ConfigTwemproxy: 1}},
		{"only the spares changed", 2, []string{"a", "b"}, nil, map[string]uint64{ConfigMcrouter: 2, ConfigTwemproxy: 2}},
		{"the twemproxy write fails", 3, []string{"a", "c"}, func() { os.RemoveAll(nutDir) },
			map[string]uint64{ConfigMcrouter: 3, ConfigTwemproxy: 2}},
	}
	for _, s := range steps {
		if s.prepare != nil {
			s.prepare()
		}
		m := slotMapOf(t, s.gen, s.slots, nil)
		l.serveMap(m)
		if got := l.ConfigGenerations(); !maps.Equal(got, s.want) {
			t.Errorf("%s: %v, want %v", s.name, got, s.want)
		}
	}
}
