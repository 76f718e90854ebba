package cachenodes

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/mcrib/mcrib/internal/testenv"
)

// fakeMemcached is a TCP server that reads one command line per connection
// and answers it with reply(command), then closes the connection.
type fakeMemcached struct {
	addr string

	mu       sync.Mutex
	commands []string
}

func startFakeMemcached(t *testing.T, reply func(cmd string) string) *fakeMemcached {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listening: %v", err)
	}
	f := &fakeMemcached{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer conn.Close()
				_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
				cmd, err := bufio.NewReader(conn).ReadString('\n')
				if err != nil {
					return
				}
				f.mu.Lock()
				f.commands = append(f.commands, cmd)
				f.mu.Unlock()
				_, _ = io.WriteString(conn, reply(cmd))
			})
		}
	})
	return f
}

func (f *fakeMemcached) received() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.commands...)
}

func TestProberStatsParsesReply(t *testing.T) {
	reply := "STAT pid 4242\r\nSTAT uptime 3600\r\nSTAT time 1764421200\r\nSTAT version 1.6.21\r\n" +
		"STAT libevent 2.1.12-stable\r\nSTAT curr_items 17\r\nSTAT get_hits 90\r\nSTAT get_misses 10\r\n" +
		"STAT cmd_flush 2\r\nSTAT rusage_user 0.123456\r\nEND\r\n"
	f := startFakeMemcached(t, func(string) string { return reply })
	got, err := NewProber(ProberOptions{}).Stats(context.Background(), f.addr)
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	want := Stats{PID: 4242, Uptime: time.Hour, CurrItems: 17, GetHits: 90, GetMisses: 10, CmdFlush: 2}
	if got != want {
		t.Errorf("Stats = %+v, want %+v", got, want)
	}
	if cmds := f.received(); len(cmds) != 1 || cmds[0] != "stats\r\n" {
		t.Errorf("the server received %q, want one \"stats\\r\\n\"", cmds)
	}
}

func TestProberFlushSendsFlushAll(t *testing.T) {
	f := startFakeMemcached(t, func(string) string { return "OK\r\n" })
	if err := NewProber(ProberOptions{}).Flush(context.Background(), f.addr); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if cmds := f.received(); len(cmds) != 1 || cmds[0] != "flush_all\r\n" {
		t.Errorf("the server received %q, want one \"flush_all\\r\\n\"", cmds)
	}
}

func TestProberUnexpectedReplies(t *testing.T) {
	tests := []struct {
		name  string
		reply string
		flush bool // call Flush instead of Stats
	}{
		{name: "garbage", reply: "HELLO WORLD\r\n"},
		{name: "protocol error", reply: "ERROR\r\n"},
		{name: "bad number", reply: "STAT pid 12x\r\nSTAT uptime 5\r\nEND\r\n"},
		{name: "negative counter", reply: "STAT pid 1\r\nSTAT uptime 5\r\nSTAT get_hits -3\r\nEND\r\n"},
		{name: "stat without value", reply: "STAT pid\r\nEND\r\n"},
		{name: "no pid", reply: "STAT uptime 5\r\nEND\r\n"},
		{name: "no uptime", reply: "STAT pid 5\r\nEND\r\n"},
		{name: "empty stats", reply: "END\r\n"},
		{name: "bare newline", reply: "STAT pid 1\nSTAT uptime 5\nEND\n"},
		{name: "line too long", reply: "STAT x " + strings.Repeat("y", 10000) + "\r\nEND\r\n"},
		{name: "endless stats", reply: strings.Repeat("STAT pid 1\r\n", 2*maxStatsLines) + "END\r\n"},
		{name: "flush refused", reply: "ERROR\r\n", flush: true},
		{name: "flush server error", reply: "SERVER_ERROR out of memory\r\n", flush: true},
		{name: "flush answered with stats", reply: "STAT pid 1\r\nEND\r\n", flush: true},
	}
	p := NewProber(ProberOptions{Timeout: 2 * time.Second})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := startFakeMemcached(t, func(string) string { return tt.reply })
			var err error
			if tt.flush {
				err = p.Flush(context.Background(), f.addr)
			} else {
				var st Stats
				st, err = p.Stats(context.Background(), f.addr)
				if err == nil {
					t.Fatalf("Stats = %+v, want an error", st)
				}
			}
			if !errors.Is(err, ErrUnexpectedReply) {
				t.Fatalf("error %v does not wrap ErrUnexpectedReply", err)
			}
			if !strings.Contains(err.Error(), f.addr) {
				t.Errorf("error %q does not name the address %s", err, f.addr)
			}
		})
	}
}

