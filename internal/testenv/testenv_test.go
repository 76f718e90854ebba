package testenv

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
)

// fakeTB records Fatalf and Skipf instead of stopping the test, so the
// failure paths of the helpers can be checked.
type fakeTB struct {
	testing.TB
	fatals []string
	skips  []string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.fatals = append(f.fatals, fmt.Sprintf(format, args...))
}

func (f *fakeTB) Skipf(format string, args ...any) {
	f.skips = append(f.skips, fmt.Sprintf(format, args...))
}

func TestEventually(t *testing.T) {
	tests := []struct {
		name      string
		trueAfter int // cond returns true from this call on; 0 never
		wantFatal bool
	}{
		{name: "at once", trueAfter: 1},
		{name: "after a few polls", trueAfter: 4},
		{name: "never", trueAfter: 0, wantFatal: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := &fakeTB{TB: t}
			calls := 0
			Eventually(ft, 200*time.Millisecond, "the thing", func() bool {
				calls++
				return tt.trueAfter > 0 && calls >= tt.trueAfter
			})
			if got := len(ft.fatals) > 0; got != tt.wantFatal {
				t.Fatalf("fatal = %v (%q), want %v", got, ft.fatals, tt.wantFatal)
			}
			if tt.wantFatal && !strings.Contains(ft.fatals[0], "the thing") {
				t.Errorf("fatal message %q does not name what was awaited", ft.fatals[0])
			}
			if tt.trueAfter > 0 && calls != tt.trueAfter {
				t.Errorf("cond called %d times, want %d", calls, tt.trueAfter)
			}
		})
	}
}

// setShort sets go test's -short flag to short for the rest of the test.
func setShort(t *testing.T, short bool) {
	t.Helper()
	was := testing.Short()
	if err := flag.Set("test.short", strconv.FormatBool(short)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = flag.Set("test.short", strconv.FormatBool(was)) })
}

func TestMissingBinary(t *testing.T) {
	consul := func(tb testing.TB) { ConsulBinary(tb) }
	tool := func(tb testing.TB) { LookPath(tb, "no-such-program-of-mcrib", "nowhere") }
	tests := []struct {
		name      string
		call      func(testing.TB)
		ci        string
		short     bool
		wantFatal bool
		wantSkip  string // in the first skip's message
	}{
		{name: "locally skips", call: consul, wantSkip: "not found"},
		{name: "in CI fails", call: consul, ci: "true", wantFatal: true},
		{name: "-short skips before looking, in CI too", call: consul, ci: "true", short: true, wantSkip: "-short"},
		{name: "a missing tool skips locally", call: tool, wantSkip: "not found"},
		{name: "a missing tool fails in CI", call: tool, ci: "true", wantFatal: true},
		{name: "a missing tool skips in CI under -short", call: tool, ci: "true", short: true, wantSkip: "not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("CI", tt.ci)
			t.Setenv("MCRIB_CONSUL_BIN", filepath.Join(t.TempDir(), "no-such-consul"))
			setShort(t, tt.short)
			ft := &fakeTB{TB: t}
			tt.call(ft)
			if got := len(ft.fatals) == 1 && len(ft.skips) == 0; got != tt.wantFatal {
				t.Errorf("fatals %q, skips %q; want fatal = %v", ft.fatals, ft.skips, tt.wantFatal)
			}
			if !tt.wantFatal && (len(ft.fatals) != 0 || len(ft.skips) == 0 || !strings.Contains(ft.skips[0], tt.wantSkip)) {
				t.Errorf("fatals %q, skips %q; want a skip first that says %q", ft.fatals, ft.skips, tt.wantSkip)
			}
		})
	}
}

func TestRepoRoot(t *testing.T) {
	root := RepoRoot(t)
	if got := moduleOf(filepath.Join(root, "go.mod")); got != modulePath {
		t.Fatalf("RepoRoot() = %s whose go.mod declares %q, want %q", root, got, modulePath)
	}
}

func TestFreePort(t *testing.T) {
	port := FreePort(t)
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatalf("FreePort() = %d, but listening on it failed: %v", port, err)
	}
	l.Close()
}

