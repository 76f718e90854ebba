package controlloop

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/clock"
)

// plainRouterConfig is the mcrouter config of poolMap(t, "default",
// "10.0.0.1:11211", "", "[::1]:11211") as mcrib has always written it.
const plainRouterConfig = `{
  "pools": {
    "default": {
      "servers": [
        "10.0.0.1:11211",
        "127.0.0.1:1",
        "[::1]:11211"
      ]
    }
  },
  "route": {
    "hash": {
      "hash_func": "Crc32"
    },
    "pool": "default",
    "type": "PoolRoute"
  }
}`

// warmingMap is poolMap(t, pool, addrs...) whose slot i warms from node
// "old-i" at warm[i] for a minute.
func warmingMap(t testing.TB, warm map[int]string, pool string, addrs ...string) *cachenodes.SlotMap {
	t.Helper()
	spec := poolMap(t, pool, addrs...).Spec()
	spec.Warming = make([]*cachenodes.Warming, len(addrs))
	until := time.Date(2026, 11, 29, 13, 2, 0, 0, time.UTC)
	for i, a := range warm {
		spec.Warming[i] = &cachenodes.Warming{NodeID: "old-" + a, Addr: a, Until: until}
	}
	m, err := cachenodes.NewSlotMap(spec)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// warmRouterConfig is the mcrouter config of warmingMap(t, {2:
// "10.0.1.2:11211"}, "default", "10.0.0.1:11211", "", "10.0.0.7:11211")
// with a warm TTL of 90s.
const warmRouterConfig = `{
  "pools": {
    "default": {
      "servers": [
        "10.0.0.1:11211",
        "127.0.0.1:1",
        "10.0.0.7:11211"
      ]
    },
    "default.warm": {
      "servers": [
        "10.0.0.1:11211",
        "127.0.0.1:1",
        "10.0.1.2:11211"
      ]
    }
  },
  "route": {
    "default_policy": {
      "hash": {
        "hash_func": "Crc32"
      },
      "pool": "default",
      "type": "PoolRoute"
    },
    "operation_policies": {
      "delete": {
        "children": [
          {
            "hash": {
              "hash_func": "Crc32"
            },
            "pool": "default",
            "type": "PoolRoute"
          },
          {
            "hash": {
              "hash_func": "Crc32"
            },
            "pool": "default.warm",
            "type": "PoolRoute"
          }
        ],
        "type": "AllSyncRoute"
      },
      "get": {
        "cold": {
          "hash": {
            "hash_func": "Crc32"
          },
          "pool": "default",
          "type": "PoolRoute"
        },
        "exptime": 90,
        "type": "WarmUpRoute",
        "warm": {
          "hash": {
            "hash_func": "Crc32"
          },
          "pool": "default.warm",
          "type": "PoolRoute"
        }
      },
      "set": {
        "children": [
          {
            "hash": {
              "hash_func": "Crc32"
            },
            "pool": "default",
            "type": "PoolRoute"
          },
          {
            "hash": {
              "hash_func": "Crc32"
            },
            "pool": "default.warm",
            "type": "PoolRoute"
          }
        ],
        "type": "AllSyncRoute"
      }
    },
    "type": "OperationSelectorRoute"
  }
}`

func TestMCRouterConfig(t *testing.T) {
	plain := poolMap(t, "default", "10.0.0.1:11211", "", "[::1]:11211")
	warming := warmingMap(t, map[int]string{2: "10.0.1.2:11211"}, "default", "10.0.0.1:11211", "", "10.0.0.7:11211")
	for _, tc := range []struct {
		name    string
		m       *cachenodes.SlotMap
		warmTTL time.Duration
		want    string
	}{
		{"nothing warms: the plain config, whatever the warm TTL", plain, 0, plainRouterConfig},
		{"nothing warms, a warm TTL", plain, 5 * time.Minute, plainRouterConfig},
		{"a slot warms: two pools, WarmUpRoute and AllSyncRoute", warming, 90 * time.Second, warmRouterConfig},
		{"its warming ended early (ended_at): the plain config", endedWarming(t, warming), 90 * time.Second, plainOf(t, warming)},
	} {
		got, err := MCRouterConfig(tc.m, tc.warmTTL)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if string(got) != tc.want {
			t.Errorf("%s: got\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
}

// endedWarming is m with every warming ended (ended_at) a minute before
// its until.
func endedWarming(t testing.TB, m *cachenodes.SlotMap) *cachenodes.SlotMap {
	t.Helper()
	spec := m.Spec()
	for _, w := range spec.Warming {
		if w != nil {
			w.EndedAt = w.Until.Add(-time.Minute)
		}
	}
	ended, err := cachenodes.NewSlotMap(spec)
	if err != nil {
		t.Fatal(err)
	}
	return ended
}

// plainOf is the mcrouter config of m without its warmings.
func plainOf(t testing.TB, m *cachenodes.SlotMap) string {
	t.Helper()
	spec := m.Spec()
	spec.Warming = nil
	plain, err := cachenodes.NewSlotMap(spec)
	if err != nil {
		t.Fatal(err)
	}
	b, err := MCRouterConfig(plain, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRouterExptime(t *testing.T) {
	for _, tc := range []struct {
		ttl  time.Duration
		want int64
	}{
		{0, 3600},
		{time.Hour, 3600},
		{1500 * time.Millisecond, 2},
		{time.Millisecond, 1},
		{60 * 24 * time.Hour, 30 * 24 * 3600},
	} {
		if got := routerExptime(tc.ttl); got != tc.want {
			t.Errorf("routerExptime(%v) = %d, want %d", tc.ttl, got, tc.want)
		}
	}
}

// TestLoopWritesTheWarmRouterConfigAndBack checks that the loop renders
// warming with Options.WarmTTL and writes the plain config again when the
// warming ends.
func TestLoopWritesTheWarmRouterConfigAndBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcrouter.json")
	l := &Loop{opts: Options{MCRouterConfig: path, WarmTTL: 90 * time.Second,
		Clock: clock.NewFake(time.Unix(0, 0)), Logger: slog.New(slog.DiscardHandler), Metrics: nopMetrics{}}}
	for _, step := range []struct {
		m    *cachenodes.SlotMap
		want string
	}{
		{poolMap(t, "default", "10.0.0.1:11211", "", "[::1]:11211"), plainRouterConfig},
		{warmingMap(t, map[int]string{2: "10.0.1.2:11211"}, "default", "10.0.0.1:11211", "", "10.0.0.7:11211"), warmRouterConfig},
		{poolMap(t, "default", "10.0.0.1:11211", "", "[::1]:11211"), plainRouterConfig},
	} {
		l.out.writeRouterConfig(l.opts, step.m)
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != step.want {
			t.Fatalf("wrote\n%s\nwant\n%s", got, step.want)
		}
	}
}
