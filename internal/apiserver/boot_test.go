package apiserver

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcrib/mcrib/internal/bootgate"
	"github.com/mcrib/mcrib/internal/testenv"
	"github.com/mcrib/mcrib/ratelimit"
)

// countingBoot is a BootLimiter that admits everything and counts how.
type countingBoot struct {
	mu           sync.Mutex
	pool, shares int
	lastReplicas int
}

func (b *countingBoot) Document() ratelimit.Document { return ratelimit.Document{} }
func (b *countingBoot) Set(context.Context, ratelimit.Setting, string) (ratelimit.Document, error) {
	return ratelimit.Document{}, nil
}
func (b *countingBoot) Admit() (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pool++
	return true, 0
}
func (b *countingBoot) AdmitShare(n int) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.shares++
	b.lastReplicas = n
	return true, 0
}

type fixedReplicas struct{ n int }

func (r fixedReplicas) Count() int              { return r.n }
func (r fixedReplicas) Has(session string) bool { return session == "s-peer" }
func (r fixedReplicas) Session() string         { return "s-me" }

func bootCall(t *testing.T, a *Server, header string) int {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/v1/boot", nil)
	if header != "" {
		req.Header.Set(forwardedHeader, header)
	}
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, req)
	return rec.Code
}

// TestFollowerForwardsBootsToTheLeader: a follower sends boots to the
// leader's address marked with its own ID, and admits none itself.
func TestFollowerForwardsBootsToTheLeader(t *testing.T) {
	var seen []string
	var mu sync.Mutex
	a, boot := bootFollower(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get(forwardedHeader))
		mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]bool{"admitted": true})
	}), 3)
	withID(a, "follower:7070")
	for range 3 {
		if code := bootCall(t, a, ""); code != http.StatusOK {
			t.Fatalf("boot: %d", code)
		}
	}
	mu.Lock()
	got := strings.Join(seen, ",")
	mu.Unlock()
	if got != "follower:7070,follower:7070,follower:7070" || boot.pool+boot.shares != 0 {
		t.Fatalf("the leader saw %q, local admissions %d+%d; want every boot forwarded marked with this replica's ID", got, boot.pool, boot.shares)
	}
}

// withID gives a its own leader_id, as mcrib serve does before
// secureFront builds the boot gate.
func withID(a *Server, id string) {
	a.id = id
	a.gate = a.newBootGate()
}

// TestBlackHoledLeaderCostsOneShortWait: a leader that never answers
// stalls one boot for at most the forward timeout, the next boots are
// admitted from the share at once, and the failure is logged once.
func TestBlackHoledLeaderCostsOneShortWait(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // accepts and never answers
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	logs := &testenv.SyncBuffer{}
	boot := &countingBoot{}
	a := newServer(Options{Boot: boot, Logger: slog.New(slog.NewTextHandler(logs, nil)), Leader: func() (bool, string) {
		return false, ln.Addr().String()
	}})
	a.replicas = fixedReplicas{n: 2}
	start := time.Now()
	if code := bootCall(t, a, ""); code != http.StatusOK {
		t.Fatalf("first boot: %d", code)
	}
	if d := time.Since(start); d > bootgate.DefaultForwardTimeout+500*time.Millisecond {
		t.Fatalf("the first boot waited %v for a black-holed leader, more than the %v forward timeout", d, bootgate.DefaultForwardTimeout)
	}
	start = time.Now()
	for range 20 {
		bootCall(t, a, "")
	}
	if d := time.Since(start); d > 200*time.Millisecond {
		t.Fatalf("20 boots took %v while the leader is known to be down", d)
	}
	if boot.shares != 21 || boot.lastReplicas != 2 || boot.pool != 0 {
		t.Fatalf("admissions: %d from the share (of %d replicas), %d from the pool's limit; want 21 from a half share", boot.shares, boot.lastReplicas, boot.pool)
	}
	if n := strings.Count(logs.String(), "forwarding boots to the leader failed"); n != 1 {
		t.Fatalf("the failed forwards were logged %d times, want once", n)
	}
}
