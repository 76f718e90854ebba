package leader_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/leader"
)

// Environment of the helper process that TestKilledLeaderIsReplaced runs
// (this test binary re-executed) and kills with SIGKILL.
const (
	helperConsulEnv = "MCRIB_LEADER_HELPER_CONSUL"
	helperKeyEnv    = "MCRIB_LEADER_HELPER_KEY"
	helperIDEnv     = "MCRIB_LEADER_HELPER_ID"
)

func TestMain(m *testing.M) {
	if addr := os.Getenv(helperConsulEnv); addr != "" {
		os.Exit(helperMain(addr, os.Getenv(helperKeyEnv), os.Getenv(helperIDEnv)))
	}
	os.Exit(m.Run())
}

// helperMain runs one elector until it is killed, SIGTERM arrives or a
// minute passes (so that an orphan never lingers).
func helperMain(addr, key, id string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	client, err := api.NewClient(&api.Config{Address: addr, Scheme: "http"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	e, err := leader.New(leader.Options{Client: client, Key: key, ID: id})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	e.Run(ctx, func(ctx context.Context, session string) {
		fmt.Println("leading", session)
		<-ctx.Done()
	})
	return 0
}

// term records one call of lead.
type term struct {
	session string
	ctx     context.Context
	started time.Time
	ended   chan struct{} // closed when lead returned
}

// candidate runs one Elector in the background and records its terms.
type candidate struct {
	id     string
	e      *leader.Elector
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned

	mu    sync.Mutex
	terms []*term
}

// startCandidate starts Run for a new Elector on key; the test's cleanup
// stops it and checks that Run returned.
func startCandidate(t *testing.T, consul *testenv.Consul, key, id string) *candidate {
	t.Helper()
	e, err := leader.New(leader.Options{Client: consul.NewClient(t), Key: key, ID: id})
	if err != nil {
		t.Fatalf("leader.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &candidate{id: id, e: e, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		e.Run(ctx, func(ctx context.Context, session string) {
			tm := &term{session: session, ctx: ctx, started: time.Now(), ended: make(chan struct{})}
			c.mu.Lock()
			c.terms = append(c.terms, tm)
			c.mu.Unlock()
			defer close(tm.ended)
			<-ctx.Done()
		})
	}()
	t.Cleanup(func() { c.stop(t) })
	return c
}

// stop cancels Run and fails the test unless Run returns within 5 s. It
// returns how long Run took.
func (c *candidate) stop(t *testing.T) time.Duration {
	t.Helper()
	start := time.Now()
	c.cancel()
	select {
	case <-c.done:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: Run did not return within 5s of its context ending", c.id)
	}
	return time.Since(start)
}

// lastTerm returns the latest term, or nil.
func (c *candidate) lastTerm() *term {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.terms) == 0 {
		return nil
	}
	return c.terms[len(c.terms)-1]
}

// numTerms returns how many times lead was called.
func (c *candidate) numTerms() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.terms)
}

// leaderOf waits until exactly one of cs leads and all of them name it as
// leader, and returns it.
func leaderOf(t *testing.T, timeout time.Duration, cs ...*candidate) *candidate {
	t.Helper()
	var found *candidate
	testenv.Eventually(t, timeout, "exactly one leader known to all", func() bool {
		found = nil
		for _, c := range cs {
			if c.e.IsLeader() {
				if found != nil {
					return false
				}
				found = c
			}
		}
		if found == nil {
			return false
		}
		for _, c := range cs {
			if c.e.LeaderID() != found.id {
				return false
			}
		}
		return true
	})
	return found
}

// watchForTwoLeaders samples cs until the test ends and fails it if two of
// them ever believe they lead at the same moment.
func watchForTwoLeaders(t *testing.T, cs ...*candidate) {
	t.Helper()
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			n := 0
			for _, c := range cs {
				if c.e.IsLeader() {
					n++
				}
			}
			if n > 1 {
				t.Errorf("%d candidates lead at once", n)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { stop.Store(true); wg.Wait() })
}

