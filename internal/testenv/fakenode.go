package testenv

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcrib/mcrib/clock"
)

// fakeVersion is the version a fake node reports.
const fakeVersion = "1.6.21-mcrib-fake"

// fakeMaxLine bounds a command line; a longer one ends the connection.
const fakeMaxLine = 4096

// FakeMode is how a FakeNode treats connections.
type FakeMode int32

const (
	// FakeServing answers every command: the default.
	FakeServing FakeMode = iota
	// FakeSilent accepts connections and reads commands but never answers,
	// like a paused (SIGSTOP) memcached or a black-holed host: a probe
	// ends in its own timeout. Connections stay open until the client
	// closes them. Commands read while silent are dropped for good.
	FakeSilent
	// FakeResetting resets every connection (RST) as soon as it is accepted
	// or sends a command: a probe fails at once, as against a host whose
	// memcached died.
	FakeResetting
)

// FakeCounters are the counters a FakeNode reports in stats.
type FakeCounters struct {
	CurrItems uint64
	GetHits   uint64
	GetMisses uint64
	CmdFlush  uint64
}

// FakeNode is one fake memcached of a FakeMemcached, listening on Addr. It
// answers "stats" (pid, uptime, time, version, curr_connections,
// total_connections, curr_items, get_hits, get_misses, cmd_flush),
// "flush_all [delay] [noreply]" (counts the flush and empties the node),
// "version" and "quit", and "ERROR" to anything else. Connections stay
// open across commands, as with memcached.
//
// The zero value is not usable; StartFakeMemcached makes nodes. Methods
// are safe for concurrent use.
type FakeNode struct {
	// Addr is the node's address, "ip:port".
	Addr string

	ln       net.Listener
	clock    clock.Clock
	pids     *atomic.Int64
	wg       *sync.WaitGroup
	mode     atomic.Int32 // a FakeMode
	accepted atomic.Uint64

	mu        sync.Mutex
	pid       int64
	started   time.Time
	counters  FakeCounters
	conns     map[net.Conn]struct{}
	closed    bool
	acceptErr error
}

func newFakeNode(ln net.Listener, clk clock.Clock, pids *atomic.Int64, wg *sync.WaitGroup) *FakeNode {
	return &FakeNode{
		Addr:    ln.Addr().String(),
		ln:      ln,
		clock:   clk,
		pids:    pids,
		wg:      wg,
		pid:     pids.Add(1),
		started: clk.Now(),
		conns:   make(map[net.Conn]struct{}),
	}
}

// SetMode sets how the node treats connections from now on, open ones
// included.
func (n *FakeNode) SetMode(m FakeMode) { n.mode.Store(int32(m)) }

// Mode returns the node's mode.
func (n *FakeNode) Mode() FakeMode { return FakeMode(n.mode.Load()) }

// Connections returns how many connections the node has accepted, in
// every mode.
func (n *FakeNode) Connections() uint64 { return n.accepted.Load() }

// PID returns the process ID the node reports.
func (n *FakeNode) PID() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.pid
}

// Counters returns the node's counters.
func (n *FakeNode) Counters() FakeCounters {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.counters
}

// SetCounters replaces the node's counters.
func (n *FakeNode) SetCounters(c FakeCounters) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.counters = c
}

// AddGets adds hits and misses to the node's get counters, as traffic would.
func (n *FakeNode) AddGets(hits, misses uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.counters.GetHits += hits
	n.counters.GetMisses += misses
}

// Restart makes the node look like a memcached that restarted: a new pid,
// uptime counted from now, zero counters. Open connections stay open.
func (n *FakeNode) Restart() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.pid = n.pids.Add(1)
	n.started = n.clock.Now()
	n.counters = FakeCounters{}
}

// serve accepts connections until the listener is closed.
func (n *FakeNode) serve() {
	for {
		conn, err := n.ln.Accept()
		if err != nil {
			n.mu.Lock()
			if !n.closed {
				n.acceptErr = fmt.Errorf("node %s stopped accepting: %w", n.Addr, err)
			}
			n.mu.Unlock()
			return
		}
		n.accepted.Add(1)
		if n.Mode() == FakeResetting {
			reset(conn)
			continue
		}
		n.mu.Lock()
		if n.closed {
			n.mu.Unlock()
			conn.Close()
			return
		}
		n.conns[conn] = struct{}{}
		n.mu.Unlock()
		n.wg.Go(func() { n.handle(conn) })
	}
}

// handle reads commands from conn and answers them as the mode says, until
// the client leaves or the node closes.
func (n *FakeNode) handle(conn net.Conn) {
	defer func() {
		n.mu.Lock()
		delete(n.conns, conn)
		n.mu.Unlock()
		conn.Close()
	}()
	r := bufio.NewReaderSize(conn, fakeMaxLine)
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return // the client left, the node closed, or a line too long
		}
		cmd := strings.Fields(string(bytes.TrimRight(line, "\r\n")))
		switch n.Mode() {
		case FakeSilent:
			continue
		case FakeResetting:
			reset(conn)
			return
		}
		reply, quit := n.answer(cmd)
		if quit {
			return
		}
		if reply != "" {
			if _, err := conn.Write([]byte(reply)); err != nil {
				return
			}
		}
	}
}

// answer returns the reply to cmd ("" for none), and whether the client
// asked to quit.
func (n *FakeNode) answer(cmd []string) (reply string, quit bool) {
	if len(cmd) == 0 {
		return "ERROR\r\n", false
	}
	switch {
	case cmd[0] == "stats" && len(cmd) == 1:
		return n.stats(), false
	case cmd[0] == "flush_all":
		n.mu.Lock()
		n.counters.CmdFlush++
		n.counters.CurrItems = 0
		n.mu.Unlock()
		if cmd[len(cmd)-1] == "noreply" {
			return "", false
		}
		return "OK\r\n", false
	case cmd[0] == "version":
		return "VERSION " + fakeVersion + "\r\n", false
	case cmd[0] == "quit":
		return "", true
	}
	return "ERROR\r\n", false
}

// stats returns the reply to "stats".
func (n *FakeNode) stats() string {
	now := n.clock.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	uptime := max(now.Sub(n.started)/time.Second, 0)
	var b strings.Builder
	stat := func(name string, value any) { fmt.Fprintf(&b, "STAT %s %v\r\n", name, value) }
	stat("pid", n.pid)
	stat("uptime", int64(uptime))
	stat("time", now.Unix())
	stat("version", fakeVersion)
	stat("curr_connections", len(n.conns))
	stat("total_connections", n.accepted.Load())
	stat("curr_items", n.counters.CurrItems)
	stat("get_hits", n.counters.GetHits)
	stat("get_misses", n.counters.GetMisses)
	stat("cmd_flush", n.counters.CmdFlush)
	b.WriteString("END\r\n")
	return b.String()
}

// close closes the listener and every open connection.
func (n *FakeNode) close() {
	n.mu.Lock()
	n.closed = true
	conns := make([]net.Conn, 0, len(n.conns))
	for c := range n.conns {
		conns = append(conns, c)
	}
	n.mu.Unlock()
	n.ln.Close()
	for _, c := range conns {
		c.Close()
	}
}

// acceptError returns why the listener stopped before close, if it did.
func (n *FakeNode) acceptError() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.acceptErr
}

// reset closes conn with an RST instead of a FIN.
func reset(conn net.Conn) {
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}
