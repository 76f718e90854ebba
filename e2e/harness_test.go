package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/mcribapi"
)

// mcribBuild is the mcrib binary of this test run, built in dir by the
// first test that asks for it (mcribBinary).
var mcribBuild struct {
	dir  string
	once sync.Once
	path string
	err  error
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcrib-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mcribBuild.dir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// mcribBinary returns the mcrib binary, built once per test run (with
// -race when this test binary has it) by the first test that needs it. It
// skips the test under -short, which builds nothing.
func mcribBinary(t testing.TB) string {
	t.Helper()
	testenv.SkipShort(t, "the mcrib binary")
	mcribBuild.once.Do(func() {
		path := filepath.Join(mcribBuild.dir, "mcrib")
		args := []string{"build", "-o", path}
		if raceEnabled {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, "github.com/mcrib/mcrib/cmd/mcrib")...).CombinedOutput()
		if err != nil {
			mcribBuild.err = fmt.Errorf("building mcrib: %w\n%s", err, out)
			return
		}
		mcribBuild.path = path
	})
	if mcribBuild.err != nil {
		t.Fatal(mcribBuild.err)
	}
	return mcribBuild.path
}

// mcrib is one `mcrib serve` process.
type mcrib struct {
	t    testing.TB
	args []string
	env  []string
	Addr string // API address, host:port
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
	code int
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startMcrib starts `mcrib serve` against consul with a free listen port
// and the given extra flags, and waits until /healthz answers.
func startMcrib(t testing.TB, consulAddr string, flags ...string) *mcrib {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	m := &mcrib{t: t, Addr: addr, log: &syncBuffer{}}
	m.args = append([]string{"serve", "--consul", consulAddr, "--listen", addr}, flags...)
	m.start()
	t.Cleanup(func() {
		m.kill()
		if t.Failed() {
			t.Logf("mcrib %s log:\n%s", m.Addr, tail(m.log.String(), 60))
		}
	})
	return m
}

func (m *mcrib) start() {
	m.t.Helper()
	m.cmd = exec.Command(mcribBinary(m.t), m.args...)
	m.cmd.Env = append(os.Environ(), m.env...)
	m.cmd.Stdout, m.cmd.Stderr = m.log, m.log
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	m.done = make(chan struct{})
	started := make(chan error, 1)
	go func(cmd *exec.Cmd, done chan struct{}) {
		// Pdeathsig fires when the OS thread that forked the child ends, not
		// the process: other goroutines lock threads and let them end (the
		// test bed's namespace switches, testenv's own children), and one of
		// them could be this thread. So the child is forked on a thread kept
		// for it until it is reaped (never unlocked: it ends afterwards).
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			close(done)
			return
		}
		started <- nil
		cmd.Wait()
		m.code = cmd.ProcessState.ExitCode()
		close(done)
	}(m.cmd, m.done)
	if err := <-started; err != nil {
		m.t.Fatalf("starting mcrib: %v", err)
	}
	testenv.Eventually(m.t, 20*time.Second, "mcrib answers /healthz", func() bool {
		select {
		case <-m.done:
			m.t.Fatalf("mcrib exited with %d:\n%s", m.code, m.log.String())
		default:
		}
		resp, err := http.Get("http://" + m.Addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// stop sends SIGTERM and returns the exit code and how long the stop took.
func (m *mcrib) stop() (int, time.Duration) {
	m.t.Helper()
	start := time.Now()
	m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(15 * time.Second):
		m.t.Fatalf("mcrib did not stop within 15 s of SIGTERM")
	}
	return m.code, time.Since(start)
}

// kill sends SIGKILL (if still running) and waits.
func (m *mcrib) kill() {
	if m.cmd == nil || m.cmd.Process == nil {
		return
	}
	select {
	case <-m.done:
		return
	default:
	}
	m.cmd.Process.Signal(syscall.SIGKILL)
	<-m.done
}

// restart stops the process with SIGTERM and starts it again.
func (m *mcrib) restart() {
	m.t.Helper()
	if code, _ := m.stop(); code != 0 {
		m.t.Fatalf("mcrib exited with %d on SIGTERM", code)
	}
	m.start()
}

func (m *mcrib) url(path string) string { return "http://" + m.Addr + path }

// getJSON GETs path into v and returns the status code.
func (m *mcrib) getJSON(path string, v any) int {
	m.t.Helper()
	resp, err := http.Get(m.url(path))
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if v != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, v); err != nil {
			m.t.Fatalf("decoding %s: %v\n%s", path, err, body)
		}
	}
	return resp.StatusCode
}

// call sends method path with body and the optional token; it returns the
// status and the body.
func (m *mcrib) call(method, path, body, token string) (int, []byte, http.Header) {
	m.t.Helper()
	req, err := http.NewRequest(method, m.url(path), strings.NewReader(body))
	if err != nil {
		m.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		m.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header
}

// slotMap returns the slot map the API serves, or nil.
func (m *mcrib) slotMap() *cachenodes.SlotMap {
	m.t.Helper()
	resp, err := http.Get(m.url("/v1/slotmap"))
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil
	}
	body, _ := io.ReadAll(resp.Body)
	sm, err := cachenodes.ParseSlotMap(body)
	if err != nil {
		m.t.Fatalf("parsing /v1/slotmap: %v\n%s", err, body)
	}
	return sm
}

func (m *mcrib) status() mcribapi.Status {
	m.t.Helper()
	var st mcribapi.Status
	if code := m.getJSON("/v1/status", &st); code != http.StatusOK {
		m.t.Fatalf("GET /v1/status: %d", code)
	}
	return st
}

func (m *mcrib) ready() int {
	resp, err := http.Get(m.url("/readyz"))
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// kvSlotMap reads the slot map stored in Consul KV, or nil.
func kvSlotMap(t testing.TB, c *api.Client, pool string) *cachenodes.SlotMap {
	t.Helper()
	p, _, err := c.KV().Get("mcrib/"+pool+"/slotmap", nil)
	if err != nil || p == nil {
		return nil
	}
	sm, err := cachenodes.ParseSlotMap(p.Value)
	if err != nil {
		t.Fatalf("parsing the stored slot map: %v", err)
	}
	return sm
}

// stats reads memcached stats directly.
func stats(t testing.TB, addr string) (cachenodes.Stats, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return cachenodes.NewProber(cachenodes.ProberOptions{Timeout: 2 * time.Second}).Stats(ctx, addr)
}

func mustStats(t testing.TB, addr string) cachenodes.Stats {
	t.Helper()
	st, err := stats(t, addr)
	if err != nil {
		t.Fatalf("stats of %s: %v", addr, err)
	}
	return st
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