// waitDone fails the test unless ch closes within timeout, and returns how
// long it took.
func waitDone(t *testing.T, ch <-chan struct{}, timeout time.Duration, what string) time.Duration {
	t.Helper()
	start := time.Now()
	select {
	case <-ch:
		return time.Since(start)
	case <-time.After(timeout):
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
		return 0
	}
}

// startConsul starts Consul for a test of electors; when the test ends,
// after its candidates stopped, it checks that none left a goroutine behind.
func startConsul(t *testing.T) *testenv.Consul {
	t.Helper()
	consul := testenv.StartConsul(t)
	t.Cleanup(func() { checkNoLeaks(t) })
	return consul
}

// theOther returns whichever of a and b is not c.
func theOther(c, a, b *candidate) *candidate {
	if c == a {
		return b
	}
	return a
}

// checkNoLeaks fails the test if goroutines of package leader are still
// running (after a grace period for ones that are just finishing).
func checkNoLeaks(t *testing.T) {
	t.Helper()
	var stacks string
	deadline := time.Now().Add(3 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		stacks = string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(stacks, "mcrib/mcrib/leader.") {
			return
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	var leaked []string
	for _, g := range strings.Split(stacks, "\n\n") {
		if strings.Contains(g, "mcrib/mcrib/leader.") {
			leaked = append(leaked, g)
		}
	}
	t.Errorf("goroutines of package leader still running:\n%s", strings.Join(leaked, "\n\n"))
}

// lockValue returns the lock key's value and session ("" when absent).
func lockValue(t *testing.T, client *api.Client, key string) (value, session string) {
	t.Helper()
	kv, _, err := client.KV().Get(key, nil)
	if err != nil {
		t.Fatalf("reading %s: %v", key, err)
	}
	if kv == nil {
		return "", ""
	}
	return string(kv.Value), kv.Session
}

func TestOneLeaderThenHandoverOnShutdown(t *testing.T) {
	consul := startConsul(t)
	const key = "mcrib/handover/leader"
	a := startCandidate(t, consul, key, "127.0.0.1:7001")
	b := startCandidate(t, consul, key, "127.0.0.1:7002")
	watchForTwoLeaders(t, a, b)

	first := leaderOf(t, 15*time.Second, a, b)
	other := theOther(first, a, b)
	if value, session := lockValue(t, consul.Client, key); value != first.id || session != first.e.Session() {
		t.Fatalf("lock key holds %q by session %q, want %q by %q", value, session, first.id, first.e.Session())
	}
	if other.e.Session() != "" || other.numTerms() != 0 {
		t.Fatalf("follower has session %q and %d terms", other.e.Session(), other.numTerms())
	}
	firstTerm := first.lastTerm()

	start := time.Now()
	first.cancel()
	testenv.Eventually(t, leader.DefaultLockDelay+3*time.Second, "the follower to take over", other.e.IsLeader)
	takeover := time.Since(start)
	waitDone(t, first.done, 5*time.Second, "the old leader's Run to return")
	stopped := time.Since(start)
	waitDone(t, firstTerm.ended, time.Second, "the old leader's lead to return")
	t.Logf("takeover after clean shutdown: %v; old leader's Run returned within %v", takeover, stopped)

	if first.e.IsLeader() || first.e.Session() != "" {
		t.Errorf("stopped elector still reports leading (session %q)", first.e.Session())
	}
	testenv.Eventually(t, 5*time.Second, "the new leader to be known", func() bool {
		value, session := lockValue(t, consul.Client, key)
		return value == other.id && session == other.e.Session() && other.e.LeaderID() == other.id
	})
	other.stop(t)
	// A clean shutdown leaves no sessions and no leader services behind.
	testenv.Eventually(t, 5*time.Second, "sessions and checks to be removed", func() bool {
		sessions, _, err := consul.Client.Session().List(nil)
		if err != nil || len(sessions) != 0 {
			return false
		}
		services, err := consul.Client.Agent().Services()
		if err != nil {
			return false
		}
		for _, s := range services {
			if s.Service == "mcrib-leader" {
				return false
			}
		}
		return true
	})
}

func TestStepDownHandsOver(t *testing.T) {
	consul := startConsul(t)
	const key = "mcrib/stepdown/leader"
	a := startCandidate(t, consul, key, "127.0.0.1:7001")
	b := startCandidate(t, consul, key, "127.0.0.1:7002")
	watchForTwoLeaders(t, a, b)

	first := leaderOf(t, 15*time.Second, a, b)
	other := theOther(first, a, b)
	firstTerm := first.lastTerm()
	start := time.Now()
	first.e.StepDown()
	waitDone(t, firstTerm.ctx.Done(), time.Second, "the lead context to be cancelled")
	if first.e.IsLeader() {
		t.Fatal("IsLeader true after the lead context was cancelled")
	}
	if got := leaderOf(t, 3*time.Second, a, b); got != other {
		t.Fatalf("leader after StepDown is %s, want %s", got.id, other.id)
	}
	t.Logf("takeover after StepDown: %v", time.Since(start))
	// The one that stepped down follows and does not take the lock back.
	if first.numTerms() != 1 {
		t.Errorf("elector that stepped down led %d times, want 1", first.numTerms())
	}
}

func TestKilledLeaderIsReplaced(t *testing.T) {
	consul := startConsul(t)
	const (
		key     = "mcrib/killed/leader"
		childID = "127.0.0.1:7101"
	)
	var out bytes.Buffer
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		helperConsulEnv+"="+consul.HTTPAddr, helperKeyEnv+"="+key, helperIDEnv+"="+childID)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting helper process: %v", err)
	}
	waited := false
	t.Cleanup(func() {
		if !waited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	testenv.Eventually(t, 15*time.Second, "the helper process to lead", func() bool {
		value, session := lockValue(t, consul.Client, key)
		return value == childID && session != ""
	})

	b := startCandidate(t, consul, key, "127.0.0.1:7102")
	testenv.Eventually(t, 5*time.Second, "the follower to know the helper leads", func() bool {
		return b.e.LeaderID() == childID
	})
	if b.e.IsLeader() {
		t.Fatal("follower leads while the helper holds the lock")
	}

	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("killing helper: %v", err)
	}
	_ = cmd.Wait()
	waited = true
	limit := leader.DefaultLockDelay + leader.DefaultCheckTTL + 4*time.Second
	testenv.Eventually(t, limit, "the follower to take over from the killed leader", b.e.IsLeader)
	takeover := time.Since(start)
	t.Logf("takeover after SIGKILL: %v (CheckTTL %v + LockDelay %v)", takeover, leader.DefaultCheckTTL, leader.DefaultLockDelay)
	if takeover < leader.DefaultCheckTTL {
		t.Errorf("took over after %v, before the killed leader's check (TTL %v) could expire", takeover, leader.DefaultCheckTTL)
	}
	if value, session := lockValue(t, consul.Client, key); value != b.id || session != b.e.Session() {
		t.Fatalf("lock key holds %q by %q, want %q by %q\nhelper output:\n%s", value, session, b.id, b.e.Session(), out.String())
	}
	if !strings.Contains(out.String(), "leading ") {
		t.Errorf("helper output lacks its term:\n%s", out.String())
	}
}

func TestDeposedLeaderStepsDown(t *testing.T) {
	consul := startConsul(t)
	const key = "mcrib/deposed/leader"
	a := startCandidate(t, consul, key, "127.0.0.1:7001")
	b := startCandidate(t, consul, key, "127.0.0.1:7002")

	first := leaderOf(t, 15*time.Second, a, b)
	firstTerm := first.lastTerm()
	old := first.e.Session()
	if old == "" || old != firstTerm.session {
		t.Fatalf("Session() = %q, lead got %q", old, firstTerm.session)
	}
	// The leader can write while it holds the lock.
	if ok, err := leader.CASWithSession(t.Context(), consul.Client, key, old, "mcrib/deposed/slotmap", []byte("v1"), 0); err != nil || !ok {
		t.Fatalf("CASWithSession as leader: ok %v, err %v", ok, err)
	}
	kv, _, err := consul.Client.KV().Get("mcrib/deposed/slotmap", nil)
	if err != nil || kv == nil {
		t.Fatalf("reading slotmap: %v", err)
	}

	start := time.Now()
	if _, err := consul.Client.Session().Destroy(old, nil); err != nil {
		t.Fatalf("destroying session: %v", err)
	}
	waitDone(t, firstTerm.ctx.Done(), 2*time.Second, "the deposed leader's lead context to be cancelled")
	t.Logf("deposed leader noticed after %v", time.Since(start))
	if first.e.IsLeader() {
		t.Error("IsLeader true after the lead context was cancelled")
	}
	if got := first.e.Session(); got == old {
		t.Error("Session() still returns the destroyed session")
	}
	ok, err := leader.CASWithSession(t.Context(), consul.Client, key, old, "mcrib/deposed/slotmap", []byte("stale"), kv.ModifyIndex)
	if err != nil || ok {
		t.Fatalf("CASWithSession with the destroyed session: ok %v, err %v; want false, nil", ok, err)
	}
	// Someone leads again once the lock delay has passed, with a new session.
	next := leaderOf(t, leader.DefaultLockDelay+5*time.Second, a, b)
	t.Logf("new leader %s after %v", next.id, time.Since(start))
	if next.e.Session() == old {
		t.Fatal("new term reuses the destroyed session")
	}
}

func TestRegainsLeadershipAfterConsulRestart(t *testing.T) {
	consul := startConsul(t)
	const key = "mcrib/restart/leader"
	a := startCandidate(t, consul, key, "127.0.0.1:7001")
	leaderOf(t, 15*time.Second, a)
	firstTerm := a.lastTerm()

	start := time.Now()
	consul.Stop(t)
	waitDone(t, firstTerm.ctx.Done(), leader.DefaultCheckTTL+3*time.Second, "leadership to be given up while Consul is down")
	t.Logf("leadership given up %v after Consul stopped", time.Since(start))
	if a.e.IsLeader() {
		t.Error("IsLeader true while Consul is down")
	}
	consul.Start(t)
	restarted := time.Now()
	testenv.Eventually(t, 20*time.Second, "leadership to be regained after Consul restarted", func() bool {
		return a.e.IsLeader() && a.numTerms() == 2
	})
	t.Logf("leadership regained %v after Consul was back", time.Since(restarted))
	if value, session := lockValue(t, consul.Client, key); value != a.id || session != a.e.Session() {
		t.Fatalf("lock key holds %q by %q after restart, want %q by %q", value, session, a.id, a.e.Session())
	}
}

func TestLeadReturningStepsDown(t *testing.T) {
	consul := startConsul(t)
	const (
		key       = "mcrib/returning/leader"
		lockDelay = time.Second
	)
	e, err := leader.New(leader.Options{Client: consul.NewClient(t), Key: key, ID: "127.0.0.1:7001", LockDelay: lockDelay})
	if err != nil {
		t.Fatalf("leader.New: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	var (
		mu     sync.Mutex
		starts []time.Time
	)
	go func() {
		defer close(done)
		e.Run(ctx, func(ctx context.Context, session string) {
			mu.Lock()
			starts = append(starts, time.Now())
			n := len(starts)
			mu.Unlock()
			if n > 1 {
				<-ctx.Done()
			}
			// The first term returns at once, as a broken controller might.
		})
	}()
	t.Cleanup(func() {
		cancel()
		waitDone(t, done, 5*time.Second, "Run to return")
	})
	testenv.Eventually(t, 15*time.Second, "a second term", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(starts) == 2
	})
	mu.Lock()
	gap := starts[1].Sub(starts[0])
	mu.Unlock()
	if gap < lockDelay {
		t.Errorf("second term began %v after the first returned, want at least LockDelay %v", gap, lockDelay)
	}
	if !e.IsLeader() {
		t.Error("IsLeader false during the second term")
	}
}
