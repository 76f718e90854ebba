package apiserver

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// truncatedBody yields a few bytes, then fails as a body whose client
// hung up before sending its Content-Length does.
type truncatedBody struct{ sent bool }

func (b *truncatedBody) Read(p []byte) (int, error) {
	if !b.sent {
		b.sent = true
		return copy(p, `{"app":`), nil
	}
	return 0, io.ErrUnexpectedEOF
}

func (b *truncatedBody) Close() error { return nil }

// countingLeader is a leader's API that admits every boot and counts
// them; a boot with the header "X-Test-Hold" waits for release and is not
// counted.
type countingLeader struct {
	mu      sync.Mutex
	boots   int
	got     chan struct{}
	release chan struct{}
}

func (l *countingLeader) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Test-Hold") != "" { // not counted: its caller is gone
		l.got <- struct{}{}
		<-l.release
		writeJSON(w, http.StatusOK, map[string]bool{"admitted": true})
		return
	}
	l.mu.Lock()
	l.boots++
	l.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]bool{"admitted": true})
}

func (l *countingLeader) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.boots
}

// bootFollower returns a replica, one of replicas, that does not lead and
// whose leader's API is leader (served until the test ends), and the boot
// limiter it would admit its own boots from.
func bootFollower(t *testing.T, leader http.Handler, replicas int) (*Server, *countingBoot) {
	t.Helper()
	srv := httptest.NewServer(leader)
	t.Cleanup(srv.Close)
	boot := &countingBoot{}
	a := newServer(Options{Boot: boot, Leader: func() (bool, string) {
		return false, srv.Listener.Addr().String()
	}})
	a.replicas = fixedReplicas{n: replicas}
	return a, boot
}

// TestCallerErrorsDoNotMarkTheLeaderDown: a truncated body, a body over
// 64 KiB and a caller that gives up are the caller's doing: the follower
// admits nothing for them and keeps forwarding the next boots to the
// leader (invariant 8), instead of taking the leader for down and
// admitting its share unseen by the leader.
func TestCallerErrorsDoNotMarkTheLeaderDown(t *testing.T) {
	for _, tc := range []struct {
		name string
		// do sends the caller's failing boot to the follower and
		// returns the status it got (0: none, the caller was gone).
		do       func(t *testing.T, a *Server, leader *countingLeader) int
		wantCode int
	}{
		{"truncated body", func(t *testing.T, a *Server, _ *countingLeader) int {
			req := httptest.NewRequest(http.MethodPost, "/v1/boot", nil)
			req.Body = &truncatedBody{}
			req.ContentLength = 100
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			a.ServeHTTP(rec, req)
			return rec.Code
		}, http.StatusBadRequest},
		{"body over 64 KiB", func(t *testing.T, a *Server, _ *countingLeader) int {
			req := httptest.NewRequest(http.MethodPost, "/v1/boot", strings.NewReader(`{"x":"`+strings.Repeat("y", 70<<10)+`"}`))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			a.ServeHTTP(rec, req)
			return rec.Code
		}, http.StatusRequestEntityTooLarge},
		{"caller gives up", func(t *testing.T, a *Server, leader *countingLeader) int {
			ctx, cancel := context.WithCancel(context.Background())
			req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/boot", nil)
			req.Header.Set("X-Test-Hold", "1")
			rec := httptest.NewRecorder()
			done := make(chan struct{})
			go func() {
				defer close(done)
				a.ServeHTTP(rec, req)
			}()
			<-leader.got // the boot reached the leader: now the caller hangs up
			cancel()
			<-done
			close(leader.release)
			return 0
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leader := &countingLeader{got: make(chan struct{}, 1), release: make(chan struct{})}
			a, boot := bootFollower(t, leader, 2)
			if code := tc.do(t, a, leader); tc.wantCode != 0 && code != tc.wantCode {
				t.Errorf("the failing boot was answered %d, want %d", code, tc.wantCode)
			}
			if boot.pool+boot.shares != 0 {
				t.Errorf("the follower admitted %d boots from its share and %d from the pool's limit for the caller's error, want none", boot.shares, boot.pool)
			}
			before := leader.count()
			for range 3 {
				if code := bootCall(t, a, ""); code != http.StatusOK {
					t.Fatalf("a later boot: %d", code)
				}
			}
			if got := leader.count() - before; got != 3 || boot.shares != 0 {
				t.Errorf("after the caller's error the leader saw %d of 3 boots and the follower admitted %d from its share; want all 3 forwarded", got, boot.shares)
			}
		})
	}
}

