package warmcopy

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strconv"
	"sync/atomic"
	"time"
)

// bufSize is the size of a connection's read and write buffers: large
// enough for a batch of small values in one write, and over maxLine.
const bufSize = 64 << 10

// node is one memcached as a copy uses it: the commands of the text
// protocol it sends, each answered before the next. conn is the real one;
// tests use fakes.
type node interface {
	// serverTime returns the node's clock (stats time), Unix seconds.
	serverTime() (int64, error)
	// metadump lists the node's items (`lru_crawler metadump <mode>`,
	// mode hash or all), calling fn for each; ctx ending stops it.
	metadump(ctx context.Context, mode string, fn func(Entry)) error
	// gets returns the values of keys found (one `gets` of them all), in
	// the order asked; values over maxValue bytes are skipped over.
	gets(keys []string, maxValue int) ([]item, error)
	// store sends one storage command (verb: add or set) for each of reqs
	// at once, all written within the given time, and returns each one's
	// outcome, unanswered from the first that failed.
	store(verb string, reqs []storeReq, within time.Duration) ([]outcome, error)
	// close closes the connection.
	close() error
}

// storeReq is one add or set: the key, flags, relative expiry in seconds
// and value.
type storeReq struct {
	key   string
	flags uint32
	exp   int64
	value []byte
}

// conn is a connection to a real memcached speaking its text protocol.
// Every command is answered within timeout (a metadump: each line within
// it); after any error but a SERVER_ERROR the connection is no longer
// used. It is not safe for concurrent use.
type conn struct {
	nc      net.Conn
	r       *bufio.Reader
	w       *bufio.Writer
	timeout time.Duration
}

var _ node = (*conn)(nil)

// dialNode connects to the memcached at addr with dial, within timeout.
func dialNode(ctx context.Context, dial func(ctx context.Context, network, addr string) (net.Conn, error), addr string, timeout time.Duration) (*conn, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	nc, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return &conn{nc: nc, r: bufio.NewReaderSize(nc, bufSize), w: bufio.NewWriterSize(nc, bufSize), timeout: timeout}, nil
}

func (c *conn) close() error { return c.nc.Close() }

// send writes the buffered command and sets the deadline of its answer.
func (c *conn) send() error {
	c.nc.SetDeadline(time.Now().Add(c.timeout))
	return c.w.Flush()
}

func (c *conn) serverTime() (int64, error) {
	c.w.WriteString("stats\r\n")
	if err := c.send(); err != nil {
		return 0, err
	}
	return readStatsTime(c.r)
}

func (c *conn) metadump(ctx context.Context, mode string, fn func(Entry)) error {
	c.w.WriteString("lru_crawler metadump " + mode + "\r\n")
	if err := c.send(); err != nil {
		return err
	}
	// A dump is long: each line gets the whole timeout, and ctx ending
	// cuts the read short (the connection is closed after it anyway).
	var cut atomic.Bool
	stop := context.AfterFunc(ctx, func() {
		cut.Store(true)
		c.nc.SetReadDeadline(time.Unix(1, 0))
	})
	defer stop()
	err := readMetadump(c.r, func(e Entry) {
		fn(e)
		c.nc.SetReadDeadline(time.Now().Add(c.timeout))
		if cut.Load() { // ctx ended while the deadline moved: cut it again
			c.nc.SetReadDeadline(time.Unix(1, 0))
		}
	})
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

func (c *conn) gets(keys []string, maxValue int) ([]item, error) {
	c.w.WriteString("gets")
	for _, k := range keys {
		c.w.WriteByte(' ')
		c.w.WriteString(k)
	}
	c.w.WriteString("\r\n")
	if err := c.send(); err != nil {
		return nil, err
	}
	return readValues(c.r, keys, maxValue)
}

func (c *conn) store(verb string, reqs []storeReq, within time.Duration) ([]outcome, error) {
	out := make([]outcome, len(reqs))
	// The commands must be on the wire within the time given: the write
	// deadline is its end.
	c.nc.SetWriteDeadline(time.Now().Add(within))
	var num [20]byte
	for _, q := range reqs {
		c.w.WriteString(verb)
		c.w.WriteByte(' ')
		c.w.WriteString(q.key)
		c.w.WriteByte(' ')
		c.w.Write(strconv.AppendUint(num[:0], uint64(q.flags), 10))
		c.w.WriteByte(' ')
		c.w.Write(strconv.AppendInt(num[:0], q.exp, 10))
		c.w.WriteByte(' ')
		c.w.Write(strconv.AppendInt(num[:0], int64(len(q.value)), 10))
		c.w.WriteString("\r\n")
		c.w.Write(q.value)
		if _, err := c.w.WriteString("\r\n"); err != nil {
			return out, err
		}
	}
	if err := c.w.Flush(); err != nil {
		return out, err
	}
	c.nc.SetDeadline(time.Now().Add(c.timeout))
	for i := range reqs {
		o, err := readStored(c.r)
		out[i] = o
		// A refusal (SERVER_ERROR) is an outcome: the connection is fine.
		if err != nil && !errors.Is(err, ErrServer) {
			return out, err
		}
	}
	return out, nil
}