func TestProberClosedConnection(t *testing.T) {
	f := startFakeMemcached(t, func(string) string { return "" })
	_, err := NewProber(ProberOptions{}).Stats(context.Background(), f.addr)
	if err == nil || errors.Is(err, ErrUnexpectedReply) {
		t.Fatalf("Stats from a server that closes at once: %v, want an I/O error", err)
	}
	if !errors.Is(err, io.EOF) {
		t.Errorf("error %v does not wrap io.EOF", err)
	}
}

// silentServer accepts connections and never answers.
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listening: %v", err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	})
	return ln.Addr().String()
}

func TestProberDeadlines(t *testing.T) {
	addr := silentServer(t)
	tests := []struct {
		name       string
		timeout    time.Duration
		ctxTimeout time.Duration // 0: none
		cancelAt   time.Duration // 0: never
		wantWithin time.Duration
		wantErr    error // nil: a timeout
	}{
		{name: "prober timeout", timeout: 150 * time.Millisecond, wantWithin: 150 * time.Millisecond},
		{name: "earlier context deadline wins", timeout: 10 * time.Second, ctxTimeout: 100 * time.Millisecond, wantWithin: 100 * time.Millisecond},
		{name: "later context deadline loses", timeout: 100 * time.Millisecond, ctxTimeout: 10 * time.Second, wantWithin: 100 * time.Millisecond},
		{name: "cancelled context", timeout: 10 * time.Second, cancelAt: 100 * time.Millisecond, wantWithin: 100 * time.Millisecond, wantErr: context.Canceled},
	}
	calls := []struct {
		name string
		do   func(context.Context, *Prober) error
	}{
		{"Stats", func(ctx context.Context, p *Prober) error { _, err := p.Stats(ctx, addr); return err }},
		{"Flush", func(ctx context.Context, p *Prober) error { return p.Flush(ctx, addr) }},
	}
	for _, tt := range tests {
		for _, call := range calls {
			t.Run(tt.name+"/"+call.name, func(t *testing.T) {
				ctx := t.Context()
				if tt.ctxTimeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.ctxTimeout)
					defer cancel()
				}
				if tt.cancelAt > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithCancel(ctx)
					timer := time.AfterFunc(tt.cancelAt, cancel)
					defer timer.Stop()
				}
				start := time.Now()
				err := call.do(ctx, NewProber(ProberOptions{Timeout: tt.timeout}))
				took := time.Since(start)
				if tt.wantErr == nil && !IsTimeout(err) {
					t.Errorf("error = %v, want a timeout", err)
				}
				if tt.wantErr != nil && (!errors.Is(err, tt.wantErr) || IsTimeout(err)) {
					t.Errorf("error = %v, want %v and no timeout", err, tt.wantErr)
				}
				if took < tt.wantWithin-10*time.Millisecond || took > tt.wantWithin+time.Second {
					t.Errorf("returned after %v, want about %v", took, tt.wantWithin)
				}
			})
		}
	}
}

// memcachedStats reads stats from the real memcached or fails the test.
func memcachedStats(t *testing.T, p *Prober, addr string) Stats {
	t.Helper()
	st, err := p.Stats(t.Context(), addr)
	if err != nil {
		t.Fatalf("Stats(%s): %v", addr, err)
	}
	return st
}

