package leader

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/mcrib/mcrib/internal/testenv"
)

// TestRunWithoutConsul checks that Run keeps campaigning while Consul cannot
// be reached, never leads, and returns promptly when its context ends; and
// that a second concurrent Run returns at once.
func TestRunWithoutConsul(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t)) // nothing listens there
	client, err := api.NewClient(&api.Config{Address: addr, Scheme: "http"})
	if err != nil {
		t.Fatal(err)
	}
	logs := &testenv.SyncBuffer{}
	e, err := New(Options{
		Client: client, Key: "mcrib/default/leader", ID: "127.0.0.1:7070",
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	lead := func(context.Context, string) { t.Error("lead called without Consul") }
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Run(ctx, lead)
	}()
	testenv.Eventually(t, 2*time.Second, "Run to start", func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.running
	})

	second := make(chan struct{})
	go func() {
		defer close(second)
		e.Run(ctx, lead)
	}()
	select {
	case <-second:
	case <-time.After(2 * time.Second):
		t.Fatal("a second concurrent Run did not return at once")
	}

	testenv.Eventually(t, 5*time.Second, "three failed campaigns", func() bool {
		return strings.Count(logs.String(), "campaign ended") >= 3
	})
	select {
	case <-done:
		t.Fatal("Run returned although its context did not end")
	default:
	}
	if e.IsLeader() || e.LeaderID() != "" {
		t.Errorf("IsLeader %v, LeaderID %q without Consul", e.IsLeader(), e.LeaderID())
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5s of its context ending")
	}
}

func TestRetryBackoff(t *testing.T) {
	tests := []struct {
		name     string
		failures int
		jitter   float64
		want     time.Duration
	}{
		{"first failure, no jitter", 1, 0, 125 * time.Millisecond},
		{"first failure, half jitter", 1, 0.5, 187500 * time.Microsecond},
		{"second failure doubles", 2, 0, 250 * time.Millisecond},
		{"fifth failure", 5, 0, 2 * time.Second},
		{"capped", 6, 0, 2500 * time.Millisecond},
		{"capped far out", 1000, 0.5, 3750 * time.Millisecond},
		{"zero failures acts as first", 0, 0, 125 * time.Millisecond},
		{"jitter out of range ignored", 1, 1.5, 125 * time.Millisecond},
		{"negative jitter ignored", 1, -1, 125 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := retryBackoff()
			b.Jitter = func() float64 { return tt.jitter }
			if got := b.Delay(tt.failures); got != tt.want {
				t.Errorf("wait after %d failures with jitter %v = %v, want %v", tt.failures, tt.jitter, got, tt.want)
			}
		})
	}
}

func TestRetryBackoffStaysWithinBounds(t *testing.T) {
	for failures := 1; failures < 40; failures++ {
		for _, j := range []float64{0, 0.25, 0.5, 0.75, 0.999} {
			b := retryBackoff()
			b.Jitter = func() float64 { return j }
			if d := b.Delay(failures); d < minRetryDelay/2 || d >= maxRetryDelay {
				t.Fatalf("wait after %d failures with jitter %v = %v, outside [%v, %v)", failures, j, d, minRetryDelay/2, maxRetryDelay)
			}
		}
	}
}
