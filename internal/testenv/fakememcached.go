package testenv

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcrib/mcrib/clock"
)

// firstFakePID is the process ID the first fake node reports; every node,
// and every Restart, gets the next one.
const firstFakePID = 100000

// FakeMemcachedOptions configures StartFakeMemcached. The zero value serves
// one node on 127.0.0.1 with the real clock.
type FakeMemcachedOptions struct {
	// Nodes is how many fake nodes to serve; 0 means 1.
	Nodes int
	// IP is the address every node listens on, each on a port of its own
	// that the kernel picks; "" means 127.0.0.1.
	IP string
	// Clock gives the nodes' uptime and time; nil means clock.Real.
	Clock clock.Clock
}

// FakeMemcached is a set of fake memcached nodes served by the test binary
// itself, one TCP listener per node, for tests and benchmarks that need
// more nodes than real memcached processes can give (a probe round over
// 2,000 nodes). Each node speaks enough of the text protocol for
// cachenodes.Prober: stats, flush_all, version and quit; see FakeNode.
//
// The zero value is not usable; use StartFakeMemcached. It is safe for
// concurrent use.
type FakeMemcached struct {
	// Nodes are the fake nodes, in order of creation.
	Nodes []*FakeNode

	pids atomic.Int64 // the last process ID handed out
	wg   sync.WaitGroup
}

// StartFakeMemcached starts the nodes opts asks for and returns once they
// all listen. When the test ends it closes their listeners and connections
// and waits for their goroutines, and fails the test if a listener stopped
// accepting on its own (for example for want of file descriptors).
func StartFakeMemcached(t testing.TB, opts FakeMemcachedOptions) *FakeMemcached {
	t.Helper()
	n := max(opts.Nodes, 1)
	ip := opts.IP
	if ip == "" {
		ip = "127.0.0.1"
	}
	clk := clock.Or(opts.Clock)
	f := &FakeMemcached{Nodes: make([]*FakeNode, 0, n)}
	f.pids.Store(firstFakePID - 1)
	t.Cleanup(func() {
		if err := f.close(); err != nil {
			t.Errorf("testenv: fake memcached: %v", err)
		}
	})
	for range n {
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			t.Fatalf("testenv: listening for fake memcached node %d of %d on %s: %v", len(f.Nodes)+1, n, ip, err)
		}
		node := newFakeNode(ln, clk, &f.pids, &f.wg)
		f.Nodes = append(f.Nodes, node)
		f.wg.Go(node.serve)
	}
	return f
}

// Addrs returns the nodes' addresses, "ip:port", in the order of Nodes.
func (f *FakeMemcached) Addrs() []string {
	addrs := make([]string, len(f.Nodes))
	for i, n := range f.Nodes {
		addrs[i] = n.Addr
	}
	return addrs
}

// close stops every node and waits for all their goroutines; it returns
// the errors that made a listener stop on its own.
func (f *FakeMemcached) close() error {
	for _, n := range f.Nodes {
		n.close()
	}
	f.wg.Wait()
	var errs []error
	for _, n := range f.Nodes {
		errs = append(errs, n.acceptError())
	}
	return errors.Join(errs...)
}
