package controlloop

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/clock"
)

// configCall is one Metrics.ConfigWrite call.
type configCall struct {
	kind   string
	at     time.Time
	failed bool
}

// configMetrics records the ConfigWrite calls; the other events are
// dropped.
type configMetrics struct {
	nopMetrics
	mu    sync.Mutex
	calls []configCall
}

func (m *configMetrics) ConfigWrite(kind string, at time.Time, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, configCall{kind: kind, at: at, failed: err != nil})
}

// take returns the calls recorded since the last take.
func (m *configMetrics) take() []configCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.calls
	m.calls = nil
	return c
}

// TestLoopWritesConfigsWhenTheyChange drives the loop's config outputs as
// a pass does (the mcrouter config, then publish): each file is written
// when its content changes and only then, a failed write is counted and
// tried again on the next pass, and every write reports its time.
func TestLoopWritesConfigsWhenTheyChange(t *testing.T) {
	dir := t.TempDir()
	nutDir := filepath.Join(dir, "nutcracker")
	if err := os.Mkdir(nutDir, 0o755); err != nil {
		t.Fatal(err)
	}
	routerPath, nutPath := filepath.Join(dir, "mcrouter.json"), filepath.Join(nutDir, "pool.yml")
	start := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
	clk := clock.NewFake(start)
	rec := &configMetrics{}
	l := &Loop{opts: Options{
		MCRouterConfig: routerPath, TwemproxyConfig: nutPath, TwemproxyListen: "127.0.0.1:22199",
		Clock: clk, Logger: slog.New(slog.DiscardHandler), Metrics: rec,
	}}
	first := poolMap(t, "default", "10.0.0.1:11211", "", "10.0.0.3:11211", "10.0.0.4:11211")
	moved := poolMap(t, "default", "10.0.0.1:11211", "10.0.0.9:11211", "10.0.0.3:11211", "10.0.0.4:11211")

	steps := []struct {
		name    string
		m       *cachenodes.SlotMap
		prepare func(t *testing.T)
		want    []configCall // at is filled in with the step's time
		wantNut *cachenodes.SlotMap
	}{
		{name: "first pass writes both", m: first,
			want: []configCall{{kind: ConfigMcrouter}, {kind: ConfigTwemproxy}}, wantNut: first},
		{name: "the same content again writes nothing", m: poolMap(t, "default", "10.0.0.1:11211", "", "10.0.0.3:11211", "10.0.0.4:11211"),
			wantNut: first},
		{name: "a failed write is counted", m: moved,
			prepare: func(t *testing.T) {
				if err := os.RemoveAll(nutDir); err != nil {
					t.Fatal(err)
				}
			},
			want: []configCall{{kind: ConfigMcrouter}, {kind: ConfigTwemproxy, failed: true}}},
		{name: "and tried again on the next pass", m: moved,
			want: []configCall{{kind: ConfigTwemproxy, failed: true}}},
		{name: "until it succeeds", m: moved,
			prepare: func(t *testing.T) {
				if err := os.Mkdir(nutDir, 0o755); err != nil {
					t.Fatal(err)
				}
			},
			want: []configCall{{kind: ConfigTwemproxy}}, wantNut: moved},
		{name: "then nothing more", m: moved, wantNut: moved},
	}
	for _, s := range steps {
		clk.Advance(time.Second)
		if s.prepare != nil {
			s.prepare(t)
		}
		l.serveMap(s.m)
		got := rec.take()
		want := slices.Clone(s.want)
		for i := range want {
			want[i].at = clk.Now()
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: ConfigWrite calls %+v, want %+v", s.name, got, want)
		}
		if s.wantNut != nil {
			checkFile(t, s.name, nutPath, func() ([]byte, error) { return TwemproxyConfig(s.wantNut, "127.0.0.1:22199") })
		}
		checkFile(t, s.name, routerPath, func() ([]byte, error) { return MCRouterConfig(s.m, 0) })
	}
}

// checkFile fails the test unless path holds what render returns.
func checkFile(t *testing.T, step, path string, render func() ([]byte, error)) {
	t.Helper()
	want, err := render()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	if string(got) != string(want) {
		t.Errorf("%s: %s holds\n%s\nwant\n%s", step, filepath.Base(path), got, want)
	}
}

// TestLoopWritesNoConfigUnasked checks that without paths nothing is
// written or counted.
func TestLoopWritesNoConfigUnasked(t *testing.T) {
	rec := &configMetrics{}
	l := &Loop{opts: Options{Clock: clock.NewFake(time.Unix(0, 0)), Logger: slog.New(slog.DiscardHandler), Metrics: rec}}
	m := poolMap(t, "default", "10.0.0.1:11211")
	l.serveMap(m)
	l.serveMap(nil)
	if calls := rec.take(); len(calls) != 0 {
		t.Errorf("ConfigWrite calls %+v without any config asked for", calls)
	}
}
