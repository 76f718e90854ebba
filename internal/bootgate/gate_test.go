package bootgate

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcrib/mcrib/clock"
	"github.com/mcrib/mcrib/internal/revert"
)

// counter is an Admitter that admits everything and counts how.
type counter struct {
	mu           sync.Mutex
	pool, shares int
	of           int
}

func (c *counter) Admit() (bool, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pool++
	return true, 0
}

func (c *counter) AdmitShare(n int) (bool, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.shares++
	c.of = n
	return true, 0
}

// network is an in-memory transport to the leader: it answers each
// request with answer, or fails with fail when set, and keeps what it was
// sent.
type network struct {
	mu   sync.Mutex
	sent []*http.Request
	body []string
	fail error
	// answer writes the leader's answer; nil admits.
	answer func(w http.ResponseWriter, r *http.Request)
}

func (n *network) RoundTrip(r *http.Request) (*http.Response, error) {
	b, err := io.ReadAll(r.Body)
	r.Body.Close()
	n.mu.Lock()
	n.sent = append(n.sent, r)
	n.body = append(n.body, string(b))
	fail, answer := n.fail, n.answer
	n.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if fail != nil {
		return nil, fail
	}
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	rec := httptest.NewRecorder()
	if answer == nil {
		writeJSON(rec, http.StatusOK, map[string]bool{"admitted": true})
	} else {
		answer(rec, r)
	}
	return rec.Result(), nil
}

func (n *network) count() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.sent)
}

// bed is one replica's gate with its fakes.
type bed struct {
	g       *Gate
	adm     *counter
	net     *network
	clk     *clock.Fake
	leading bool
	leader  string
	// replicas is what Options.Replicas answers; 0 means 3.
	replicas int
	rec      []bool
}

func (b *bed) BootAdmission(ok bool) { b.rec = append(b.rec, ok) }

func newBed(t *testing.T, reverted revert.Set) *bed {
	t.Helper()
	b := &bed{adm: &counter{}, net: &network{}, clk: clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)), leader: "leader:7070"}
	g, err := New(Options{
		Admitter: b.adm,
		Leader:   func() (bool, string) { return b.leading, b.leader },
		Replicas: func() int {
			if b.replicas == 0 {
				return 3
			}
			return b.replicas
		},
		ID:        "me:7070",
		Transport: b.net,
		Clock:     b.clk,
		Recorder:  b,
	})
	if err != nil {
		t.Fatal(err)
	}
	revert.Apply(g, reverted)
	b.g = g
	return b
}

// boot sends one boot with header pairs and body (sent as JSON when not
// empty) and returns the answer.
func (b *bed) boot(body string, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/v1/boot", strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	b.g.ServeHTTP(rec, req)
	return rec
}

func TestNewNeedsAnAdmitter(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Fatal("New without an Admitter succeeded")
	}
}

// TestLeaderCountsEveryBootAlike: the leader admits from the pool's limit,
// whether the boot is marked forwarded or not, and forwards nothing.
func TestLeaderCountsEveryBootAlike(t *testing.T) {
	b := newBed(t, 0)
	b.leading = true
	for _, mark := range []string{"", "peer:7070", "forged"} {
		if rec := b.boot("", ForwardedHeader, mark); rec.Code != http.StatusOK {
			t.Fatalf("a boot marked %q on the leader: %d", mark, rec.Code)
		}
	}
	if b.adm.pool != 3 || b.adm.shares != 0 || b.net.count() != 0 || len(b.rec) != 3 {
		t.Fatalf("the leader admitted %d from the limit, %d from a share, forwarded %d, recorded %d; want 3, 0, 0, 3", b.adm.pool, b.adm.shares, b.net.count(), len(b.rec))
	}
}

