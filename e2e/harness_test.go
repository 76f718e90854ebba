package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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

// mcrib is one `mcrib serve` of a test, on loopback or on a host of a bed:
// its process, started through testenv as every process of these tests
// (Stop, Kill, Pause, Resume, Start, Output and the rest of
// testenv.Process), and api, the client of its API that never fails the
// test by itself. The methods below fail the test when the replica does
// not answer as it must: for tests whose replica is up.
type mcrib struct {
	*testenv.Mcrib
	t   testing.TB
	api *apiClient
}

// startMcrib starts `mcrib serve` against consul with a free listen port
// and the given extra flags, and waits until /healthz answers.
func startMcrib(t testing.TB, consulAddr string, flags ...string) *mcrib {
	t.Helper()
	return startMcribEnv(t, consulAddr, nil, flags...)
}

// startMcribEnv starts `mcrib serve` like startMcrib with env added to the
// environment.
func startMcribEnv(t testing.TB, consulAddr string, env []string, flags ...string) *mcrib {
	t.Helper()
	p := testenv.StartMcrib(t, testenv.McribOptions{ProgramOptions: testenv.ProgramOptions{
		Path: mcribBinary(t), Args: append([]string{"--consul", consulAddr}, flags...), Env: env}})
	return &mcrib{Mcrib: p, t: t, api: newAPIClient(p.Addr, 0)}
}

// stop sends SIGTERM and returns the exit code and how long the stop took;
// mcrib still running 15 s later fails the test.
func (m *mcrib) stop() (int, time.Duration) {
	m.t.Helper()
	start := time.Now()
	code := m.Stop(m.t)
	return code, time.Since(start)
}

// restart stops the process with SIGTERM, which must end it with exit 0,
// and starts it again.
func (m *mcrib) restart() {
	m.t.Helper()
	if code, _ := m.stop(); code != 0 {
		m.t.Fatalf("mcrib exited with %d on SIGTERM", code)
	}
	m.Start(m.t)
}

// call sends method path with body and the optional token; it returns the
// status, the body and the headers. No answer fails the test.
func (m *mcrib) call(method, path, body, token string) (int, []byte, http.Header) {
	m.t.Helper()
	an := m.api.send(method, path, body, token)
	if an.code == 0 {
		m.t.Fatalf("%s %s: %v", method, path, an.err)
	}
	return an.code, an.body, an.header
}

// slotMap returns the slot map the API serves, or nil when it answers
// anything but 200; a document that does not parse fails the test.
func (m *mcrib) slotMap() *cachenodes.SlotMap {
	m.t.Helper()
	an := m.api.send("GET", "/v1/slotmap", "", "")
	if an.code != http.StatusOK {
		return nil
	}
	sm, err := cachenodes.ParseSlotMap(an.body)
	if err != nil {
		m.t.Fatalf("parsing /v1/slotmap: %v\n%s", err, an.body)
	}
	return sm
}

// status returns the status document; anything but a 200 with one fails
// the test.
func (m *mcrib) status() mcribapi.Status {
	m.t.Helper()
	st, err := m.api.status()
	if err != nil {
		m.t.Fatal(err)
	}
	return st
}

// bootLimit returns the boot-limit document; anything but a 200 with one
// fails the test.
func (m *mcrib) bootLimit() mcribapi.BootLimit {
	m.t.Helper()
	d, err := m.api.bootLimit()
	if err != nil {
		m.t.Fatal(err)
	}
	return d
}

// ready returns the status code of /readyz, 0 without an answer.
func (m *mcrib) ready() int { return m.api.ready() }

// runMcrib runs the mcrib binary with args and the extra environment env
// until it exits, and returns its exit code, stdout and stderr; it gives up
// after 30 s. It is for the commands that end by themselves (the client
// commands, serve refusing its flags): a server is started through testenv
// (startMcrib).
func runMcrib(t testing.TB, env []string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, mcribBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running mcrib %s: %v", strings.Join(args, " "), err)
	}
	return code, out.String(), errb.String()
}

// runCLI runs a client command of the mcrib binary against addr
// (host:port), with no token unless env (added last) sets MCRIB_TOKEN; see
// runMcrib.
func runCLI(t testing.TB, addr string, env []string, args ...string) (int, string, string) {
	t.Helper()
	return runMcrib(t, append([]string{"MCRIB_ADDR=http://" + addr, "MCRIB_TOKEN="}, env...), args...)
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