// TestForwardedBootNeverAdmittedByAFollower: a boot marked forwarded that
// reaches a replica that does not lead is refused with 429 and
// Retry-After: 1, whatever the mark names (a live replica's session
// included): never admitted from the share, never forwarded again.
func TestForwardedBootNeverAdmittedByAFollower(t *testing.T) {
	leader := &countingLeader{}
	a, boot := bootFollower(t, leader, 3)
	for _, mark := range []string{"s-peer", "s-forged", "1"} {
		req := httptest.NewRequest(http.MethodPost, "/v1/boot", nil)
		req.Header.Set(forwardedHeader, mark)
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, req)
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" || !strings.Contains(rec.Body.String(), `"admitted":false`) {
			t.Errorf("a boot marked %q on a follower: %d, Retry-After %q, %s; want 429, 1 and admitted false", mark, rec.Code, rec.Header().Get("Retry-After"), rec.Body)
		}
	}
	if boot.pool+boot.shares != 0 || leader.count() != 0 {
		t.Errorf("marked boots: %d admitted from the share, %d from the limit, %d forwarded; want none", boot.shares, boot.pool, leader.count())
	}
	// The leader counts every boot alike, marked or not.
	lead := newServer(Options{Boot: boot, Leader: func() (bool, string) { return true, "me:7070" }})
	lead.replicas = fixedReplicas{n: 3}
	for _, mark := range []string{"", "s-peer", "s-forged"} {
		if code := bootCall(t, lead, mark); code != http.StatusOK {
			t.Errorf("a boot marked %q on the leader: %d", mark, code)
		}
	}
	if boot.pool != 3 || boot.shares != 0 {
		t.Errorf("the leader admitted %d from the limit and %d from a share, want 3 and 0", boot.pool, boot.shares)
	}
}

// TestBootNeverForwardedToItself: a replica that just stepped down and
// still takes itself for the leader (one boot once became 3,840 nested
// requests in a second) admits from its share and sends nothing; and when
// it reaches itself under another name, the boot comes back marked,
// is refused there, and goes no further: no boot is forwarded twice.
func TestBootNeverForwardedToItself(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		leaderName             func(addr string) string
		wantRequests, wantCode int
	}{
		{"its own ID", func(addr string) string { return addr }, 1, http.StatusOK},
		{"another name of itself", func(addr string) string { return strings.Replace(addr, "127.0.0.1", "localhost", 1) }, 2, http.StatusTooManyRequests},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			requests := 0
			var a *Server
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				requests++
				mu.Unlock()
				a.ServeHTTP(w, r)
			}))
			defer srv.Close()
			addr := srv.Listener.Addr().String()
			boot := &countingBoot{}
			a = newServer(Options{Boot: boot, Leader: func() (bool, string) { return false, tc.leaderName(addr) }})
			a.replicas = fixedReplicas{n: 2}
			withID(a, addr)
			resp, err := http.Post(srv.URL+"/v1/boot", "application/json", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			mu.Lock()
			defer mu.Unlock()
			if requests != tc.wantRequests || resp.StatusCode != tc.wantCode {
				t.Errorf("one boot made %d requests and was answered %d; want %d and %d", requests, resp.StatusCode, tc.wantRequests, tc.wantCode)
			}
		})
	}
}
