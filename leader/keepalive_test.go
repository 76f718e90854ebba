package leader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/internal/leakcheck"
)

func TestCheckExpired(t *testing.T) {
	base := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		now  time.Time
		ttl  time.Duration
		want bool
	}{
		{"just refreshed", base, 3 * time.Second, false},
		{"inside ttl", base.Add(2999 * time.Millisecond), 3 * time.Second, false},
		{"at ttl", base.Add(3 * time.Second), 3 * time.Second, true},
		{"past ttl", base.Add(10 * time.Second), 3 * time.Second, true},
		{"clock went back", base.Add(-time.Second), 3 * time.Second, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := checkExpired(base, tt.now, tt.ttl); got != tt.want {
				t.Errorf("checkExpired(%v, %v, %v) = %v, want %v", base, tt.now, tt.ttl, got, tt.want)
			}
		})
	}
}

// fakeAgent answers the keepalive's two requests the way a test sets.
type fakeAgent struct {
	check   string // "ok", "reject" (404) or "drop" (the connection is closed)
	renew   string // "ok", "gone" (404) or "fail" (500: no cluster leader)
	renewed chan struct{}
}

func (a *fakeAgent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasPrefix(r.URL.Path, "/v1/agent/check/update/"):
		switch a.check {
		case "ok":
		case "reject":
			http.Error(w, "CheckID does not have associated TTL", http.StatusNotFound)
		default:
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}
	case strings.HasPrefix(r.URL.Path, "/v1/session/renew/"):
		a.renewed <- struct{}{}
		switch a.renew {
		case "gone":
			http.Error(w, "Session id not found", http.StatusNotFound)
			return
		case "fail":
			http.Error(w, "No cluster leader", http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, `[{"ID": "session-1"}]`)
	default:
		http.NotFound(w, r)
	}
}

// logSignal is a slog.Handler that passes every message to a channel.
type logSignal chan string

func (h logSignal) Enabled(context.Context, slog.Level) bool { return true }
func (h logSignal) Handle(_ context.Context, r slog.Record) error {
	h <- r.Message
	return nil
}
func (h logSignal) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h logSignal) WithGroup(string) slog.Handler      { return h }

// keepaliveRun is one keepalive on a fake clock against a fake agent.
type keepaliveRun struct {
	e      *Elector
	clk    *clock.Fake
	logs   logSignal
	failed chan error
	done   chan struct{}
}

// startKeepalive runs the keepalive of an elector with the default
// CheckTTL (3s: a refresh every second) until it fails or the test ends.
func startKeepalive(t *testing.T, agent *fakeAgent) *keepaliveRun {
	t.Helper()
	leakcheck.Check(t)
	agent.renewed = make(chan struct{}, 10)
	srv := httptest.NewServer(agent)
	t.Cleanup(srv.Close)
	client, err := api.NewClient(&api.Config{Address: srv.Listener.Addr().String(), Scheme: "http"})
	if err != nil {
		t.Fatal(err)
	}
	k := &keepaliveRun{
		clk:    clock.NewFake(time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)),
		logs:   make(logSignal, 100),
		failed: make(chan error, 1),
		done:   make(chan struct{}),
	}
	e, err := New(Options{Client: client, Key: "mcrib/test/leader", ID: "127.0.0.1:7001", Clock: k.clk, Logger: slog.New(k.logs)})
	if err != nil {
		t.Fatal(err)
	}
	k.e = e
	// As term does when the lock is taken: the acquire proved the
	// session valid.
	e.mu.Lock()
	e.session, e.renewed = "session-1", k.clk.Now()
	e.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(k.done)
		e.keepalive(ctx, func(err error) { k.failed <- err }, "check-1", "session-1")
	}()
	t.Cleanup(func() {
		cancel()
		<-k.done
	})
	armed, cancelArmed := context.WithTimeout(ctx, 5*time.Second)
	defer cancelArmed()
	if !k.clk.BlockUntil(armed, 2) {
		t.Fatal("the keepalive armed no tickers")
	}
	return k
}

// ended returns the error the keepalive ended the campaign with.
func (k *keepaliveRun) ended(t *testing.T) error {
	t.Helper()
	select {
	case err := <-k.failed:
		select {
		case <-k.done:
		case <-time.After(5 * time.Second):
			t.Fatal("the keepalive went on after it failed the campaign")
		}
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("the keepalive did not end the campaign")
		return nil
	}
}

// renewal advances the clock to renewal i, fails the test unless agent
// gets it, and lets the keepalive judge the answer (arm its tickers again)
// before time moves on.
func (k *keepaliveRun) renewal(t *testing.T, agent *fakeAgent, i int) {
	t.Helper()
	k.clk.Advance(renewEvery)
	select {
	case <-agent.renewed:
	case <-time.After(5 * time.Second):
		t.Fatalf("renewal %d was not tried", i)
	}
	waitCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	k.clk.BlockUntil(waitCtx, 2)
	cancel()
}