// TestFollowerForwards: a follower sends a boot to the leader with its
// body, marked with its own ID, without the browser's Origin and
// Sec-Fetch-* headers nor hop-by-hop ones, and answers with the leader's
// answer (a 429's Retry-After included); it admits nothing itself and
// records nothing (the leader does).
func TestFollowerForwards(t *testing.T) {
	b := newBed(t, 0)
	rec := b.boot(`{"app":"web-1"}`, "Origin", "http://page.example", "Sec-Fetch-Site", "same-origin", "Sec-Fetch-Mode", "cors",
		"Connection", "X-Drop", "X-Drop", "1", "X-Keep", "1", "Keep-Alive", "timeout=5")
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"admitted":true`) {
		t.Fatalf("forwarded boot: %d %s", rec.Code, rec.Body)
	}
	if b.net.count() != 1 {
		t.Fatalf("%d requests sent to the leader, want 1", b.net.count())
	}
	out := b.net.sent[0]
	if out.URL.String() != "http://leader:7070/v1/boot" || out.Method != http.MethodPost || b.net.body[0] != `{"app":"web-1"}` {
		t.Errorf("sent %s %s with %q", out.Method, out.URL, b.net.body[0])
	}
	if out.Header.Get(ForwardedHeader) != "me:7070" || out.Header.Get("Content-Type") != "application/json" || out.Header.Get("X-Keep") != "1" {
		t.Errorf("forwarded headers %v: want the mark me:7070, the content type and X-Keep", out.Header)
	}
	for _, h := range []string{"Origin", "Sec-Fetch-Site", "Sec-Fetch-Mode", "Connection", "X-Drop", "Keep-Alive"} {
		if out.Header.Get(h) != "" {
			t.Errorf("the forward carries %s: %q", h, out.Header.Get(h))
		}
	}
	if b.adm.pool+b.adm.shares != 0 || len(b.rec) != 0 {
		t.Errorf("the follower admitted %d+%d and recorded %d boots itself", b.adm.pool, b.adm.shares, len(b.rec))
	}

	b.net.answer = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3")
		writeJSON(w, http.StatusTooManyRequests, map[string]bool{"admitted": false})
	}
	if rec := b.boot(""); rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "3" || !strings.Contains(rec.Body.String(), `"admitted":false`) {
		t.Errorf("the leader's refusal came back as %d, Retry-After %q, %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
}

// TestForwardedNeverShared: a boot marked forwarded that reaches a
// replica that does not lead is refused with 429 and Retry-After: 1,
// neither admitted from the share nor forwarded again, whatever the mark.
// Reverted, the follower admits it from its share.
func TestForwardedNeverShared(t *testing.T) {
	for _, tc := range []struct {
		name       string
		reverted   revert.Set
		wantCode   int
		wantShares int
	}{
		{"fixed", 0, http.StatusTooManyRequests, 0},
		{"reverted", revert.Of(revert.ForwardedNeverShared), http.StatusOK, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBed(t, tc.reverted)
			for _, mark := range []string{"peer:7070", "1"} {
				rec := b.boot("", ForwardedHeader, mark)
				if rec.Code != tc.wantCode {
					t.Errorf("a boot marked %q on a follower: %d, want %d", mark, rec.Code, tc.wantCode)
				}
				if tc.wantCode == http.StatusTooManyRequests && rec.Header().Get("Retry-After") != "1" {
					t.Errorf("Retry-After %q, want 1", rec.Header().Get("Retry-After"))
				}
			}
			if b.adm.shares != tc.wantShares || b.adm.pool != 0 || b.net.count() != 0 {
				t.Errorf("%d admitted from the share, %d from the limit, %d forwarded; want %d, 0, 0", b.adm.shares, b.adm.pool, b.net.count(), tc.wantShares)
			}
			// Each is a boot this replica decided: counted, as refused
			// (or, reverted, admitted).
			if want := tc.wantCode == http.StatusOK; len(b.rec) != 2 || b.rec[0] != want || b.rec[1] != want {
				t.Errorf("recorded %v, want two boots admitted %v", b.rec, want)
			}
		})
	}
}

// TestNeverForwardsToItself: a replica that just stepped down and still
// names itself the leader admits from its share and sends nothing; with
// no leader known it does the same.
func TestNeverForwardsToItself(t *testing.T) {
	for _, leader := range []string{"me:7070", ""} {
		b := newBed(t, 0)
		b.leader = leader
		if rec := b.boot(""); rec.Code != http.StatusOK {
			t.Fatalf("leader %q: %d", leader, rec.Code)
		}
		if b.net.count() != 0 || b.adm.shares != 1 || b.adm.of != 3 {
			t.Errorf("leader %q: %d forwards, %d shares of %d replicas; want 0 and 1 of 3", leader, b.net.count(), b.adm.shares, b.adm.of)
		}
	}
}

// TestUnreachableLeader: when this replica's own connection to the leader
// fails, the boot is admitted from the share, and so are the next ones
// for LeaderRetryAfter without trying the leader; then it is tried again.
func TestUnreachableLeader(t *testing.T) {
	b := newBed(t, 0)
	b.net.fail = errors.New("dial tcp leader:7070: connect: connection refused")
	if rec := b.boot(""); rec.Code != http.StatusOK || b.adm.shares != 1 {
		t.Fatalf("boot with the leader down: %d, %d shares", rec.Code, b.adm.shares)
	}
	b.clk.Advance(LeaderRetryAfter - time.Millisecond)
	b.boot("")
	if b.net.count() != 1 || b.adm.shares != 2 {
		t.Fatalf("within %v of the failure: %d forwards, %d shares; want 1 and 2", LeaderRetryAfter, b.net.count(), b.adm.shares)
	}
	b.net.fail = nil
	b.clk.Advance(time.Millisecond)
	b.boot("")
	if b.net.count() != 2 || b.adm.shares != 2 {
		t.Fatalf("after %v: %d forwards, %d shares; want the leader tried again", LeaderRetryAfter, b.net.count(), b.adm.shares)
	}
	if len(b.rec) != 2 {
		t.Errorf("recorded %d admissions, want the 2 from the share", len(b.rec))
	}
}

// failingBody yields a few bytes, then fails as a body whose client hung
// up before sending its Content-Length does.
type failingBody struct{ sent bool }

func (f *failingBody) Read(p []byte) (int, error) {
	if !f.sent {
		f.sent = true
		return copy(p, `{"app":`), nil
	}
	return 0, io.ErrUnexpectedEOF
}

func (f *failingBody) Close() error { return nil }

// TestCallerErrorNotLeaderDown: a truncated body (400), a body over 64
// KiB (413), one not sent as JSON (415) and a caller that hangs up during
// the forward admit nothing and leave the leader reachable: the next boot
// is forwarded. Reverted, each takes the leader for down and admits from
// the share (the body is not read first; a body over 64 KiB gets 200).
func TestCallerErrorNotLeaderDown(t *testing.T) {
	cases := []struct {
		name     string
		send     func(b *bed) *httptest.ResponseRecorder
		wantCode int // fixed
	}{
		{"truncated body", func(b *bed) *httptest.ResponseRecorder {
			req := httptest.NewRequest(http.MethodPost, "/v1/boot", nil)
			req.Body, req.ContentLength = &failingBody{}, 100
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			b.g.ServeHTTP(rec, req)
			return rec
		}, http.StatusBadRequest},
		{"body over 64 KiB", func(b *bed) *httptest.ResponseRecorder {
			return b.boot(`{"x":"` + strings.Repeat("y", 64<<10) + `"}`)
		}, http.StatusRequestEntityTooLarge},
		{"caller hangs up", func(b *bed) *httptest.ResponseRecorder {
			ctx, cancel := context.WithCancel(context.Background())
			req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/boot", nil)
			b.net.answer = func(w http.ResponseWriter, r *http.Request) {} // unused: the context ends first
			cancel()
			rec := httptest.NewRecorder()
			b.g.ServeHTTP(rec, req)
			b.net.answer = nil
			return rec
		}, http.StatusServiceUnavailable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBed(t, 0)
			if rec := tc.send(b); rec.Code != tc.wantCode {
				t.Errorf("answered %d %s, want %d", rec.Code, rec.Body, tc.wantCode)
			}
			if b.adm.pool+b.adm.shares != 0 || len(b.rec) != 0 {
				t.Errorf("admitted %d+%d for the caller's error, want nothing", b.adm.pool, b.adm.shares)
			}
			sent := b.net.count()
			if rec := b.boot(""); rec.Code != http.StatusOK || b.net.count() != sent+1 || b.adm.shares != 0 {
				t.Errorf("the next boot: %d, forwarded %d, shares %d; want it forwarded to the leader", rec.Code, b.net.count()-sent, b.adm.shares)
			}
		})
		t.Run(tc.name+" reverted", func(t *testing.T) {
			b := newBed(t, revert.Of(revert.CallerErrorNotLeaderDown))
			if rec := tc.send(b); rec.Code != http.StatusOK || b.adm.shares != 1 {
				t.Errorf("reverted: answered %d with %d shares, want 200 from the share", rec.Code, b.adm.shares)
			}
			sent := b.net.count()
			b.boot("")
			if b.net.count() != sent || b.adm.shares != 2 {
				t.Errorf("reverted: the next boot was forwarded (%d) or not shared (%d); want the leader taken for down", b.net.count()-sent, b.adm.shares)
			}
		})
	}
}

// TestBodyRules: a body not sent as JSON is 415 and admits nothing, on
// the leader as on a follower; JSON with parameters or in capitals
// passes; no body is never 415; a body too large is 413 whatever its
// type.
func TestBodyRules(t *testing.T) {
	for _, tc := range []struct {
		name, body, contentType string
		want                    int
	}{
		{"no body, no type", "", "", http.StatusOK},
		{"no body, text/plain", "", "text/plain", http.StatusOK},
		{"json", `{}`, "application/json", http.StatusOK},
		{"json with charset", `{}`, "application/json; charset=utf-8", http.StatusOK},
		{"json in capitals", `{}`, "Application/JSON", http.StatusOK},
		{"text/plain", `{}`, "text/plain", http.StatusUnsupportedMediaType},
		{"form", `a=1`, "application/x-www-form-urlencoded", http.StatusUnsupportedMediaType},
		{"no type", `{}`, "", http.StatusUnsupportedMediaType},
		{"json-ish", `{}`, "application/jsonx", http.StatusUnsupportedMediaType},
		{"too large as text/plain", strings.Repeat("y", 65<<10), "text/plain", http.StatusRequestEntityTooLarge},
	} {
		for _, leading := range []bool{true, false} {
			b := newBed(t, 0)
			b.leading = leading
			req := httptest.NewRequest(http.MethodPost, "/v1/boot", strings.NewReader(tc.body))
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			rec := httptest.NewRecorder()
			b.g.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Errorf("%s (leading %v): %d %s, want %d", tc.name, leading, rec.Code, rec.Body, tc.want)
			}
			if tc.want != http.StatusOK && (b.adm.pool+b.adm.shares != 0 || b.net.count() != 0) {
				t.Errorf("%s (leading %v): a refused boot was admitted or forwarded", tc.name, leading)
			}
		}
	}
}

// TestForwardOverTLSScheme: with TLS the forward goes to https.
func TestForwardOverTLSScheme(t *testing.T) {
	n := &network{}
	g, err := New(Options{Admitter: &counter{}, Leader: func() (bool, string) { return false, "leader:7443" }, Transport: n, TLS: &tls.Config{}})
	if err != nil {
		t.Fatal(err)
	}
	g.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/v1/boot", nil))
	if n.count() != 1 || n.sent[0].URL.Scheme != "https" {
		t.Fatalf("forwarded %d, to %v; want https", n.count(), n.sent)
	}
}

// TestShareNeverOfALateCount: the share a replica admits divides the limit
// by the most replicas seen in the last 10 minutes (a count that is late,
// as a restarted replica's before it read the others' votes, never lets
// the pool admit more), and by at least 2 while another replica leads.
func TestShareNeverOfALateCount(t *testing.T) {
	b := newBed(t, 0)
	b.net.fail = errors.New("dial tcp leader:7070: connect: connection refused")
	b.boot("")
	if b.adm.of != 3 {
		t.Fatalf("the share of 3 replicas was taken among %d", b.adm.of)
	}
	b.replicas = 1 // the others' votes are not seen any more
	b.clk.Advance(time.Minute)
	b.boot("")
	if b.adm.of != 3 {
		t.Fatalf("a count of 1 a minute after 3: the share was taken among %d, want 3", b.adm.of)
	}
	b.clk.Advance(10 * time.Minute)
	b.boot("")
	if b.adm.of != 2 {
		t.Fatalf("a count of 1 for 10 minutes while another replica leads: the share was taken among %d, want 2", b.adm.of)
	}
	b.leader = "" // no leader known: this replica may be alone
	b.boot("")
	if b.adm.of != 1 {
		t.Fatalf("alone for 10 minutes with no leader known: the share was taken among %d, want 1", b.adm.of)
	}
}
