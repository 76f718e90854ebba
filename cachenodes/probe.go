package cachenodes

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"
)

// DefaultProbeTimeout is the default ProberOptions.Timeout.
const DefaultProbeTimeout = time.Second

// maxStatsLines bounds how many lines Stats reads before it gives up on a
// reply that never ends; memcached sends fewer than 100.
const maxStatsLines = 1000

// ErrUnexpectedReply is wrapped by Prober errors when memcached (or
// whatever listens at the address) answers something the protocol does not
// allow at that point.
var ErrUnexpectedReply = errors.New("cachenodes: unexpected reply from memcached")

// Stats is the part of memcached's "stats" reply mcrib uses. PID and Uptime
// tell a restarted memcached (new pid, or uptime reset) from one that kept
// running; the counters give the hit rate and count flushes.
type Stats struct {
	PID       int64
	Uptime    time.Duration
	CurrItems uint64
	GetHits   uint64
	GetMisses uint64
	CmdFlush  uint64
}

// ProberOptions configures a Prober. The zero value gives the defaults.
type ProberOptions struct {
	// Timeout bounds one call, dial included; default DefaultProbeTimeout
	// (1s). A context deadline that comes sooner wins.
	Timeout time.Duration
	// Dialer dials the TCP connections; nil uses a zero net.Dialer.
	Dialer *net.Dialer
}

// Prober talks to memcached over the text protocol, opening one new TCP
// connection per call so that every call is a real reachability check. Build
// it with NewProber; the zero value is not usable. A Prober is safe for
// concurrent use.
type Prober struct {
	timeout time.Duration
	dialer  *net.Dialer
}

// NewProber returns a Prober with opts' settings; zero or negative Timeout
// and a nil Dialer get the defaults.
func NewProber(opts ProberOptions) *Prober {
	p := &Prober{timeout: opts.Timeout, dialer: opts.Dialer}
	if p.timeout <= 0 {
		p.timeout = DefaultProbeTimeout
	}
	if p.dialer == nil {
		p.dialer = &net.Dialer{}
	}
	return p
}

// Stats sends "stats" to the memcached at addr and parses the STAT lines up
// to END. A memcached that accepts the connection but never answers (paused)
// yields a timeout error once the call's deadline passes: a net.Error whose
// Timeout method reports true (see IsTimeout).
func (p *Prober) Stats(ctx context.Context, addr string) (Stats, error) {
	var st Stats
	err := p.roundTrip(ctx, addr, "stats\r\n", func(r *bufio.Reader) error {
		var err error
		st, err = readStats(r)
		return err
	})
	if err != nil {
		return Stats{}, fmt.Errorf("reading stats of %s: %w", addr, err)
	}
	return st, nil
}

// Flush sends "flush_all" to the memcached at addr and expects "OK": every
// item it holds becomes unreachable.
func (p *Prober) Flush(ctx context.Context, addr string) error {
	err := p.roundTrip(ctx, addr, "flush_all\r\n", func(r *bufio.Reader) error {
		line, err := readLine(r)
		if err != nil {
			return err
		}
		if string(line) != "OK" {
			return fmt.Errorf("%w: %q to flush_all", ErrUnexpectedReply, line)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("flushing %s: %w", addr, err)
	}
	return nil
}

// roundTrip dials addr, writes cmd and lets read parse the reply, all before
// the earlier of ctx's deadline and now+Timeout. Cancelling ctx interrupts
// the call at once.
func (p *Prober) roundTrip(ctx context.Context, addr, cmd string, read func(*bufio.Reader) error) error {
	deadline := time.Now().Add(p.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	conn, err := p.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(deadline); err != nil {
		return err
	}
	// Unblock reads and writes at once when ctx is cancelled early.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := conn.Write([]byte(cmd)); err != nil {
		return interrupted(ctx, err)
	}
	if err := read(bufio.NewReader(conn)); err != nil {
		return interrupted(ctx, err)
	}
	return nil
}

// IsTimeout reports whether err, from a Prober, means the call's deadline
// passed before memcached answered: it accepted nothing in time, or accepted
// the connection and kept silent (a paused or overloaded process).
func IsTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// interrupted returns err, or, when the cancellation of ctx cut the
// connection short, an error wrapping the cause of that instead: the net
// error then only says "i/o timeout", and the call did not time out.
func interrupted(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return fmt.Errorf("%w (%v)", context.Cause(ctx), err)
	}
	return err
}

// readLine reads one CRLF-terminated line without its terminator. A line
// longer than the reader's buffer is an unexpected reply.
func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return nil, fmt.Errorf("%w: a line longer than %d bytes", ErrUnexpectedReply, r.Size())
	}
	if err != nil {
		return nil, err
	}
	line, ok := bytes.CutSuffix(line, []byte("\r\n"))
	if !ok {
		return nil, fmt.Errorf("%w: line %q does not end in CRLF", ErrUnexpectedReply, line)
	}
	return line, nil
}

// readStats parses "STAT <name> <value>" lines up to "END". It needs pid and
// uptime; the counters it does not find stay zero.
func readStats(r *bufio.Reader) (Stats, error) {
	var st Stats
	var sawPID, sawUptime bool
	for range maxStatsLines {
		line, err := readLine(r)
		if err != nil {
			return Stats{}, err
		}
		if string(line) == "END" {
			if !sawPID || !sawUptime {
				return Stats{}, fmt.Errorf("%w: stats without pid or uptime", ErrUnexpectedReply)
			}
			return st, nil
		}
		fields := bytes.Fields(line)
		if len(fields) < 3 || string(fields[0]) != "STAT" {
			return Stats{}, fmt.Errorf("%w: %q in stats", ErrUnexpectedReply, line)
		}
		name, value := string(fields[1]), string(fields[2])
		var perr error
		switch name {
		case "pid":
			st.PID, perr = strconv.ParseInt(value, 10, 64)
			sawPID = true
		case "uptime":
			var secs uint64
			secs, perr = strconv.ParseUint(value, 10, 32) // rel_time_t
			st.Uptime = time.Duration(secs) * time.Second
			sawUptime = true
		case "curr_items":
			st.CurrItems, perr = strconv.ParseUint(value, 10, 64)
		case "get_hits":
			st.GetHits, perr = strconv.ParseUint(value, 10, 64)
		case "get_misses":
			st.GetMisses, perr = strconv.ParseUint(value, 10, 64)
		case "cmd_flush":
			st.CmdFlush, perr = strconv.ParseUint(value, 10, 64)
		}
		if perr != nil {
			return Stats{}, fmt.Errorf("%w: stat %s: %v", ErrUnexpectedReply, name, perr)
		}
	}
	return Stats{}, fmt.Errorf("%w: stats longer than %d lines", ErrUnexpectedReply, maxStatsLines)
}