// stillRunning fails the test if the keepalive ended the campaign.
func (k *keepaliveRun) stillRunning(t *testing.T, when string) {
	t.Helper()
	select {
	case err := <-k.failed:
		t.Fatalf("%s: the keepalive ended the campaign: %v", when, err)
	default:
	}
}

func TestKeepaliveGivesUpAfterCheckTTLWithoutRefresh(t *testing.T) {
	k := startKeepalive(t, &fakeAgent{check: "drop", renew: "ok"})
	for i := 1; i <= 2; i++ {
		k.clk.Advance(time.Second)
		select {
		case msg := <-k.logs:
			if msg != "leader: refreshing leader check" {
				t.Fatalf("logged %q after refresh %d", msg, i)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("refresh %d was not tried", i)
		}
		k.stillRunning(t, fmt.Sprintf("%v without a refresh", time.Duration(i)*time.Second))
	}
	k.clk.Advance(time.Second)
	err := k.ended(t)
	if err == nil || !strings.Contains(err.Error(), "refreshing leader check check-1 for 3s") {
		t.Fatalf("ended with %v, want the refresh failures of 3s (CheckTTL)", err)
	}
}

func TestKeepaliveEndsAtOnceWhenTheCheckIsRejected(t *testing.T) {
	k := startKeepalive(t, &fakeAgent{check: "reject", renew: "ok"})
	k.clk.Advance(time.Second)
	err := k.ended(t)
	var rejected api.StatusError
	if !errors.As(err, &rejected) || rejected.Code != http.StatusNotFound {
		t.Fatalf("ended with %v, want the agent's 404", err)
	}
}

func TestKeepaliveEndsWhenTheSessionIsGone(t *testing.T) {
	agent := &fakeAgent{check: "ok", renew: "gone"}
	k := startKeepalive(t, agent)
	k.clk.Advance(renewEvery - time.Millisecond)
	select {
	case <-agent.renewed:
		t.Fatal("the session was renewed before renewEvery")
	default:
	}
	k.clk.Advance(time.Millisecond)
	if err := k.ended(t); !errors.Is(err, errSessionGone) {
		t.Fatalf("ended with %v, want errSessionGone", err)
	}
}

// TestKeepaliveStepsDownWhenRenewalsFailForTheTTL: a leader cut off from
// the Consul servers while its local agent still takes the check's
// refreshes must not go on leading: after sessionTTL of failed renewals
// the campaign ends.
func TestKeepaliveStepsDownWhenRenewalsFailForTheTTL(t *testing.T) {
	agent := &fakeAgent{check: "ok", renew: "fail"}
	k := startKeepalive(t, agent)
	steps := int(sessionTTL / renewEvery)
	for i := 1; i < steps; i++ {
		k.renewal(t, agent, i)
		k.stillRunning(t, fmt.Sprintf("%v of failed renewals", time.Duration(i)*renewEvery))
	}
	k.clk.Advance(renewEvery)
	err := k.ended(t)
	if err == nil || !strings.Contains(err.Error(), "renewing session for 10s") {
		t.Fatalf("ended with %v, want the renewal failures of the session TTL", err)
	}
}

// TestAssuredOnlyWithinTheLockDelayOfARenewal: a leader whose renewals
// fail goes on leading (IsLeader) until sessionTTL, but it is assured
// that no other process leads only until the lock delay less one renewal
// timeout has passed since its last renewal: Consul may have invalidated
// its session right after, and another process may take the lock a lock
// delay later. With renewals that succeed it stays assured.
func TestAssuredOnlyWithinTheLockDelayOfARenewal(t *testing.T) {
	for _, renew := range []string{"ok", "fail"} {
		t.Run(renew, func(t *testing.T) {
			agent := &fakeAgent{check: "ok", renew: renew}
			k := startKeepalive(t, agent)
			if !k.e.IsAssured() {
				t.Fatal("not assured right after the lock was taken")
			}
			for i := 1; i <= 4; i++ {
				k.renewal(t, agent, i)
				since := time.Duration(i) * renewEvery
				want := renew == "ok" || since < DefaultLockDelay-renewEvery
				if got := k.e.IsAssured(); got != want || !k.e.IsLeader() {
					t.Fatalf("%v after the acquire, renewals %s: assured %v, leader %v; want assured %v while leading", since, renew, got, k.e.IsLeader(), want)
				}
			}
		})
	}
}

func TestAssured(t *testing.T) {
	base := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		renewed time.Time
		now     time.Time
		assured bool
	}{
		{"never renewed", time.Time{}, base, false},
		{"just renewed", base, base, true},
		{"within the lock delay less a renewal", base, base.Add(DefaultLockDelay - renewEvery - time.Millisecond), true},
		{"at the lock delay less a renewal", base, base.Add(DefaultLockDelay - renewEvery), false},
		{"long ago", base, base.Add(time.Hour), false},
	} {
		if got := Assured(tc.renewed, tc.now, DefaultLockDelay); got != tc.assured {
			t.Errorf("%s: Assured = %v, want %v", tc.name, got, tc.assured)
		}
	}
}