// serviceStatus returns the aggregated health of service instance id as the
// server's health endpoint reports it, or "" when it is not listed.
func serviceStatus(t *testing.T, c *api.Client, id string) string {
	t.Helper()
	entries, _, err := c.Health().Service("memcached", "", false, nil)
	if err != nil {
		t.Logf("reading health: %v", err)
		return "error"
	}
	for _, e := range entries {
		if e.Service.ID == id {
			return e.Checks.AggregatedStatus()
		}
	}
	return ""
}

// stats sends `stats` to addr and reports whether the answer ends within
// timeout.
func stats(addr string, timeout time.Duration) error {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(timeout))
	if _, err := conn.Write([]byte("stats\r\n")); err != nil {
		return err
	}
	r := bufio.NewReader(conn)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		if line == "END\r\n" {
			return nil
		}
	}
}

func TestClientAgentLifecycle(t *testing.T) {
	start := time.Now()
	c := StartConsul(t)
	t.Logf("StartConsul took %v", time.Since(start))

	start = time.Now()
	a := c.StartClientAgent(t, "127.0.0.2")
	t.Logf("StartClientAgent took %v", time.Since(start))

	m := StartMemcached(t)
	reg := Registration{ID: "mc-1", Meta: map[string]string{"az": "a"}, Tags: []string{"cache"}}
	Register(t, a.Client, m, reg)
	Eventually(t, 10*time.Second, "mc-1 passing in the server's health endpoint", func() bool {
		return serviceStatus(t, c.Client, "mc-1") == api.HealthPassing
	})
	entries, _, err := c.Client.Health().Service("memcached", "", true, nil)
	if err != nil || len(entries) != 1 {
		t.Fatalf("health entries %v, err %v; want one", entries, err)
	}
	if s := entries[0].Service; s.Port != m.Port || s.Address != "127.0.0.1" || s.Meta["az"] != "a" || entries[0].Node.Node != a.NodeName {
		t.Errorf("registered service %+v on node %s, want port %d, address 127.0.0.1, az a, node %s",
			s, entries[0].Node.Node, m.Port, a.NodeName)
	}

	start = time.Now()
	a.Stop(t)
	t.Logf("agent Stop (graceful leave) took %v", time.Since(start))
	// Stop returns once the node has left the catalog.
	if got := serviceStatus(t, c.Client, "mc-1"); got != "" {
		t.Fatalf("mc-1 status right after the agent stopped = %q, want it gone", got)
	}

	start = time.Now()
	a.Start(t)
	t.Logf("agent restart took %v", time.Since(start))
	// Consul 1.13 restores services registered through the agent API from
	// the data directory.
	Eventually(t, 10*time.Second, "mc-1 restored from the agent's data dir", func() bool {
		return serviceStatus(t, c.Client, "mc-1") == api.HealthPassing
	})
	t.Logf("mc-1 restored and passing %v after the restart began", time.Since(start))
	// Registering again is idempotent: still one instance, still passing.
	Register(t, a.Client, m, reg)
	entries, _, err = c.Client.Health().Service("memcached", "", false, nil)
	if err != nil || len(entries) != 1 || entries[0].Checks.AggregatedStatus() != api.HealthPassing {
		t.Fatalf("after registering again: entries %v, err %v; want one passing", entries, err)
	}

	// Kill (no leave): the server marks the node failed; services stay
	// listed but not passing.
	start = time.Now()
	a.Kill(t)
	Eventually(t, 30*time.Second, "mc-1 critical after the agent was killed", func() bool {
		return serviceStatus(t, c.Client, "mc-1") == api.HealthCritical
	})
	t.Logf("mc-1 critical %v after agent SIGKILL", time.Since(start))
	checks, _, err := c.Client.Health().Node(a.NodeName, nil)
	if err != nil {
		t.Fatalf("reading node health: %v", err)
	}
	for _, ch := range checks {
		if ch.CheckID == "serfHealth" && ch.Status != api.HealthCritical {
			t.Errorf("serfHealth of the killed agent's node = %s, want critical", ch.Status)
		}
	}
	a.Start(t)
	Eventually(t, 10*time.Second, "mc-1 passing after the killed agent restarted", func() bool {
		return serviceStatus(t, c.Client, "mc-1") == api.HealthPassing
	})
}