func TestProberRealMemcached(t *testing.T) {
	t.Parallel()
	mc := testenv.StartMemcached(t)
	p := NewProber(ProberOptions{})

	st := memcachedStats(t, p, mc.Addr)
	if st.PID != int64(mc.PID()) {
		t.Errorf("PID = %d, want %d", st.PID, mc.PID())
	}
	if st.Uptime <= 0 || st.Uptime > 10*time.Minute {
		t.Errorf("Uptime = %v of a memcached started just now", st.Uptime)
	}
	if st.CurrItems != 0 || st.GetHits != 0 || st.GetMisses != 0 || st.CmdFlush != 0 {
		t.Errorf("fresh memcached: %+v, want zero counters", st)
	}

	client := memcache.New(mc.Addr)
	for _, key := range []string{"k1", "k2", "k3"} {
		if err := client.Set(&memcache.Item{Key: key, Value: []byte("v-" + key)}); err != nil {
			t.Fatalf("setting %s: %v", key, err)
		}
	}
	for _, key := range []string{"k1", "k2", "k3", "k1"} {
		if _, err := client.Get(key); err != nil {
			t.Fatalf("getting %s: %v", key, err)
		}
	}
	for _, key := range []string{"nope-1", "nope-2"} {
		if _, err := client.Get(key); !errors.Is(err, memcache.ErrCacheMiss) {
			t.Fatalf("getting %s: %v, want a miss", key, err)
		}
	}
	st = memcachedStats(t, p, mc.Addr)
	if st.CurrItems != 3 || st.GetHits != 4 || st.GetMisses != 2 {
		t.Errorf("after 3 sets, 4 hits, 2 misses: %+v", st)
	}

	if err := p.Flush(t.Context(), mc.Addr); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	after := memcachedStats(t, p, mc.Addr)
	if after.CmdFlush != st.CmdFlush+1 {
		t.Errorf("cmd_flush after Flush = %d, want %d", after.CmdFlush, st.CmdFlush+1)
	}
	for _, key := range []string{"k1", "k2", "k3"} {
		if it, err := client.Get(key); !errors.Is(err, memcache.ErrCacheMiss) {
			t.Errorf("getting %s after Flush: %v, %v; want a miss", key, it, err)
		}
	}
	if after.PID != st.PID || after.Uptime < st.Uptime {
		t.Errorf("Flush looks like a restart: before %+v, after %+v", st, after)
	}
}

func TestProberPausedMemcachedTimesOut(t *testing.T) {
	t.Parallel()
	mc := testenv.StartMemcached(t)
	const timeout = 300 * time.Millisecond
	p := NewProber(ProberOptions{Timeout: timeout})
	memcachedStats(t, p, mc.Addr)

	mc.Pause(t)
	resumed := false
	defer func() {
		if !resumed {
			mc.Resume(t)
		}
	}()
	start := time.Now()
	_, err := p.Stats(t.Context(), mc.Addr)
	took := time.Since(start)
	if err == nil {
		t.Fatal("Stats of a paused memcached succeeded")
	}
	if !IsTimeout(err) {
		t.Errorf("Stats error %v is not a timeout", err)
	}
	if took > timeout+500*time.Millisecond {
		t.Errorf("Stats of a paused memcached took %v, want at most %v + slack", took, timeout)
	}
	start = time.Now()
	if err := p.Flush(t.Context(), mc.Addr); !IsTimeout(err) {
		t.Errorf("Flush of a paused memcached: %v, want a timeout", err)
	}
	if took := time.Since(start); took > timeout+500*time.Millisecond {
		t.Errorf("Flush of a paused memcached took %v", took)
	}

	mc.Resume(t)
	resumed = true
	testenv.Eventually(t, 5*time.Second, "the resumed memcached to answer stats", func() bool {
		_, err := p.Stats(t.Context(), mc.Addr)
		return err == nil
	})
}

func TestProberKilledMemcached(t *testing.T) {
	t.Parallel()
	mc := testenv.StartMemcached(t)
	p := NewProber(ProberOptions{Timeout: 2 * time.Second})
	before := memcachedStats(t, p, mc.Addr)

	mc.Kill(t)
	start := time.Now()
	_, err := p.Stats(t.Context(), mc.Addr)
	if err == nil {
		t.Fatal("Stats of a killed memcached succeeded")
	}
	if !strings.Contains(err.Error(), "reading stats of "+mc.Addr) {
		t.Errorf("error %q does not say what failed", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("Stats of a killed memcached took %v; a refused connection should fail at once", took)
	}
	if err := p.Flush(t.Context(), mc.Addr); err == nil {
		t.Error("Flush of a killed memcached succeeded")
	}

	mc.Start(t)
	after := memcachedStats(t, p, mc.Addr)
	if after.PID == before.PID {
		t.Errorf("restarted memcached reports the old pid %d", after.PID)
	}
	if after.PID != int64(mc.PID()) {
		t.Errorf("PID = %d, want %d", after.PID, mc.PID())
	}
}