func TestMemcachedKillMakesCheckCritical(t *testing.T) {
	c := StartConsul(t)
	m := StartMemcached(t)
	Register(t, c.Client, m, Registration{ID: "mc-kill"})
	Eventually(t, 10*time.Second, "mc-kill passing", func() bool {
		return serviceStatus(t, c.Client, "mc-kill") == api.HealthPassing
	})

	start := time.Now()
	m.Kill(t)
	if err := memcachedVersion(m.Addr, 300*time.Millisecond); err == nil {
		t.Fatal("memcached still answers after Kill")
	}
	Eventually(t, 10*time.Second, "mc-kill critical after memcached was killed", func() bool {
		return serviceStatus(t, c.Client, "mc-kill") == api.HealthCritical
	})
	t.Logf("TCP check critical %v after Kill", time.Since(start))

	m.Start(t)
	Eventually(t, 10*time.Second, "mc-kill passing after memcached restarted", func() bool {
		return serviceStatus(t, c.Client, "mc-kill") == api.HealthPassing
	})
}

func TestMemcachedPauseResume(t *testing.T) {
	m := StartMemcached(t)
	if err := stats(m.Addr, 300*time.Millisecond); err != nil {
		t.Fatalf("stats before Pause: %v", err)
	}
	m.Pause(t)
	err := stats(m.Addr, 300*time.Millisecond)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("stats while paused: err = %v, want a timeout", err)
	}
	m.Resume(t)
	Eventually(t, 5*time.Second, "stats to answer after Resume", func() bool {
		return stats(m.Addr, 300*time.Millisecond) == nil
	})
}

func TestConsulRestart(t *testing.T) {
	c := StartConsul(t)
	a := c.StartClientAgent(t, "127.0.0.4")
	m := StartMemcached(t)
	Register(t, a.Client, m, Registration{ID: "mc-r"})
	Eventually(t, 10*time.Second, "mc-r passing", func() bool {
		return serviceStatus(t, c.Client, "mc-r") == api.HealthPassing
	})
	if _, err := c.Client.KV().Put(&api.KVPair{Key: "k", Value: []byte("v")}, nil); err != nil {
		t.Fatalf("put: %v", err)
	}
	addr := c.HTTPAddr
	c.Stop(t)
	if _, _, err := c.Client.KV().Get("k", nil); err == nil {
		t.Fatal("KV get succeeded while the server is stopped")
	}
	start := time.Now()
	c.Start(t)
	t.Logf("Consul restart (with one client agent) took %v", time.Since(start))
	if c.HTTPAddr != addr {
		t.Errorf("HTTPAddr changed from %s to %s", addr, c.HTTPAddr)
	}
	keys, _, err := c.Client.KV().Keys("", "", nil)
	if err != nil || len(keys) != 0 {
		t.Errorf("KV keys after restart = %v, %v; want none (dev server, and no key left by testenv)", keys, err)
	}
	// Start waits until the agent's services are back in the catalog.
	if got := serviceStatus(t, c.Client, "mc-r"); got != api.HealthPassing {
		t.Errorf("mc-r status right after the server restart = %q, want passing", got)
	}
}

// TestNoProcessLeftBehind checks that the cleanups reap every process: it
// runs a subtest that starts everything, then checks the PIDs are gone.
func TestNoProcessLeftBehind(t *testing.T) {
	SkipShort(t, "Consul and memcached")
	var pids []int
	t.Run("start", func(t *testing.T) {
		c := StartConsul(t)
		a := c.StartClientAgent(t, "127.0.0.3")
		m := StartMemcached(t)
		paused := StartMemcached(t)
		paused.Pause(t)
		pids = []int{c.PID(), a.PID(), m.PID(), paused.PID()}
	})
	for _, pid := range pids {
		if pid == 0 {
			t.Fatalf("a process was not running: pids %v", pids)
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			t.Errorf("process %d still exists after the subtest's cleanup", pid)
		}
	}
}
